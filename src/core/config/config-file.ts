// Reading one config file: its bytes as UTF-8 text, then the text as a YAML source with positions.
// Every problem becomes a finding with file:line:col; nothing here throws for a user mistake.
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import {
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  visit,
  type Document,
  type Node,
  type Pair,
  type Scalar,
} from 'yaml';
import { otherFileKind } from '../util/index.js';
import { type ConfigSource, joinKeyPath, type KeyPath, positionOf } from './config-source.js';
import { errorFinding, type Finding, ruleDocsLink } from './findings.js';
import { PRESETS, presetPath } from './presets.js';

/** Read a config file as UTF-8 text, or say precisely why it cannot be. */
export function readConfigText(file: string): { text?: string; findings: Finding[] } {
  const pos = { file };
  let stat;
  try {
    stat = statSync(file);
  } catch {
    const presetHint = PRESETS.includes(file as (typeof PRESETS)[number]) ? `--config ${presetPath(file)}` : undefined;
    return {
      findings: [
        errorFinding(
          'input/missing-file',
          `config file not found: ${file}`,
          pos,
          '',
          presetHint ?? `check the path, or start from a preset: ${PRESETS.map((p) => `configs/${p}.yaml`).join(', ')}`,
        ),
      ],
    };
  }
  if (stat.isDirectory()) {
    return {
      findings: [
        errorFinding(
          'input/not-a-file',
          `${file} is a folder, not a config file`,
          pos,
          '',
          'name a .yaml file inside it',
        ),
      ],
    };
  }
  // A FIFO, a socket or a device would block the read for ever, or never end.
  if (!stat.isFile()) {
    return {
      findings: [
        errorFinding(
          'input/not-a-file',
          `${file} is ${otherFileKind(stat)}, not a file`,
          pos,
          '',
          'name a .yaml file (write what a pipe would give to a file first)',
        ),
      ],
    };
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    return {
      findings: [
        errorFinding(
          'input/unreadable',
          `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`,
          pos,
          '',
          "check the file's permissions",
        ),
      ],
    };
  }
  if (bytes.length === 0 || bytes.toString('utf8').trim() === '') {
    return {
      findings: [
        errorFinding(
          'input/empty',
          `${file} is empty`,
          pos,
          '',
          'write at least `extends: quickstart` and a `dataset: {path: ...}` section',
        ),
      ],
    };
  }
  const nul = bytes.indexOf(0);
  if (nul !== -1) {
    return {
      findings: [
        errorFinding(
          'input/binary',
          `${file} is a binary file (NUL byte at offset ${nul}), not YAML`,
          { file, ...lineColOfByte(bytes, nul) },
          '',
          'name the YAML config, not a data or model file',
        ),
      ],
    };
  }
  try {
    let text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    return { text, findings: [] };
  } catch {
    const bad = firstInvalidUtf8(bytes);
    return {
      findings: [
        errorFinding(
          'input/not-utf8',
          `${file} is not valid UTF-8 (byte 0x${bytes[bad].toString(16)} at offset ${bad})`,
          { file, ...lineColOfByte(bytes, bad) },
          '',
          'save the file as UTF-8',
        ),
      ],
    };
  }
}

function lineColOfByte(bytes: Buffer, offset: number): { line: number; col: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++)
    if (bytes[i] === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  return { line, col: offset - lineStart + 1 };
}

/** Offset of the first byte that does not belong to a well-formed UTF-8 sequence (RFC 3629). */
function firstInvalidUtf8(bytes: Buffer): number {
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    const need =
      b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (need < 0) return i;
    for (let k = 1; k <= need; k++) if (i + k >= bytes.length || (bytes[i + k] & 0xc0) !== 0x80) return i;
    i += need + 1;
  }
  return bytes.length - 1;
}

