#!/usr/bin/env node
// `npm run bundle`: the CLI as one CommonJS file plus the native and data files it loads, for GPU
// hosts with no node_modules and no network, beside the runtime folder `npm run gpu-runtime` builds. Written to
// bundle/:
//   xtts.cjs              every command of every core plugin (oclif, explicit command list) and the
//                         data workers (worker threads start this same file)
//   package.json          oclif's view of the bundle: commands from xtts.cjs, no plugins
//   backend-bench.cjs     bench/backend.bench.ts: a training step per backend (see its header)
//   matmul-bench.cjs      bench/matmul.bench.ts: a step's large matmuls per program (tfjs, tiled, f16)
//   reduce-bench.cjs      bench/reduce.bench.ts: full and column sums, tfjs's programs against xtts's
//   gather-bench.cjs      bench/gather.bench.ts: the optimizer's flat gradient, tf.concat against gather
//   dispatch-bench.cjs    bench/dispatch.bench.ts: the device's time per dispatch, dependent and reads only
//   planted-leak-bench.cjs  bench/planted-leak.bench.ts: a leak planted in a real run, profiled (issue 36)
//   subgroup-matrix-bench.cjs  bench/subgroup-matrix.bench.ts: the subgroup matrices' own rates (issue 35)
//   dawn.node.br          Dawn (WebGPU), brotli-compressed; unpacked beside itself (or in a temporary
//                         folder when the bundle's is read-only) the first time webgpu is used
//   better_sqlite3.node   SQLite
//   xtts_nvml.node        NVML telemetry, when it was built (npm run build:native)
//   tfjs-backend-wasm*.wasm   the wasm backend (the SIMD build, and the scalar one for old CPUs)
//   configs/              the presets and the quickstart dataset
// Nothing is taken from outside the repository but node_modules; the plugins must be built
// (`npm run bundle` builds first). Usage: node bundle/xtts.cjs --help
import { createHash } from 'node:crypto';
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
const t0 = performance.now();

/** Files under `dir` (recursively) whose name ends with `suffix`, relative to `dir`. */
function filesUnder(dir, suffix) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(suffix) && !f.endsWith(`.d${suffix}`))
    .sort();
}

// Every command of every plugin under plugins/, by oclif id (`cache/stats.js` -> `cache:stats`,
// typed `xtts cache stats` with the space separator). A compiled command whose source is gone (a
// stale dist file) is left out.
const commands = [];
const topics = {};
const warnings = [];
for (const plugin of readdirSync(join(root, 'plugins')).sort()) {
  const dir = join(root, 'plugins', plugin);
  if (!existsSync(join(dir, 'package.json'))) continue;
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  Object.assign(topics, manifest.oclif?.topics ?? {});
  const built = filesUnder(join(dir, 'dist', 'commands'), '.js');
  const sources = filesUnder(join(dir, 'src', 'commands'), '.ts').map((f) => f.replace(/\.ts$/, '.js'));
  if (built.length === 0 && sources.length > 0)
    warnings.push(
      `plugins/${plugin} is not built (no dist/commands): its commands are not in the bundle; run npm run build`,
    );
  for (const f of built) {
    if (sources.length > 0 && !sources.includes(f)) continue;
    commands.push({
      id: f.replace(/\.js$/, '').split(/[\\/]/).join(':'),
      file: join(dir, 'dist', 'commands', f),
      plugin,
    });
  }
}
// The bundle takes compiled code (src/core/dist, plugins/*/dist): say so when a source changed since.
const stale = [];
for (const [srcDir, distDir] of [
  [join(root, 'src', 'core'), join(root, 'src', 'core', 'dist')],
  ...readdirSync(join(root, 'plugins')).map((p) => [join(root, 'plugins', p, 'src'), join(root, 'plugins', p, 'dist')]),
]) {
  // tsc rewrites only the outputs whose text changed (a comment in a type does not), and records
  // every build in .tsbuildinfo: a source newer than that was not compiled since it changed.
  const info = join(distDir, '.tsbuildinfo');
  const builtAt = existsSync(info) ? statSync(info).mtimeMs : 0;
  for (const f of filesUnder(srcDir, '.ts')) {
    if (f.startsWith('dist') || f.includes('node_modules')) continue;
    const js = join(distDir, f.replace(/\.ts$/, '.js'));
    if (!existsSync(js) || builtAt < statSync(join(srcDir, f)).mtimeMs) stale.push(relative(root, join(srcDir, f)));
  }
}
if (stale.length)
  warnings.push(
    `${stale.length} source file(s) newer than their compiled copy ` +
      `(${stale.slice(0, 3).join(', ')}${stale.length > 3 ? ', ...' : ''}): the bundle ` +
      `has the older code; run npm run build (npm run bundle does)`,
  );
