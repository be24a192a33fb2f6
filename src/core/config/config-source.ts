// A config source (one YAML file, or the `--set` overrides) and where in the sources a key was written:
// every finding about a key points at the file, line and column that set it.
import { isMap, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';
import type { SourcePosition } from '../errors.js';

export type KeyPath = (string | number)[];

/** One YAML file (or the `--set` overrides) that contributed values to a config. */
export interface ConfigSource {
  /** Path as the user gave it, or `--set` for command-line overrides. */
  file: string;
  /** Folder relative paths written in this source resolve against. */
  dir: string;
  doc?: Document;
  lineCounter?: LineCounter;
  /** For `--set`: the override text per dotted key. */
  overrides?: Map<string, string>;
  value: Record<string, unknown>;
}

export function splitKeyPath(path: string): KeyPath {
  if (path === '') return [];
  return path.split('.').map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

export function joinKeyPath(path: KeyPath): string {
  return path.join('.');
}

export function positionOf(node: Node | null | undefined, lc: LineCounter, file: string): SourcePosition {
  if (!node?.range) return { file };
  const { line, col } = lc.linePos(node.range[0]);
  return { file, line, col };
}

/** The key and value nodes at `path` in a YAML document, as far down as the path exists. */
function findNodes(doc: Document, path: KeyPath): { key?: Node; value?: Node; depth: number } {
  let node: unknown = doc.contents;
  let key: Node | undefined;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === seg);
      if (!pair) return { key, value: node as Node, depth: i };
      key = pair.key as Node;
      node = pair.value;
    } else if (isSeq(node) && typeof seg === 'number' && seg < node.items.length) {
      key = node.items[seg] as Node;
      node = node.items[seg];
    } else {
      return { key, value: node as Node, depth: i };
    }
  }
  return { key, value: node as Node, depth: path.length };
}

export function locateIn(
  sources: readonly ConfigSource[],
  path: KeyPath,
  which: 'key' | 'value',
): SourcePosition | undefined {
  // The source that wrote the deepest part of the path wins; ties go to the child (earlier) source.
  let best: { pos: SourcePosition; depth: number } | undefined;
  for (const src of sources) {
    if (src.overrides) {
      for (const [k, text] of src.overrides) {
        const kp = splitKeyPath(k);
        // The override wrote the path's value when one key path is a prefix of the other (`--set a.b.c=1` made the
        // object at a.b; `--set a={b: 1}` wrote a.b).
        const n = Math.min(kp.length, path.length);
        const shared = kp.slice(0, n).every((s, i) => s === path[i]) ? path.length : 0;
        if (shared && (!best || shared > best.depth)) best = { pos: { file: `--set ${k}=${text}` }, depth: shared };
      }
      continue;
    }
    if (!src.doc || !src.lineCounter) continue;
    const { key, value, depth } = findNodes(src.doc, path);
    if (depth === 0 && path.length > 0) continue;
    if (!best || depth > best.depth) {
      const node =
        depth === path.length && which === 'key' && key ? key : depth === path.length ? value : (key ?? value);
      best = { pos: positionOf(node, src.lineCounter, src.file), depth };
    }
  }
  const firstFile = sources.find((src) => !src.overrides);
  return best?.pos ?? (firstFile ? { file: firstFile.file } : sources[0] ? { file: sources[0].file } : undefined);
}
