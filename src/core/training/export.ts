// `xtts export`: a checkpoint's weights under the names and layouts PyTorch code expects, so that a
// model trained here loads into a torch module (or any tool written for one) without a conversion script:
//
//   xtts                              | exported
//   Linear  X.w [in, out], X.b        | X.weight [out, in], X.bias          (nn.Linear)
//   Conv1d  X.w [kernel, in, out]     | X.weight [out, in, kernel]          (nn.Conv1d)
//   depthwise X.dw.w [kernel, C]      | X.dw.weight [C, 1, kernel]          (nn.Conv1d, groups=C)
//   LayerNorm X.g                     | X.weight                            (nn.LayerNorm, bias=False)
//   fused X.qkv.w [D, 3D] (q | k | v) | X.q_proj / k_proj / v_proj .weight [D, D] and .bias
//   fused X.kv.w [D, 2D] (k | v)      | X.k_proj / v_proj
//   dec.cross_kv.w [D, layers·2D]     | dec.blocks.<l>.cross.k_proj / v_proj (layer l: columns 2lD…, keys first)
//   embeddings, positions, latents, γ | unchanged (nn.Embedding's layout is xtts's)
//
// Heads stay contiguous blocks of each projection (head h: rows h·dh … (h+1)·dh − 1), as in torch's
// multi-head attention. The file's header keeps the checkpoint's own description (step, config,
// tokenizer, …) and says `naming: pytorch`.
import { checkOutputFolder, refuseUnsafeOutputs, requireSafetensorsName, writeOutputFile } from '../util/index.js';
import {
  type CheckpointKind,
  CheckpointStore,
  checkpointInputs,
  type NamedArray,
  resolveCheckpoint,
} from './checkpoint.js';
import { readSafetensorsFile, safetensorsWriter } from './safetensors.js';
import { VocoderStateSchema } from './vocoder-state.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ExportResult {
  checkpoint: string;
  kind: CheckpointKind;
  out: string;
  tensors: number;
  parameters: number;
}

/** [rows, cols] row-major -> its transpose. */
function transpose2d(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return out;
}

/** Columns [from, from + width) of [rows, cols]. */
function columns(data: Float32Array, rows: number, cols: number, from: number, width: number): Float32Array {
  const out = new Float32Array(rows * width);
  for (let r = 0; r < rows; r++) out.set(data.subarray(r * cols + from, r * cols + from + width), r * width);
  return out;
}

const f32 = (name: string, shape: number[], data: Float32Array): NamedArray => ({
  name,
  shape,
  dtype: 'float32',
  data,
});

/** A Linear's weight [in, out] (or a slice of its columns) as nn.Linear's [out, in]. */
function linearWeight(name: string, a: NamedArray, from = 0, width = a.shape[1]): NamedArray {
  const [rows, cols] = a.shape;
  return f32(name, [width, rows], transpose2d(columns(a.data as Float32Array, rows, cols, from, width), rows, width));
}

/** Fused projections: the parts' names and their column offsets, or undefined. */
function fusedParts(base: string, width: number, d: number): { name: string; from: number }[] | undefined {
  if (base.endsWith('.qkv')) {
    const stem = base.slice(0, -'.qkv'.length);
    return ['q', 'k', 'v'].map((p, i) => ({ name: `${stem}.${p}_proj`, from: i * d }));
  }
  if (base.endsWith('.kv')) {
    const stem = base.slice(0, -'.kv'.length);
    return ['k', 'v'].map((p, i) => ({ name: `${stem}.${p}_proj`, from: i * d }));
  }
  if (base === 'dec.cross_kv')
    return Array.from({ length: width / (2 * d) }, (_, l) =>
      ['k', 'v'].map((p, i) => ({ name: `dec.blocks.${l}.cross.${p}_proj`, from: (2 * l + i) * d })),
    ).flat();
  return undefined;
}