if (commands.length === 0)
  throw new Error('no built commands under plugins/*/dist/commands: run `npm run build` first');
const ids = new Set();
for (const c of commands) {
  if (ids.has(c.id)) throw new Error(`two plugins define the command "${c.id.replaceAll(':', ' ')}"`);
  ids.add(c.id);
}

const entry = `
import { isMainThread } from 'node:worker_threads';
import { execute } from '@oclif/core';
// Worker threads start this same file; these modules run their worker when workerData names them.
import './src/core/dist/data/producer-worker.js';
import './src/core/dist/data/feature-worker.js';
import './src/core/dist/training/parallel/replica-worker.js';
import './src/core/dist/training/side-worker.js';
import './src/core/dist/model/align-worker.js';
${commands.map((c, i) => `import C${i} from './${relative(root, c.file).split('\\').join('/')}';`).join('\n')}
export const COMMANDS = { ${commands.map((c, i) => `${JSON.stringify(c.id)}: C${i}`).join(', ')} };
if (isMainThread && require.main === module) {
  execute({ dir: __dirname }).catch((e) => { console.error(e); process.exitCode = 1; });
}
`;

// Packages the bundle carries inside (env/host.ts: packageInstalled), and the versions of those and of
// the other packages a diagnosis reports (`xtts diagnose-gpu-utilization` has no node_modules to read).
const BUNDLED_PACKAGES = [
  '@tensorflow/tfjs-core',
  '@tensorflow/tfjs-backend-webgpu',
  'webgpu',
  '@tensorflow/tfjs-backend-wasm',
  '@tensorflow/tfjs-backend-cpu',
];
const bundledVersions = Object.fromEntries(
  [...BUNDLED_PACKAGES, 'better-sqlite3', '@oclif/core', 'yaml', 'ajv'].map((name) => [
    name,
    JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version,
  ]),
);

// Runs before any bundled module. import.meta.url (in the ESM sources) becomes this file's URL.
const banner = `
var __xtts_import_meta_url = require('url').pathToFileURL(__filename).href;
globalThis.__XTTS_BUNDLE_DIR__ = __dirname;
globalThis.__XTTS_WORKER_ENTRY__ = __filename;
globalThis.__XTTS_BUNDLED_PACKAGES__ = ${JSON.stringify(BUNDLED_PACKAGES)};
globalThis.__XTTS_BUNDLED_VERSIONS__ = ${JSON.stringify(bundledVersions)};
`;

// The webgpu package loads dist/<platform>-<arch>/dawn.node relative to itself; in the bundle Dawn
// is unpacked on first use (src/core/backend/native.ts), which sets __XTTS_DAWN_NODE__.
const dawnPathPlugin = {
  name: 'xtts-dawn-path',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]webgpu[\\/]index\.js$/ }, (args) => {
      const src = readFileSync(args.path, 'utf8');
      const patched = src.replace(
        /const dawnNodePath = ([^;]+);/,
        'const dawnNodePath = globalThis.__XTTS_DAWN_NODE__ || ($1);',
      );
      if (patched === src)
        throw new Error(`${args.path}: no "const dawnNodePath = ...;" to redirect (webgpu package changed?)`);
      return { contents: patched, loader: 'js' };
    });
  },
};

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  banner: { js: banner },
  define: { 'import.meta.url': '__xtts_import_meta_url' },
  // Optional (explained when absent) or native (shipped beside the bundle), or tools the CLI never
  // runs in a bundle (plugin installation needs npm and a network).
  external: [
    '@tensorflow/tfjs-node',
    '@tensorflow/tfjs-node-gpu',
    '*.node',
    'ts-node',
    'typescript',
    'tsx',
    'esbuild',
    'oclif',
    '@oclif/plugin-plugins',
    'npm',
  ],
  plugins: [dawnPathPlugin],
  logLevel: 'warning',
  legalComments: 'none',
  minifyWhitespace: true,
};

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  ...common,
  stdin: { contents: entry, resolveDir: root, sourcefile: 'xtts-bundle-entry.js', loader: 'js' },
  outfile: join(out, 'xtts.cjs'),
});
// The benches fully minified (each carries its own TF.js): with the GPU runtime, the bundle must fit the
// 64 MiB a GPU host call carries, and three readable benches took 6 MB of it.
for (const name of ['backend', 'matmul', 'reduce', 'gather', 'dispatch', 'planted-leak', 'subgroup-matrix']) {
  await build({
    ...common,
    minify: true,
    entryPoints: [join(root, 'bench', `${name}.bench.ts`)],
    outfile: join(out, `${name}-bench.cjs`),
  });
}

