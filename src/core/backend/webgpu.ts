// WebGPU through Dawn (the `webgpu` npm package, i.e. dawn.node), and TensorFlow.js's webgpu backend
// registered on the adapter and device chosen here.
//
// How dawn.node picks an adapter (webgpu 0.6.2, Dawn's src/dawn/node/binding/GPU.cpp):
//  - one backend per GPU object: Vulkan on Linux, Metal on macOS, D3D12 on Windows, or the one named
//    by the `backend=` option / DAWNNODE_BACKEND (null, vulkan, opengl, opengles, d3d11, d3d12, metal);
//  - requestAdapter enumerates that backend's adapters (sorted by power preference) and returns the
//    first whose name contains the `adapter=` option (case-sensitive), or the first of all;
//  - when an `adapter=` name matches none, it rejects with the list ("Available adapters: * backend:
//    'vulkan', name: 'NVIDIA H100 80GB HBM3'"), which is the only enumeration dawn.node offers.
// So a GPU is chosen by name; GPUs with identical names (8 x H200) cannot be told apart beyond the
// first of them — see `selectAdapter`.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { shaderSource } from './kernels.js';
import { ensureDawnBinary } from './native.js';
import {
  DEFAULT_F16_TUNING,
  DEFAULT_GPU_PROGRAMS,
  parseF16Tuning,
  selectGpuPrograms,
  type SubgroupMatrixShape,
} from './gpu-programs.js';
import { defineDeviceSums } from './programs/sum.js';
import { F16_MATMUL_ENABLES, F16_PROGRAMS, defineMatMulPrograms, f16UnitFits } from './programs/matmul.js';
import { setQueueUploads } from './webgpu-uploads.js';

type Tf = typeof import('@tensorflow/tfjs-core');

/** Dawn's GPU object (navigator.gpu), typed only as far as we use it. */
interface DawnGpu {
  requestAdapter(options?: { powerPreference?: string; featureLevel?: string }): Promise<DawnAdapter | null>;
}
interface DawnAdapter {
  readonly info: Record<string, unknown>;
  readonly features: ReadonlySet<string>;
  readonly limits: Record<string, number>;
  requestDevice(descriptor?: {
    requiredFeatures?: string[];
    requiredLimits?: Record<string, number>;
  }): Promise<DawnDevice>;
}
interface DawnDevice {
  readonly features: ReadonlySet<string>;
  readonly lost: Promise<{ reason: string; message: string }>;
  onuncapturederror: ((event: { error?: { message?: string } }) => void) | null;
  createShaderModule(descriptor: { code: string; label?: string }): unknown;
  destroy(): void;
}

/**
 * The first error the WebGPU device reported that no error scope caught (a shader that does not
 * compile, an invalid bind group or dispatch). Dawn only prints these and goes on: the program's
 * output is then whatever the buffer held, so training would go on from garbage. The trainer takes
 * it after every step and stops the run with it.
 */
let firstGpuError: string | undefined;

/** The device's first uncaptured error since the last call, or undefined; clears it. */
export function takeGpuError(): string | undefined {
  const e = firstGpuError;
  firstGpuError = undefined;
  return e;
}
interface DawnModule {
  create(flags: string[]): DawnGpu;
  globals: Record<string, unknown>;
}

export interface DawnOptions {
  /** Dawn's allow_unsafe_apis: exposes experimental features such as subgroup matrices (tensor cores). */
  unsafeApis?: boolean;
  /** Dawn backend: vulkan (Linux default), opengles, opengl, null, ...; else DAWNNODE_BACKEND or the platform's. */
  dawnBackend?: string;
  /**
   * false: Dawn's disable_robustness: shaders run without the bounds clamps Dawn adds to every buffer and
   * array access (device.bounds_checks: off); an out-of-bounds access then reads or writes whatever lies there.
   */
  robustness?: boolean;
}

/** Limits worth knowing when sizing a model and its batches. */
export interface AdapterLimits {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
  maxComputeWorkgroupStorageSize: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxComputeWorkgroupSizeX: number;
  maxComputeWorkgroupsPerDimension: number;
  maxStorageBuffersPerShaderStage: number;
}

