// The `tensorflow` backend: libtensorflow through @tensorflow/tfjs-node-gpu (CUDA) or
// @tensorflow/tfjs-node (CPU). Neither is a dependency of xtts: their install script downloads
// libtensorflow from storage.googleapis.com, which air-gapped hosts and this project's CI cannot
// reach. Declared as optionalDependencies they install "successfully" without it, but every
// `npm ci` then fetches their ~120-package tree and runs two downloads that fail (measured: 32 s
// against 8 s without them, with DNS failing at once; a firewall that drops packets makes each
// download hang until the connection times out). So they are loaded only when someone installed one.
import { createRequire } from 'node:module';

type Tf = typeof import('@tensorflow/tfjs-core');

/** The packages that provide the backend, in the order they are tried (GPU build first). */
export const TENSORFLOW_PACKAGES = ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'] as const;

export const TENSORFLOW_INSTALL_HINT =
  'on a host that can reach storage.googleapis.com, in the xtts folder (or beside ' +
  'the bundle): `npm install @tensorflow/tfjs-node-gpu@4.22.0` (CUDA 11.2 + cuDNN ' +
  '8.1) or `npm install @tensorflow/tfjs-node@4.22.0` (CPU)';

export function tensorflowUnavailableReason(): string {
  return (
    'neither @tensorflow/tfjs-node-gpu nor @tensorflow/tfjs-node is installed: they ' +
    'are optional, not declared by xtts, because their install ' +
    'script downloads libtensorflow (network needed at install time). To use this backend, ' +
    `${TENSORFLOW_INSTALL_HINT}; or use --backend webgpu`
  );
}

/** The first of TENSORFLOW_PACKAGES that can be resolved from here, without loading it. */
export function installedTensorflowPackage(): string | undefined {
  const require_ = createRequire(import.meta.url);
  for (const pkg of TENSORFLOW_PACKAGES) {
    try {
      require_.resolve(pkg);
      return pkg;
    } catch {
      // Not installed: the common case.
    }
  }
  return undefined;
}

/** Load the installed package and make `tensorflow` current; the reason when it cannot be. */
export async function initTensorflow(tf: Tf): Promise<{ ok: true; pkg: string } | { ok: false; reason: string }> {
  const pkg = installedTensorflowPackage();
  if (!pkg) return { ok: false, reason: tensorflowUnavailableReason() };
  try {
    // A variable specifier: the bundler leaves it to Node, which resolves it beside the bundle.
    const specifier: string = pkg;
    await import(specifier);
  } catch (e) {
    const first = (e as Error).message.split('\n')[0];
    const hint = /libtensorflow|\.so|cannot open shared object/i.test(first)
      ? ' (libtensorflow or its CUDA libraries are missing: reinstall the package where ' +
        'it can download libtensorflow, and check CUDA 11.2 / cuDNN 8.1 for the GPU ' +
        'build)'
      : '';
    return { ok: false, reason: `${pkg} is installed but failed to load: ${first}${hint}` };
  }
  if (!(await tf.setBackend('tensorflow')))
    return { ok: false, reason: `${pkg} loaded but its tensorflow backend did not initialise` };
  return { ok: true, pkg };
}