/** The key path of the mapping key that starts at `offset` (for findings the parser reports by offset). */
function keyPathAt(doc: Document, offset: number): KeyPath {
  let found: KeyPath = [];
  visit(doc, {
    Pair(_key, pair, path) {
      const k = pair.key as Node | null;
      if (k && isScalar(k) && k.range && k.range[0] === offset) {
        found = [
          ...path.filter((n) => isPair(n)).map((n) => String(((n as Pair).key as Scalar).value)),
          String(k.value),
        ];
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return found;
}

/** Keys that would change an object's prototype instead of setting a value: never settings, wherever written. */
export const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Parse one YAML config file into a source; syntax errors and duplicate keys become findings. */
/** "line N: TEXT" of the last non-blank line at or above `line` (a syntax error past the end points at a blank one). */
function nearestLine(text: string, line: number): string {
  const lines = text.split(/\r?\n/);
  let i = Math.min(line, lines.length) - 1;
  while (i > 0 && lines[i].trim() === '') i--;
  return `line ${i + 1}: ${JSON.stringify(lines[Math.max(0, i)].trim())}`;
}

/** The YAML library's errors that its message does not explain to a user, by code: what to say and do instead. */
const YAML_ERRORS: Record<string, { message: string; fix: string } | undefined> = {
  MULTIPLE_DOCS: {
    message: 'a second YAML document (after `---`): a config is one document',
    fix: 'remove the `---` and what follows it, or put the second document in a file of its own',
  },
  RESOURCE_EXHAUSTION: {
    message: 'the YAML is nested too deeply (or its aliases expand too far) to read',
    fix: 'a config is a few levels deep (section: key: value): rewrite it so',
  },
};

export function parseConfigSource(
  file: string,
  text: string,
  realPath?: string,
): { source?: ConfigSource; findings: Finding[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: true, lineCounter, prettyErrors: true });
  const findings: Finding[] = [];
  for (const err of doc.errors) {
    const [start] = err.linePos ?? [];
    const dup = err.code === 'DUPLICATE_KEY';
    const ruleId = dup ? 'schema/duplicate-key' : 'yaml/syntax';
    // What the YAML library says in its own terms (an API to call, a stack), in the config's.
    const known = YAML_ERRORS[err.code];
    const message = dup
      ? `duplicate key: ${keyTextAt(text, err.pos[0])} is already set above in the same mapping`
      : (known?.message ??
        // The first line, less its own " at line L, column C:" (the finding's place says it; the code frame is cut).
        err.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, ''));
    findings.push(
      errorFinding(
        ruleId,
        message,
        { file, line: start?.line, col: start?.col },
        dup ? joinKeyPath(keyPathAt(doc, err.pos[0])) : '',
        dup
          ? 'keep one of the two entries'
          : (known?.fix ?? `check the brackets, quotes and indentation up to ${nearestLine(text, start?.line ?? 1)}`),
      ),
    );
  }
  if (findings.length) return { findings };
  if (doc.contents === null) {
    return {
      findings: [
        errorFinding(
          'input/empty',
          `${file} holds no settings (only comments or blank lines)`,
          { file },
          '',
          'write at least `extends: quickstart`',
        ),
      ],
    };
  }
  if (!isMap(doc.contents)) {
    const pos = positionOf(doc.contents, lineCounter, file);
    return {
      findings: [
        errorFinding(
          'schema/type',
          `${file} must be a mapping of sections (dataset:, audio:, …), not ` +
            `a ${isSeq(doc.contents) ? 'list' : 'single value'}`,
          pos,
        ),
      ],
    };
  }
  // A merge key (`<<: *anchor`, YAML 1.1) is not read as one: said as such, not as an unknown key named `<<`.
  visit(doc, {
    Pair(_key, pair) {
      const k = pair.key as Node | null;
      if (k && isScalar(k) && k.value === '<<')
        findings.push(
          errorFinding(
            'yaml/syntax',
            'a YAML merge key (`<<:`): configs do not merge mappings',
            positionOf(k, lineCounter, file),
            '',
            'write the keys out in the mapping (an anchor and alias of a single value, `&a` and `*a`, do work)',
          ),
        );
      return undefined;
    },
  });
  if (findings.length) return { findings };
  // Keys that would change an object's prototype instead of setting a value are never settings.
  visit(doc, {
    Pair(_key, pair, path) {
      const k = pair.key as Node | null;
      if (k && isScalar(k) && FORBIDDEN_KEYS.has(String(k.value))) {
        const parents = path.filter((n) => isPair(n)).map((n) => String(((n as Pair).key as Scalar).value));
        const where = parents.length ? `in \`${parents.join('.')}\`` : 'at the top level';
        findings.push({
          ruleId: 'schema/unknown-key',
          severity: 'error',
          message: `unknown key \`${String(k.value)}\` ${where}`,
          keyPath: joinKeyPath([...parents, String(k.value)]),
          position: positionOf(k, lineCounter, file),
          fix: 'remove it',
          docs: ruleDocsLink('schema/unknown-key'),
        });
      }
      return undefined;
    },
  });
  if (findings.length) return { findings };
  let value: Record<string, unknown>;
  try {
    value = doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  } catch (e) {
    return {
      findings: [
        errorFinding(
          'yaml/syntax',
          `${file}: ${(e as Error).message.split('\n')[0]} (YAML aliases expand to too much data)`,
          { file, line: 1, col: 1 },
          '',
          'write the values out instead of nesting aliases',
        ),
      ],
    };
  }
  return { source: { file, dir: dirname(resolve(realPath ?? file)), doc, lineCounter, value }, findings };
}

function keyTextAt(text: string, offset: number): string {
  const m = /^[^:\n]+/.exec(text.slice(offset));
  return m ? `\`${m[0].trim()}\`` : 'this key';
}