/** One GPUSubgroupMatrixConfig: operand and result component types and the M×N×K tile. */
export interface SubgroupMatrixConfig {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

/**
 * Dawn's subgroup-matrix configurations as plain objects. Its objects keep their fields as getters on
 * the prototype, so spreading one gives {} (the adapter report once printed empty objects): the fields
 * are read by name.
 */
export function subgroupMatrixConfigs(list: unknown): SubgroupMatrixConfig[] {
  if (list === null || typeof list !== 'object' || !(Symbol.iterator in list)) return [];
  return Array.from(list as Iterable<Record<string, unknown>>, (c) => ({
    componentType: String(c.componentType),
    resultComponentType: String(c.resultComponentType),
    M: Number(c.M),
    N: Number(c.N),
    K: Number(c.K),
  }));
}

export interface AdapterDescription {
  /** Position in Dawn's adapter order (what a numeric `device` selects). */
  index: number;
  /** Dawn's name for it (what `adapter=` matches), e.g. "NVIDIA H100 80GB HBM3". */
  name: string;
  /** The Dawn backend that exposes it (vulkan, opengles, ...). */
  dawnBackend: string;
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  features: string[];
  shaderF16: boolean;
  subgroups: boolean;
  /** The subgroup widths the adapter may run (GPUAdapterInfo.subgroupMinSize/MaxSize); null where Dawn does not say. */
  subgroupSizes: { min: number; max: number } | null;
  /** chromium-experimental-subgroup-matrix: cooperative matrices (tensor cores); needs unsafeApis. */
  subgroupMatrix: boolean;
  /** timestamp-query: per-kernel device times (tf.time on the webgpu backend). */
  timestampQuery: boolean;
  /** The cooperative-matrix shapes the adapter offers (empty without subgroupMatrix). */
  subgroupMatrixConfigs: SubgroupMatrixConfig[];
  limits: AdapterLimits;
  /** A CPU implementation (llvmpipe, lavapipe, SwiftShader), or Dawn's null backend, which computes nothing. */
  software: boolean;
}

export interface AdapterList {
  dawnBackend: string;
  adapters: AdapterDescription[];
  /** Why the list is empty, when it is. */
  note?: string;
}

const SOFTWARE_ADAPTER = /llvmpipe|lavapipe|softpipe|swiftshader|microsoft basic render/i;
const GL_BACKENDS = new Set(['opengl', 'opengles', 'gl', 'gles']);

export function defaultDawnBackend(): string {
  return process.platform === 'darwin' ? 'metal' : process.platform === 'win32' ? 'd3d12' : 'vulkan';
}

/** The Dawn backend in use: the option, else DAWNNODE_BACKEND (which dawn.node itself honours), else the platform's. */
export function dawnBackendName(options: DawnOptions = {}): string {
  return (options.dawnBackend ?? process.env.DAWNNODE_BACKEND ?? defaultDawnBackend()).toLowerCase();
}

/** Where the Vulkan loader Dawn needs would be found, or undefined (checked before Dawn prints its own warning). */
export function findVulkanLoader(): string | undefined {
  if (process.platform !== 'linux') return 'system';
  const dirs = [
    ...(process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean),
    '/usr/lib/x86_64-linux-gnu',
    '/usr/lib/aarch64-linux-gnu',
    '/usr/lib64',
    '/usr/lib',
    '/lib/x86_64-linux-gnu',
    '/lib64',
    '/usr/local/lib',
  ];
  for (const d of dirs) if (existsSync(join(d, 'libvulkan.so.1'))) return join(d, 'libvulkan.so.1');
  return undefined;
}

/** Vulkan driver manifests (ICDs) the loader would read: without one, the loader finds no GPU. */
export function vulkanDriverManifests(): string[] {
  const explicit = process.env.VK_DRIVER_FILES ?? process.env.VK_ICD_FILENAMES;
  if (explicit) return explicit.split(':').filter((f) => f && existsSync(f));
  const dirs = [
    ...(process.env.XDG_CONFIG_DIRS ?? '/etc/xdg').split(':').map((d) => join(d, 'vulkan/icd.d')),
    '/etc/vulkan/icd.d',
    ...(process.env.XDG_DATA_DIRS ?? '/usr/local/share:/usr/share').split(':').map((d) => join(d, 'vulkan/icd.d')),
    '/usr/local/nvidia/share/vulkan/icd.d',
  ];
  const out: string[] = [];
  for (const d of dirs) {
    try {
      for (const f of readdirSync(d)) if (f.endsWith('.json')) out.push(join(d, f));
    } catch {
      // A missing folder is the common case.
    }
  }
  return [...new Set(out)];
}

const nvidiaDevicePresent = () => process.platform === 'linux' && existsSync('/dev/nvidiactl');

/** Why Dawn cannot see any GPU here, said with what to do about it. */
function noAdapterReason(dawnBackend: string): string {
  if (dawnBackend !== 'vulkan') return `Dawn found no GPU adapter on its ${dawnBackend} backend`;
  const manifests = vulkanDriverManifests();
  const gpu = nvidiaDevicePresent() ? 'an NVIDIA GPU is present (/dev/nvidiactl) but ' : '';
  if (manifests.length === 0) {
    return (
      `Dawn found no GPU adapter: ${gpu}the Vulkan loader finds no driver manifest ` +
      `(ICD, e.g. nvidia_icd.json from the NVIDIA driver's Vulkan component); set ` +
      `VK_DRIVER_FILES to the driver's manifest, or source the GPU runtime's setup.sh, ` +
      `which finds it`
    );
  }
  return (
    `Dawn found no GPU adapter: ${gpu}no Vulkan driver among ${manifests.join(', ')} ` +
    `exposes a GPU that Dawn accepts (the NVIDIA driver needs its Vulkan libraries, ` +
    `libGLX_nvidia.so.0, and access to /dev/nvidia*)`
  );
}

/** Why the Vulkan path cannot work at all, before Dawn is asked (it would print its own warning). */
export function vulkanLoaderReason(dawnBackend: string): string | undefined {
  if (dawnBackend !== 'vulkan' || findVulkanLoader()) return undefined;
  return (
    'Dawn found no GPU adapter: the Vulkan loader (libvulkan.so.1) is not installed, ' +
    'and Dawn reaches GPUs on Linux only through Vulkan; install libvulkan1 and the ' +
    "GPU driver's Vulkan ICD (apt-get install libvulkan1), or source the GPU runtime " +
    "folder's setup.sh (npm run gpu-runtime, README: GPU hosts), which brings both"
  );
}

let dawnModule: DawnModule | undefined;

/** Load dawn.node (from the bundle's unpacked copy when bundled); throws with the loader's message. */
export async function loadDawn(): Promise<DawnModule> {
  if (dawnModule) return dawnModule;
  const unpacked = ensureDawnBinary();
  // Read by the bundle's copy of the webgpu package (patched at bundle time) instead of its own path.
  if (unpacked) (globalThis as { __XTTS_DAWN_NODE__?: string }).__XTTS_DAWN_NODE__ = unpacked;
  dawnModule = (await import('webgpu')) as unknown as DawnModule;
  // GPUBufferUsage, GPUMapMode, ... which TF.js's webgpu backend reads as globals.
  for (const [k, v] of Object.entries(dawnModule.globals))
    if (!(k in globalThis)) Object.defineProperty(globalThis, k, { value: v, configurable: true, writable: true });
  return dawnModule;
}

/**
 * Dawn's instance for these flags, made once and kept for the process. An instance collected while it is still
 * in use aborted the process: dawn.node polls it for pending events (a destroyed device's loss among them:
 * InstanceBase::ProcessEvents on a freed instance, "terminate called after throwing an instance of
 * 'std::system_error'"), and tearing down an OpenGL ES instance's display under Mesa's llvmpipe threads ended a
 * test process with "The futex facility returned an unexpected error code". Kept instances are few (one per
 * backend, adapter name and feature set asked for), hold no device once the backend is disposed, and do not keep
 * Node from exiting.
 */
function dawnInstance(dawn: DawnModule, flags: string[]): DawnGpu {
  const key = flags.join('\n');
  let gpu = instances.get(key);
  if (!gpu) {
    gpu = dawn.create(flags);
    instances.set(key, gpu);
  }
  return gpu;
}
const instances = new Map<string, DawnGpu>();

function dawnFlags(options: DawnOptions, adapterName?: string): string[] {
  // Dawn rounds timestamp-query results (a browser's defence against timing attacks) to a grain
  // coarser than one of our kernels (tens of µs on an H100); a training tool wants them exact.
  const flags: string[] = ['disable-dawn-features=timestamp_quantization'];
  // vulkan_enable_f16_on_nvidia: Dawn keeps shader-f16 (and with it the f16 subgroup-matrix shapes)
  // off on NVIDIA's Vulkan driver unless asked; the tensor-core matmul (mixed_fp16) needs both.
  const enable = options.unsafeApis ? ['allow_unsafe_apis', 'vulkan_enable_f16_on_nvidia'] : [];
  if (options.robustness === false) enable.push('disable_robustness');
  if (enable.length > 0) flags.push(`enable-dawn-features=${enable.join(',')}`);
  if (options.dawnBackend) flags.push(`backend=${options.dawnBackend}`);
  if (adapterName !== undefined) flags.push(`adapter=${adapterName}`);
  return flags;
}

function requestOptions(dawnBackend: string): { powerPreference: string; featureLevel?: string } {
  // Dawn offers OpenGL (ES) adapters only at the compatibility feature level.
  return GL_BACKENDS.has(dawnBackend)
    ? { powerPreference: 'high-performance', featureLevel: 'compatibility' }
    : { powerPreference: 'high-performance' };
}

/** Dawn's adapter names, in its order, from the list it gives when asked for a name no adapter has. */
export async function adapterNames(options: DawnOptions = {}): Promise<{ backend: string; name: string }[]> {
  const dawn = await loadDawn();
  const backend = dawnBackendName(options);
  const impossible = 'xtts-list-adapters: a name no adapter has';
  try {
    const a = await dawnInstance(dawn, dawnFlags(options, impossible)).requestAdapter(requestOptions(backend));
    if (a === null) return [];
    throw new Error('Dawn returned an adapter for a name that no adapter has');
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const list = [...message.matchAll(/\* backend: '([^']*)', name: '(.*)'$/gm)].map((m) => ({
      backend: m[1],
      name: m[2],
    }));
    if (list.length === 0) throw new Error(`Dawn did not list its adapters: ${message.split('\n')[0]}`);
    return list;
  }
}