/** One xtts array as the PyTorch-named arrays it becomes. */
function exportArray(a: NamedArray, byName: ReadonlyMap<string, NamedArray>): NamedArray[] {
  const dot = a.name.lastIndexOf('.');
  const base = a.name.slice(0, dot);
  const leaf = a.name.slice(dot + 1);
  const data = a.data as Float32Array;
  if (leaf === 'g') return [f32(`${base}.weight`, a.shape, data)];
  if (leaf === 'w' || leaf === 'b') {
    const weight = leaf === 'w' ? a : byName.get(`${base}.w`)!;
    // Fused projections split by their output width: D is the input width of the weight.
    const parts = fusedParts(base, weight.shape[weight.shape.length - 1], weight.shape[0]);
    if (parts) {
      const d = weight.shape[0];
      return parts.map((p) =>
        leaf === 'w'
          ? linearWeight(`${p.name}.weight`, a, p.from, d)
          : f32(`${p.name}.bias`, [d], data.slice(p.from, p.from + d)),
      );
    }
    if (leaf === 'b') return [f32(`${base}.bias`, a.shape, data)];
    if (a.shape.length === 2 && base.endsWith('.dw')) {
      const [kernel, ch] = a.shape;
      return [f32(`${base}.weight`, [ch, 1, kernel], transpose2d(data, kernel, ch))];
    }
    if (a.shape.length === 2) return [linearWeight(`${base}.weight`, a)];
    if (a.shape.length === 3) {
      // [kernel, in, out] -> [out, in, kernel]
      const [kernel, inCh, outCh] = a.shape;
      const out = new Float32Array(data.length);
      for (let k = 0; k < kernel; k++)
        for (let i = 0; i < inCh; i++)
          for (let o = 0; o < outCh; o++) out[(o * inCh + i) * kernel + k] = data[(k * inCh + i) * outCh + o];
      return [f32(`${base}.weight`, [outCh, inCh, kernel], out)];
    }
  }
  return [a];
}

/** A model's arrays (weights, or gradients of them) under PyTorch's names and layouts (the table above). */
export function pytorchArrays(arrays: readonly NamedArray[]): NamedArray[] {
  const byName = new Map(arrays.map((a) => [a.name, a]));
  return arrays.flatMap((a) => exportArray(a, byName));
}

/** The checkpoint at `path` (a run folder or checkpoint, acoustic or vocoder) as PyTorch-named safetensors at `out`. */
export function exportCheckpoint(path: string, out: string, options: { overwrite?: boolean } = {}): ExportResult {
  const overwrite = { overwrite: options.overwrite === true };
  refuseUnsafeOutputs(
    [{ file: out, what: 'the exported weights (--out)' }],
    checkpointInputs(path, 'a file of the checkpoint (--checkpoint)'),
  );
  checkOutputFolder(out, 'the exported weights', overwrite);
  requireSafetensorsName(out, 'the exported checkpoint');
  const dir = resolveCheckpoint(path);
  const kind: CheckpointKind = (() => {
    try {
      return JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).kind === 'vocoder' ? 'vocoder' : 'acoustic';
    } catch {
      return 'acoustic';
    }
  })();
  // Loaded as train and synthesize load it: the state checked against its schema, every problem naming the file.
  const store = new CheckpointStore(dir);
  const ckpt =
    kind === 'vocoder'
      ? store.load(dir, { optimizer: false, kind, schema: VocoderStateSchema })
      : store.load(dir, { optimizer: false });
  const weightsFile = join(dir, 'weights.safetensors');
  const metadata = readSafetensorsFile(weightsFile, { headerOnly: true }).metadata;
  const exported = pytorchArrays(ckpt.weights);
  writeOutputFile(
    out,
    safetensorsWriter(exported, { ...metadata, naming: 'pytorch' }),
    'the exported weights',
    overwrite,
  );
  return {
    checkpoint: dir,
    kind,
    out,
    tensors: exported.length,
    parameters: exported.reduce((a, x) => a + x.data.length, 0),
  };
}
