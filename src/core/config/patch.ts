// Writing a config with some keys changed, keeping the user's comments, order and formatting
// (the yaml package edits the document tree, not the text).
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { isMap, isScalar, parseDocument, type Scalar } from 'yaml';
import { writeOutputFile } from '../util/index.js';
import { splitKeyPath } from './config-source.js';
import { isPresetName } from './extends.js';

export interface ConfigChange {
  key: string;
  value: unknown;
  /** Why, written as a comment above the changed key. */
  reason?: string;
}

export function patchConfigText(text: string, changes: readonly ConfigChange[]): string {
  const doc = parseDocument(text);
  for (const c of changes) {
    const path = splitKeyPath(c.key);
    doc.setIn(path, c.value);
    if (!c.reason) continue;
    // Comments belong on the pair's key, so they print on the line above `key: value`.
    const parent = path.length > 1 ? doc.getIn(path.slice(0, -1), true) : doc.contents;
    if (!isMap(parent)) continue;
    const pair = parent.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === path[path.length - 1]);
    if (!pair) continue;
    if (!isScalar(pair.key)) pair.key = doc.createNode(pair.key) as Scalar;
    (pair.key as Scalar).commentBefore = ` xtts: ${c.reason}`;
  }
  // No padding inside flow collections: `[en]` stays `[en]`, as people write it.
  return doc.toString({ flowCollectionPadding: false });
}

/**
 * The keys whose relative paths are read from the config file's folder (load.ts: dataset.path; extends.ts: a file
 * `extends`, not a preset's name), rewritten for a copy written in another folder so that they name the same place:
 * relative where that stays inside the new folder, else absolute.
 */
function rebasePaths(text: string, fromDir: string, toDir: string): string {
  if (fromDir === toDir) return text;
  const doc = parseDocument(text);
  const rebase = (path: string[]) => {
    const v = doc.getIn(path);
    if (typeof v !== 'string' || isAbsolute(v)) return;
    if (path[0] === 'extends' && isPresetName(v)) return;
    const target = resolve(fromDir, v);
    const rel = relative(toDir, target);
    doc.setIn(path, rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? target : rel);
  };
  rebase(['extends']);
  rebase(['dataset', 'path']);
  return doc.toString({ flowCollectionPadding: false });
}

/**
 * Writes the config `file` (its `text`, as the caller read it) with `changes` applied to `out` (its relative paths
 * rebased when `out` is in another folder); `overwrite` as writeOutputFile's.
 */
export function patchConfigFile(
  config: { file: string; text: string },
  changes: readonly ConfigChange[],
  out: string,
  options: { overwrite?: boolean } = {},
): void {
  const patched = rebasePaths(
    patchConfigText(config.text, changes),
    dirname(resolve(config.file)),
    dirname(resolve(out)),
  );
  writeOutputFile(out, patched, 'the patched config (--fix-config)', options);
}