function describe(adapter: DawnAdapter, index: number, name: string, dawnBackend: string): AdapterDescription {
  const info = adapter.info;
  const str = (k: string) => (typeof info[k] === 'string' ? (info[k] as string) : '');
  const features = [...adapter.features].sort();
  const l = adapter.limits;
  return {
    index,
    name,
    dawnBackend,
    vendor: str('vendor'),
    architecture: str('architecture'),
    device: str('device'),
    description: str('description'),
    features,
    shaderF16: features.includes('shader-f16'),
    subgroups: features.includes('subgroups'),
    subgroupSizes:
      typeof info.subgroupMinSize === 'number' && typeof info.subgroupMaxSize === 'number'
        ? { min: info.subgroupMinSize, max: info.subgroupMaxSize }
        : null,
    subgroupMatrix: features.includes('chromium-experimental-subgroup-matrix'),
    timestampQuery: features.includes('timestamp-query'),
    subgroupMatrixConfigs: subgroupMatrixConfigs(info.subgroupMatrixConfigs),
    limits: {
      maxBufferSize: l.maxBufferSize,
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
      maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
      maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
    },
    software: dawnBackend === 'null' || SOFTWARE_ADAPTER.test(`${name} ${str('device')} ${str('description')}`),
  };
}

/** The WebGPU adapters Dawn sees, with their features and limits; an empty list says why. */
export async function listAdapters(options: DawnOptions = {}): Promise<AdapterList> {
  const dawnBackend = dawnBackendName(options);
  const loaderReason = vulkanLoaderReason(dawnBackend);
  if (loaderReason) return { dawnBackend, adapters: [], note: loaderReason };
  let dawn: DawnModule;
  let names: { backend: string; name: string }[];
  try {
    dawn = await loadDawn();
    names = await adapterNames(options);
  } catch (e) {
    return {
      dawnBackend,
      adapters: [],
      note: `the webgpu package (Dawn) cannot be used: ${(e as Error).message.split('\n')[0]}`,
    };
  }
  if (names.length === 0) return { dawnBackend, adapters: [], note: noAdapterReason(dawnBackend) };
  const adapters: AdapterDescription[] = [];
  const seen = new Map<string, AdapterDescription>();
  for (const [index, n] of names.entries()) {
    // GPUs with the same name are the same model: one request describes them all (and is the only
    // one dawn.node can reach by name).
    const same = seen.get(n.name);
    if (same) {
      adapters.push({ ...same, index });
      continue;
    }
    const adapter = await dawnInstance(dawn, dawnFlags(options, n.name)).requestAdapter(requestOptions(n.backend));
    if (!adapter) continue;
    const d = describe(adapter, index, n.name, n.backend);
    seen.set(n.name, d);
    adapters.push(d);
  }
  return { dawnBackend, adapters };
}