const copy = (from, name) => cpSync(from, join(out, name));
copy(require.resolve('better-sqlite3/build/Release/better_sqlite3.node'), 'better_sqlite3.node');
const wasmDir = dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
// Not the threaded build: TF.js never loads it under Node (src/core/backend/wasm.ts).
for (const f of ['tfjs-backend-wasm.wasm', 'tfjs-backend-wasm-simd.wasm']) copy(join(wasmDir, f), f);
const nvml = join(root, 'native', 'nvml', 'build', 'Release', 'xtts_nvml.node');
if (existsSync(nvml)) copy(nvml, 'xtts_nvml.node');
else
  warnings.push(
    'native/nvml is not built: GPU telemetry in the bundle falls back to nvidia-smi (npm run build:native)',
  );
cpSync(join(root, 'configs'), join(out, 'configs'), { recursive: true });

// Dawn: 21 MB raw, 5.4 MB at brotli quality 9 (quality 11: 4.7 MB but 75 s here). Compressed once
// per dawn.node and kept in node_modules/.cache, so rebuilding the bundle costs nothing.
const dawn = join(dirname(require.resolve('webgpu')), 'dist', `${process.platform}-${process.arch}`, 'dawn.node');
const dawnRaw = readFileSync(dawn);
const cacheDir = join(root, 'node_modules', '.cache', 'xtts-bundle');
const cached = join(cacheDir, `dawn-${createHash('sha256').update(dawnRaw).digest('hex').slice(0, 16)}.node.br`);
if (!existsSync(cached)) {
  mkdirSync(cacheDir, { recursive: true });
  const br = brotliCompressSync(dawnRaw, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 9,
      [constants.BROTLI_PARAM_LGWIN]: 24,
      [constants.BROTLI_PARAM_SIZE_HINT]: dawnRaw.length,
    },
  });
  writeFileSync(`${cached}.${process.pid}`, br);
  cpSync(`${cached}.${process.pid}`, cached);
  rmSync(`${cached}.${process.pid}`);
}
copy(cached, 'dawn.node.br');

writeFileSync(
  join(out, 'package.json'),
  `${JSON.stringify(
    {
      name: 'xtts',
      version: pkg.version,
      description: pkg.description,
      type: 'commonjs',
      private: true,
      oclif: {
        bin: 'xtts',
        dirname: 'xtts',
        topicSeparator: ' ',
        commands: { strategy: 'explicit', target: './xtts.cjs', identifier: 'COMMANDS' },
        additionalHelpFlags: pkg.oclif?.additionalHelpFlags,
        additionalVersionFlags: pkg.oclif?.additionalVersionFlags,
        topics,
      },
    },
    null,
    2,
  )}\n`,
);

const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(2)} MiB`;
let total = 0;
const lines = [];
for (const name of readdirSync(out).sort()) {
  const p = join(out, name);
  const bytes = statSync(p).isDirectory()
    ? readdirSync(p, { recursive: true }).reduce((s, f) => s + statSync(join(p, String(f))).size, 0)
    : statSync(p).size;
  total += bytes;
  lines.push(`  ${name.padEnd(30)} ${mib(bytes).padStart(10)}`);
}
console.log(
  `bundle/ in ${((performance.now() - t0) / 1000).toFixed(1)} ` +
    `s: ${commands.length} commands ` +
    `(${commands.map((c) => c.id.replaceAll(':', ' ')).join(', ')})`,
);
console.log(lines.join('\n'));
console.log(
  `  ${'total'.padEnd(30)} ${mib(total).padStart(10)}  (with a ~22 MB compressed ` +
    `Node.js: ${mib(total + 22 * 2 ** 20)} of a 64 MiB payload)`,
);
for (const w of warnings) console.warn(`warning: ${w}`);
