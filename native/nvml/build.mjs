#!/usr/bin/env node
// Builds the optional NVML telemetry addon (build/Release/xtts_nvml.node) with node-gyp.
// Run by the root package's postinstall and by `npm run build:native`. The addon is optional: a
// failed build prints one line, writes its output to build-error.log (which the loader quotes when
// it explains why GPU telemetry falls back to nvidia-smi) and exits 0, so `npm ci` never fails on it.
//   --strict  exit non-zero when the build fails (tests, CI that wants the addon)
//   --force   rebuild even when the addon is newer than its sources
// XTTS_SKIP_NATIVE=1 skips the build.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'build', 'Release', 'xtts_nvml.node');
const errorLog = join(here, 'build-error.log');
const strict = process.argv.includes('--strict');
const force = process.argv.includes('--force');

function fail(reason, output = '') {
  writeFileSync(errorLog, `${new Date().toISOString()} ${reason}\n\n${output}`);
  console.warn(`xtts: the optional NVML addon was not built (${reason}); GPU telemetry will use nvidia-smi. Details: ${errorLog}`);
  process.exit(strict ? 1 : 0);
}

if (process.env.XTTS_SKIP_NATIVE === '1') {
  console.log('xtts: XTTS_SKIP_NATIVE=1, not building the NVML addon');
  process.exit(0);
}
if (process.platform !== 'linux') {
  // libnvidia-ml.so.1 and dlopen: the addon is written for Linux hosts.
  fail(`the NVML addon is built on Linux only (this is ${process.platform})`);
}

const sources = [join(here, 'binding.gyp'), ...readdirSync(join(here, 'src')).map((f) => join(here, 'src', f))];
if (!force && existsSync(out) && sources.every((f) => statSync(f).mtimeMs <= statSync(out).mtimeMs)) {
  console.log(`xtts: NVML addon up to date (${out})`);
  process.exit(0);
}

/** node-gyp: a local install, the one npm passes to lifecycle scripts, or the one npm bundles. */
function findNodeGyp() {
  const candidates = [];
  try {
    candidates.push(createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js'));
  } catch {}
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  const prefix = dirname(dirname(process.execPath));
  candidates.push(join(prefix, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  candidates.push(join(dirname(process.execPath), 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  return candidates.find((c) => existsSync(c));
}

/** Node's own headers beside the binary (distribution packages and official tarballs ship them), so
 * that node-gyp does not need to download them. */
function findNodeDir() {
  if (process.env.npm_config_nodedir && existsSync(join(process.env.npm_config_nodedir, 'include', 'node', 'node_api.h'))) return process.env.npm_config_nodedir;
  const prefix = dirname(dirname(process.execPath));
  return existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : undefined;
}

const gyp = findNodeGyp();
if (!gyp) fail('node-gyp was not found (neither installed locally nor bundled with npm)');
try {
  createRequire(import.meta.url).resolve('node-addon-api');
} catch {
  fail('node-addon-api is not installed (it is a devDependency of the root package)');
}
const nodedir = findNodeDir();
const args = [gyp, 'rebuild', ...(nodedir ? [`--nodedir=${nodedir}`] : [])];
const t0 = Date.now();
const r = spawnSync(process.execPath, args, { cwd: here, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
const output = `${r.stdout ?? ''}${r.stderr ?? ''}`;
if (r.error) fail(`node-gyp could not run: ${r.error.message}`, output);
if (r.status !== 0 || !existsSync(out)) {
  const firstError = output.split('\n').find((l) => /error|not found|No such file/i.test(l) && !/^gyp info/.test(l));
  fail(`node-gyp rebuild exited ${r.status}${firstError ? `: ${firstError.trim()}` : ''}`, output);
}
rmSync(errorLog, { force: true });
console.log(`xtts: built the NVML addon in ${((Date.now() - t0) / 1000).toFixed(1)} s (${out})`);
