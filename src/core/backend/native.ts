// Native files (.node addons, .wasm binaries) come from node_modules normally, or from beside the
// self-contained bundle (`npm run bundle`), whose entry sets __XTTS_BUNDLE_DIR__ before any module
// runs. Dawn travels brotli-compressed (21 MB raw, ~5 MB compressed) and is unpacked on first use.
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';

/** The folder of the running bundle, or undefined when running from the source tree / node_modules. */
export function bundleDir(): string | undefined {
  return (globalThis as { __XTTS_BUNDLE_DIR__?: string }).__XTTS_BUNDLE_DIR__;
}

/**
 * Path of a native addon shipped beside the bundle (e.g. `better_sqlite3.node`, for better-sqlite3's
 * `nativeBinding` option), or undefined when not bundled, where the package finds its own.
 */
export function nativeBindingPath(fileName = 'better_sqlite3.node'): string | undefined {
  const dir = bundleDir();
  return dir ? join(dir, fileName) : undefined;
}

/** The file name of Dawn's compressed addon inside a bundle. */
export const DAWN_COMPRESSED_NAME = 'dawn.node.br';

/**
 * Inside a bundle, where `dawn.node` is (unpacking `dawn.node.br` on first use); undefined outside a
 * bundle, where the `webgpu` package loads its own copy. The bundle's folder may be read-only (a
 * shared mount), so the fallback is a per-user temporary folder keyed by the compressed file's size
 * and time, which a newer bundle does not collide with.
 */
export function ensureDawnBinary(): string | undefined {
  const dir = bundleDir();
  if (!dir) return undefined;
  const compressed = join(dir, DAWN_COMPRESSED_NAME);
  const beside = join(dir, 'dawn.node');
  if (existsSync(beside)) return beside;
  if (!existsSync(compressed))
    throw new Error(`the bundle has neither dawn.node nor ${DAWN_COMPRESSED_NAME} in ${dir}`);
  const st = statSync(compressed);
  const candidates = [
    beside,
    join(tmpdir(), `xtts-dawn-${process.getuid?.() ?? 'user'}-${st.size}-${Math.floor(st.mtimeMs)}`, 'dawn.node'),
  ];
  for (const target of candidates) if (existsSync(target)) return target;
  const raw = brotliDecompressSync(readFileSync(compressed));
  let lastError: unknown;
  for (const target of candidates) {
    try {
      mkdirSync(join(target, '..'), { recursive: true });
      // Written under a private name and renamed: a concurrent first run (producer and trainer
      // processes start together) never loads a half-written library.
      const partial = `${target}.${process.pid}.partial`;
      const fd = openSync(partial, 'w', 0o755);
      try {
        writeSync(fd, raw);
      } finally {
        closeSync(fd);
      }
      try {
        renameSync(partial, target);
      } catch (e) {
        unlinkSync(partial);
        if (!existsSync(target)) throw e;
      }
      return target;
    } catch (e) {
      lastError = e;
    }
  }
  throw new Error(`could not unpack ${compressed}: ${(lastError as Error).message}`);
}
