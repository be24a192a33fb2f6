// Measures the code's shape from its syntax trees (TypeScript's parser): how long each function is,
// how long each file is, which lines pass 120 characters, and which imports reach into another
// subsystem's files instead of its index. Used by test/unit/structure.test.ts and bench/structure.bench.ts.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

export const ROOT = resolve(import.meta.dirname, '..', '..');

export interface FunctionSize {
  file: string;
  name: string;
  line: number;
  lines: number;
}

/** TypeScript sources under `dirs` (relative to the repository), build outputs and dependencies left out. */
export function sourceFiles(dirs: readonly string[], pattern = /\.(ts|mts)$/): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name === 'dist' || name === 'fixtures' || name.startsWith('.')) continue;
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (pattern.test(name) && !name.endsWith('.d.ts')) out.push(relative(ROOT, p));
    }
  };
  for (const d of dirs) walk(join(ROOT, d));
  return out.sort();
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
}

function functionName(node: ts.Node): string {
  const named = node as ts.FunctionDeclaration | ts.MethodDeclaration;
  if (named.name) return named.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText();
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  return '(anonymous)';
}

/** Every function, method, arrow function and constructor with a body, with its length in lines. */
export function functionSizes(files: readonly string[]): FunctionSize[] {
  const out: FunctionSize[] = [];
  for (const file of files) {
    const sf = parse(file);
    const visit = (node: ts.Node) => {
      const isFunction =
        ts.isFunctionDeclaration(node) ||
        ts.isMethodDeclaration(node) ||
        ts.isArrowFunction(node) ||
        ts.isFunctionExpression(node) ||
        ts.isConstructorDeclaration(node) ||
        ts.isGetAccessor(node) ||
        ts.isSetAccessor(node);
      if (isFunction && (node as ts.FunctionLikeDeclaration).body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        out.push({ file, name: functionName(node), line: start + 1, lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out.sort((a, b) => b.lines - a.lines);
}

/** Lines of each file. */
export function fileLengths(files: readonly string[]): { file: string; lines: number }[] {
  return files
    .map((file) => ({ file, lines: readFileSync(join(ROOT, file), 'utf8').split('\n').length }))
    .sort((a, b) => b.lines - a.lines);
}

/** Lines longer than `width` characters (counted as code points). */
export function longLines(files: readonly string[], width = 120): { file: string; line: number; length: number }[] {
  const out: { file: string; line: number; length: number }[] = [];
  for (const file of files) {
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((text, i) => {
        const length = [...text].length;
        if (length > width) out.push({ file, line: i + 1, length });
      });
  }
  return out;
}

/**
 * The subsystem a core source file belongs to: its first folder under src/core (`training`,
 * `backend`, …), or null for files at src/core's top (errors.ts, index.ts), which every subsystem may use.
 */
export function subsystemOf(file: string): string | null {
  const parts = file.split(sep).join('/').split('/');
  if (parts[0] !== 'src' || parts[1] !== 'core' || parts.length < 4) return null;
  return parts[2];
}

export interface DeepImport {
  /** The importing file, and the file it names (both relative to the repository). */
  from: string;
  to: string;
  line: number;
}

/**
 * Imports (and `import()` calls and re-exports) from one core subsystem into another's files other than
 * its index.ts. Type-only imports count too: they couple to the layout all the same.
 */
export function deepImports(files: readonly string[]): DeepImport[] {
  const out: DeepImport[] = [];
  for (const file of files) {
    const from = subsystemOf(file);
    if (from === null) continue;
    const sf = parse(file);
    const check = (spec: ts.Expression, node: ts.Node) => {
      if (!ts.isStringLiteral(spec) || !spec.text.startsWith('.')) return;
      const target = relative(ROOT, resolve(ROOT, dirname(file), spec.text.replace(/\.js$/, '.ts')));
      const to = subsystemOf(target);
      if (to === null || to === from) return;
      if (target.split(sep).join('/') === `src/core/${to}/index.ts`) return;
      out.push({ from: file, to: target, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1 });
    };
    const visit = (node: ts.Node) => {
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier)
        check(node.moduleSpecifier, node);
      else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0])
        check(node.arguments[0], node);
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out;
}

/**
 * Files other subsystems may import directly, and why (docs/architecture.md, "Subsystems and their
 * public API"). Everything else goes through the subsystem's index.ts.
 */
export const DEEP_IMPORT_ALLOWED: Record<string, string> = {
  // Importing it registers the model's custom gradients with TensorFlow.js: a side effect, loaded once
  // an engine is (the model's index must not load it for commands that never compute).
  'src/core/model/gradients.ts': 'registers custom gradients on import',
  // The GPU programs' ops import tfjs-core; backend/index.ts must load without it (commands that compute
  // nothing start fast), so the model and the trainer take them from here.
  'src/core/backend/programs/index.ts': 'loads tfjs-core, which backend/index.ts must not',
};
