#!/usr/bin/env node
// `npm run bundle`: the CLI as one CommonJS file plus the native and data files it loads, for GPU
// hosts with no node_modules and no network (see shared/gpu-host). Written to bundle/:
//   xtts.cjs                      every core command (oclif, explicit command list) and the workers
//   package.json                  oclif's manifest of the bundle (commands from xtts.cjs itself)
//   better_sqlite3.node           SQLite
//   dist/linux-x64/dawn.node.br   Dawn (WebGPU), brotli-compressed; unpacked beside itself on first use
//   xtts_nvml.node                NVML telemetry (when it was built)
//   tfjs-backend-wasm*.wasm       the wasm backend's binaries
//   configs/                      the presets and the quickstart dataset
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const out = join(root, 'bundle');
const require = createRequire(join(root, 'package.json'));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

// Every command of every core plugin, by oclif id (`cache/stats.js` -> `cache:stats`).
const commands = [];
for (const plugin of readdirSync(join(root, 'plugins'))) {
  const dir = join(root, 'plugins', plugin, 'dist', 'commands');
  if (!existsSync(dir)) continue;
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.js')) commands.push({ id: relative(dir, p).replace(/\.js$/, '').split(/[\\/]/).join(':'), file: p });
    }
  };
  walk(dir);
}
if (commands.length === 0) throw new Error('no built commands: run `npm run build` first');

const entry = `
import { isMainThread } from 'node:worker_threads';
import { execute } from '@oclif/core';
// Worker threads start this same file; these modules run their worker when workerData names them.
import './src/core/dist/data/producer-worker.js';
import './src/core/dist/data/feature-worker.js';
${commands.map((c, i) => `import C${i} from './${relative(root, c.file).split('\\').join('/')}';`).join('\n')}
export const COMMANDS = { ${commands.map((c, i) => `${JSON.stringify(c.id)}: C${i}`).join(', ')} };
if (isMainThread && require.main === module) {
  execute({ dir: __dirname }).catch((e) => { console.error(e); process.exitCode = 1; });
}
`;

// Runs before any bundled module: where the bundle lives, and Dawn unpacked on first use.
const banner = `
var __xtts_import_meta_url = require('url').pathToFileURL(__filename).href;
globalThis.__XTTS_BUNDLE_DIR__ = __dirname;
globalThis.__XTTS_WORKER_ENTRY__ = __filename;
globalThis.__XTTS_BUNDLED_PACKAGES__ = ${JSON.stringify(['@tensorflow/tfjs-backend-webgpu', 'webgpu', '@tensorflow/tfjs-backend-wasm', '@tensorflow/tfjs-backend-cpu'])};
(function unpackDawn() {
  var fs = require('fs'), path = require('path');
  var dawn = path.join(__dirname, 'dist', process.platform + '-' + process.arch, 'dawn.node');
  if (fs.existsSync(dawn) || !fs.existsSync(dawn + '.br')) return;
  var tmp = dawn + '.' + process.pid + '.tmp';
  fs.writeFileSync(tmp, require('zlib').brotliDecompressSync(fs.readFileSync(dawn + '.br')));
  fs.renameSync(tmp, dawn);
})();
`;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const t0 = performance.now();
await build({
  stdin: { contents: entry, resolveDir: root, sourcefile: 'xtts-bundle-entry.js', loader: 'js' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  outfile: join(out, 'xtts.cjs'),
  banner: { js: banner },
  define: { 'import.meta.url': '__xtts_import_meta_url' },
  // Optional or native: resolved at run time, or absent on purpose (their absence is explained).
  external: ['@tensorflow/tfjs-node', '@tensorflow/tfjs-node-gpu', '*.node', 'ts-node', 'typescript', 'tsx', 'esbuild', 'oclif', '@oclif/plugin-plugins', 'npm'],
  logLevel: 'warning',
  legalComments: 'none',
  minifyWhitespace: true,
});

const copy = (from, to) => {
  mkdirSync(dirname(join(out, to)), { recursive: true });
  cpSync(from, join(out, to));
};
copy(require.resolve('better-sqlite3/build/Release/better_sqlite3.node'), 'better_sqlite3.node');
const wasmDir = dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
for (const f of readdirSync(wasmDir)) if (f.endsWith('.wasm')) copy(join(wasmDir, f), f);
const dawn = join(dirname(require.resolve('webgpu')), 'dist', 'linux-x64', 'dawn.node');
mkdirSync(join(out, 'dist', 'linux-x64'), { recursive: true });
writeFileSync(join(out, 'dist', 'linux-x64', 'dawn.node.br'), brotliCompressSync(readFileSync(dawn), { params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: statSync(dawn).size } }));
const nvml = join(root, 'native', 'nvml', 'build', 'Release', 'xtts_nvml.node');
if (existsSync(nvml)) copy(nvml, 'xtts_nvml.node');
cpSync(join(root, 'configs'), join(out, 'configs'), { recursive: true });
writeFileSync(
  join(out, 'package.json'),
  JSON.stringify({ name: 'xtts', version: pkg.version, description: pkg.description, type: 'commonjs', oclif: { bin: 'xtts', dirname: 'xtts', topicSeparator: ' ', commands: { strategy: 'explicit', target: './xtts.cjs', identifier: 'COMMANDS' }, topics: { cache: { description: 'Inspect, check and clear the feature cache.' } } } }, null, 2),
);
let bytes = 0;
const sizes = [];
const walk = (d) => {
  for (const name of readdirSync(d)) {
    const p = join(d, name);
    if (statSync(p).isDirectory()) walk(p);
    else {
      bytes += statSync(p).size;
      if (!p.includes(`${join(out, 'configs')}`)) sizes.push(`${relative(out, p)} ${(statSync(p).size / 2 ** 20).toFixed(1)} MiB`);
    }
  }
};
walk(out);
console.log(`bundle/ (${commands.length} commands) in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${(bytes / 2 ** 20).toFixed(1)} MiB\n  ${sizes.join('\n  ')}`);