export type AdapterSelection =
  | { ok: true; gpu: DawnGpu; adapter: DawnAdapter; description: AdapterDescription }
  | { ok: false; reason: string };

/**
 * The adapter for `device`: null takes Dawn's first adapter (discrete GPUs first); a string is a
 * case-insensitive substring of the adapter's name or description; a number is an index in Dawn's
 * order (`listAdapters`), which need not be nvidia-smi's.
 */
export async function selectAdapter(
  device: number | string | null | undefined,
  options: DawnOptions = {},
): Promise<AdapterSelection> {
  const dawnBackend = dawnBackendName(options);
  const loaderReason = vulkanLoaderReason(dawnBackend);
  if (loaderReason) return { ok: false, reason: loaderReason };
  let dawn: DawnModule;
  try {
    dawn = await loadDawn();
  } catch (e) {
    return { ok: false, reason: `the webgpu package (Dawn) cannot be loaded: ${(e as Error).message.split('\n')[0]}` };
  }
  let names: { backend: string; name: string }[];
  try {
    names = await adapterNames(options);
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  if (names.length === 0) return { ok: false, reason: noAdapterReason(dawnBackend) };
  const listed = names.map((n, i) => `${i}: ${n.name}`).join(', ');
  let index = 0;
  if (typeof device === 'number') {
    if (device >= names.length)
      return { ok: false, reason: `there is no GPU ${device}: Dawn sees ${names.length} adapter(s) (${listed})` };
    index = device;
  } else if (typeof device === 'string') {
    const needle = device.toLowerCase();
    index = names.findIndex((n) => n.name.toLowerCase().includes(needle));
    if (index < 0) return { ok: false, reason: `no GPU adapter's name contains "${device}"; Dawn sees ${listed}` };
  }
  const name = names[index].name;
  // dawn.node takes the first adapter whose name contains the one asked for.
  const reached = names.findIndex((n) => n.name.includes(name));
  if (reached !== index) {
    return {
      ok: false,
      reason:
        `GPU ${index} ("${name}") cannot be selected: Dawn (webgpu 0.6.2) selects ` +
        `adapters by name and GPU ${reached} has the same name, so only GPU ${reached} ` +
        `can be reached from this process; run one process per GPU with only that GPU ` +
        `visible to Vulkan (e.g. a container given only that GPU)`,
    };
  }
  const gpu = dawnInstance(dawn, dawnFlags(options, name));
  let adapter: DawnAdapter | null;
  try {
    adapter = await gpu.requestAdapter(requestOptions(dawnBackend));
  } catch (e) {
    return { ok: false, reason: `Dawn could not open an adapter: ${(e as Error).message.split('\n').join('; ')}` };
  }
  if (!adapter) return { ok: false, reason: noAdapterReason(dawnBackend) };
  const description = describe(adapter, index, name, names[index].backend);
  return { ok: true, gpu, adapter, description };
}

/**
 * Whether an adapter can run the tensor-core matmul of training.precision: mixed_fp16: shader-f16,
 * subgroups and subgroup matrices with an f16 → f32 shape (Dawn lists those only under
 * allow_unsafe_apis, and on NVIDIA only with vulkan_enable_f16_on_nvidia). The shape with the most
 * outputs per matrix is taken.
 */
export function tensorCoreSupport(
  a: AdapterDescription,
): { ok: true; shape: SubgroupMatrixShape } | { ok: false; reason: string } {
  // The program counts on subgroups of exactly 32 invocations (NVIDIA's width): it finds its subgroup as local index /
  // 32.
  const width32 = a.subgroupSizes?.min === 32 && a.subgroupSizes.max === 32;
  const missing = [
    a.shaderF16 ? '' : 'shader-f16',
    a.subgroups ? '' : 'subgroups',
    a.subgroupMatrix ? '' : 'chromium-experimental-subgroup-matrix',
    width32
      ? ''
      : `subgroups of exactly 32 invocations (it ` +
        `has ${a.subgroupSizes ? `${a.subgroupSizes.min} to ${a.subgroupSizes.max}` : 'no stated width'})`,
  ].filter(Boolean);
  const shapes = a.subgroupMatrixConfigs.filter(
    (c) => c.componentType === 'f16' && c.resultComponentType === 'f32' && f16UnitFits(c),
  );
  if (missing.length === 0 && shapes.length > 0) {
    const best = shapes.reduce((x, y) => (y.M * y.N > x.M * x.N ? y : x));
    return { ok: true, shape: { M: best.M, N: best.N, K: best.K } };
  }
  const offered =
    a.subgroupMatrixConfigs.map((c) => `${c.componentType}→${c.resultComponentType} ${c.M}×${c.N}×${c.K}`).join(', ') ||
    'none';
  const lack = missing.length
    ? `lacks ${missing.join(', ')}`
    : 'offers no f16→f32 subgroup-matrix shape this program can tile';
  return {
    ok: false,
    reason:
      'training.precision mixed_fp16 runs its matmuls on tensor cores through WebGPU subgroup matrices with f16 ' +
      `operands and f32 sums; ${a.name} (Dawn ${a.dawnBackend}) ${lack} (subgroup-matrix shapes offered: ${offered})`,
  };
}

let active: { device: DawnDevice; gpu: DawnGpu } | undefined;

/**
 * Register TensorFlow.js's webgpu backend on a device of the selected adapter and make it current.
 * The device asks for what tfjs-backend-webgpu 4.22's own factory asks for (timestamp-query when
 * offered, and the adapter's compute and buffer limits) plus the storage-buffer count, which Dawn's
 * compatibility (OpenGL ES) adapters otherwise cap at 4.
 */
export async function registerWebgpuBackend(
  tf: Tf,
  selection: Extract<AdapterSelection, { ok: true }>,
  matmul: 'tfjs' | 'tiled' = 'tfjs',
  precision: 'fp32' | 'mixed_fp16' = 'fp32',
): Promise<string | undefined> {
  const { adapter, gpu } = selection;
  const l = adapter.limits;
  const wanted = [
    'maxComputeWorkgroupStorageSize',
    'maxComputeWorkgroupsPerDimension',
    'maxStorageBufferBindingSize',
    'maxBufferSize',
    'maxComputeWorkgroupSizeX',
    'maxComputeWorkgroupSizeY',
    'maxComputeWorkgroupSizeZ',
    'maxComputeInvocationsPerWorkgroup',
    'maxStorageBuffersPerShaderStage',
  ];
  const requiredLimits = Object.fromEntries(wanted.filter((k) => typeof l[k] === 'number').map((k) => [k, l[k]]));
  const requiredFeatures = adapter.features.has('timestamp-query') ? ['timestamp-query'] : [];
  let f16Shape: SubgroupMatrixShape | undefined;
  let f16Tuning = DEFAULT_F16_TUNING;
  if (precision === 'mixed_fp16') {
    const f16 = tensorCoreSupport(selection.description);
    if (!f16.ok) return f16.reason;
    f16Shape = f16.shape;
    // A benchmark switch: another build of the f16 program for a whole run (bench/gpu-twin.sh compares builds).
    const spec = process.env.XTTS_F16_TUNING;
    if (spec) {
      try {
        f16Tuning = parseF16Tuning(spec);
      } catch (e) {
        return `${(e as Error).message}; unset XTTS_F16_TUNING for the default build`;
      }
    }
    requiredFeatures.push('shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix');
  }
  let device: DawnDevice;
  try {
    device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
  } catch (e) {
    return `Dawn could not create a device on ${selection.description.name}: ${(e as Error).message.split('\n')[0]}`;
  }
  // tfjs-backend-webgpu writes the shader source itself: the f16 program's enable directives go first,
  // and programs of several outputs declare the further ones writable (kernels.ts shaderSource).
  const create = device.createShaderModule.bind(device);
  device.createShaderModule = (descriptor: { code: string; label?: string }) => {
    const code = shaderSource(descriptor.label, descriptor.code);
    return create({
      ...descriptor,
      code:
        f16Shape && descriptor.label !== undefined && F16_PROGRAMS.has(descriptor.label)
          ? F16_MATMUL_ENABLES + code
          : code,
    });
  };
  device.lost.then((info) => {
    if (info.reason !== 'destroyed' && active?.device === device)
      process.emitWarning(`WebGPU device lost: ${info.message}`, { code: 'XTTS_WEBGPU_DEVICE_LOST' });
  });
  firstGpuError = undefined;
  device.onuncapturederror = (event) => {
    firstGpuError ??= (event.error?.message ?? 'an error without a message').trim();
  };
  // tfjs-backend-webgpu checks navigator.gpu when it loads and when a backend is constructed.
  const g = globalThis as { navigator?: { gpu?: unknown } };
  if (!g.navigator) Object.defineProperty(globalThis, 'navigator', { value: {}, configurable: true, writable: true });
  (g.navigator as { gpu?: unknown }).gpu = gpu;
  const { WebGPUBackend } = await import('@tensorflow/tfjs-backend-webgpu');
  disposeWebgpu(tf, { keepNavigator: true });
  if (tf.findBackendFactory('webgpu')) tf.removeBackend('webgpu');
  tf.registerBackend('webgpu', () => new WebGPUBackend(device as never, adapter.info as never), 3);
  active = { device, gpu };
  if (!(await tf.setBackend('webgpu'))) return 'TensorFlow.js could not initialise its webgpu backend on the device';
  setQueueUploads(tf.backend(), true);
  // xtts's programs in front of tfjs's kernels (once tfjs's are registered), for this run's selection.
  defineDeviceSums(tf);
  defineMatMulPrograms(tf);
  selectGpuPrograms(tf, {
    ...DEFAULT_GPU_PROGRAMS,
    matmul: f16Shape ? 'f16' : matmul,
    ...(f16Shape ? { subgroupShape: f16Shape, f16Tuning } : {}),
  });
  return undefined;
}

/**
 * Give the GPU back: the backend's buffers and the device (a live device keeps Node from exiting: webgpu's
 * README, "Lifetime"). Its Dawn instance stays for the next backend (dawnInstance).
 */
export function disposeWebgpu(tf?: Tf, o: { keepNavigator?: boolean } = {}): void {
  if (!active) return;
  const retired = active;
  active = undefined;
  if (tf?.findBackend('webgpu')) tf.removeBackend('webgpu');
  retired.device.destroy();
  if (!o.keepNavigator) delete (globalThis as { navigator?: { gpu?: unknown } }).navigator?.gpu;
}
