// Dawn on Mesa's llvmpipe (OpenGL ES): the software WebGPU device the GPU code paths are tested on
// (without a window system Mesa has only its surfaceless EGL platform). One probe per test file.
import { listAdapters } from '../../src/core/backend/webgpu.js';

process.env.EGL_PLATFORM ??= 'surfaceless';
const gl = await listAdapters({ dawnBackend: 'opengles' });

/** Whether llvmpipe answers here. */
export const llvmpipe = gl.adapters.some((a) => /llvmpipe/.test(a.name));
/** A test's `skip` option: false where llvmpipe answers, else why not. */
export const withoutLlvmpipe: string | false = llvmpipe ? false : `no OpenGL ES adapter here (${gl.note ?? 'none'})`;
/** The environment a CLI process needs to train on it. */
export const onGl = { DAWNNODE_BACKEND: 'opengles', EGL_PLATFORM: 'surfaceless' };
