// A scratch folder under the OS temp dir for files a test writes (configs, WAVs, databases), removed
// with `remove()` (call it from `after`).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export class TempDir {
  readonly path: string;

  constructor(prefix = 'xtts-test-') {
    this.path = mkdtempSync(join(tmpdir(), prefix));
  }

  /** Absolute path of `name` inside the folder (nothing is created). */
  at(name: string): string {
    return join(this.path, name);
  }

  /** Write a file (text as UTF-8, or raw bytes), creating folders on the way; returns its absolute path. */
  write(name: string, content: string | Uint8Array): string {
    const p = this.at(name);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, content);
    return p;
  }

  /** Create a folder (and its parents); returns its absolute path. */
  mkdir(name: string): string {
    const p = this.at(name);
    mkdirSync(p, { recursive: true });
    return p;
  }

  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}

export function tempDir(prefix?: string): TempDir {
  return new TempDir(prefix);
}
