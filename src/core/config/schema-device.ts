// The schema of the device section: the backend, the training and data devices, and their memory budgets.
import { Type } from '@sinclair/typebox';
import { Enum, Section } from './schema-parts.js';

/** A GPU chosen by index (0, 1, ...) or by a case-insensitive substring of its name ("H100"). */
const DeviceRef = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1 }), Type.Null()], {
  default: null,
  description: 'GPU by index (0, 1, …) or by a substring of its name ("H100"); null lets the backend choose.',
});

export const BACKENDS = ['auto', 'webgpu', 'tensorflow', 'wasm', 'cpu'] as const;

export const DeviceSchema = Section(
  {
    backend: Enum(BACKENDS, {
      default: 'auto',
      description:
        '`webgpu` (Dawn), `tensorflow` (tfjs-node-gpu / tfjs-node), `wasm`, `cpu`; ' +
        '`auto` picks the fastest that works here and says why.',
    }),
    model_device: DeviceRef,
    step_capture: Enum(['auto', 'off'] as const, {
      default: 'auto',
      description:
        "webgpu: record each bucket shape's training step once (two eager steps that " +
        'must dispatch the same programs) and from then on replay it — one command ' +
        'encoder, bind groups built once, only the batch, the dropout offsets and the ' +
        "optimizer's per-step scalars written per step. With gradient accumulation the " +
        'first, in-between and updating micro-batches are captured apart; data-parallel ' +
        'replicas capture their steps, alignment forwards and updates each. What cannot be ' +
        'replayed (a step whose work changes) steps eagerly and the run records why. ' +
        '`off`: every step eagerly. Other backends step eagerly.',
    }),
    pipeline_steps: Enum(['auto', 'on', 'off'] as const, {
      default: 'auto',
      description:
        'Issue the next training steps before waiting for this one to finish, so that ' +
        'the host prepares and encodes them while the device computes. Four steps stay ' +
        "in flight: whether a step's update was made (or, at a log step, its losses; its " +
        'progress line then follows) is read once the four steps after it are queued, so ' +
        "a stop of the host (a garbage collection) of up to about four steps' device " +
        'time does not leave the device idle. A step is still waited for when something ' +
        "reads the weights after it (validation, a checkpoint, eval) and at the run's " +
        'end; a run stopped by training.max_nonfinite_steps drops the steps already ' +
        'issued after the one that reached the limit. The same arithmetic and records ' +
        'either way. `auto`: on where the device computes beside the host (webgpu, one ' +
        'device); `off`: each step waited for.',
    }),
    matmul: Enum(['tfjs', 'tiled'] as const, {
      default: 'tiled',
      description:
        "webgpu: which program runs the large float32 matmuls. `tiled`: xtts's wide " +
        'program where its 128×128 output tiles fill the device (256 invocations of 8×8 ' +
        'outputs, both operands through workgroup memory as vec4, the next slab of K ' +
        'read while the current one is multiplied), split over K into parts summed in ' +
        'order where an unbatched matmul has too few tiles and a long K (a weight ' +
        'gradient), in 64×64 tiles where those fill the device and K is too short to ' +
        "split, and the dense layers' forward with its bias and ReLU; tfjs's program for " +
        'the rest. On an H100 a normal-preset float32 step took 110 ms against 138 with ' +
        '`tfjs`, a small one 32.7 against 35.3, tiny the same. `tfjs`: ' +
        "tfjs-backend-webgpu's MatMulPackedProgram (32×32 output tiles, 64 invocations) " +
        "for all of them. Either way the matmuls that tfjs splits over K run xtts's " +
        'ordered sum, and with training.precision mixed_fp16 the tensor-core program ' +
        'takes the large ones.',
    }),
    conv_kernels: Enum(['auto', 'native', 'composed'] as const, {
      default: 'auto',
      description:
        'How the 1-D convolutions (postnet, conditioning, duration predictor) run: ' +
        "`native` uses the backend's convolution kernels and their gradients; `composed` " +
        'computes each as one matmul over all filter taps plus shifted slices (forward ' +
        'and backward are matmuls). `auto`: composed on webgpu, wasm and cpu — ' +
        "tfjs-backend-webgpu's filter gradient (Conv2DBackpropFilter) is a loop per " +
        "filter element that took 36% of a normal-preset step's device time on an H100, " +
        "the cpu backend's is a scalar loop, and wasm has none — and native on " +
        "tensorflow (libtensorflow's kernels). The weights are the same either way.",
    }),
    data_device: Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1 }), Type.Null()], {
      default: null,
      description:
        'The data device: validation passes and eval synthesis run there (a worker with ' +
        'its own copy of the model, from a snapshot of the weights at their step) while ' +
        'training goes on, so the training device never pauses for them. A GPU by index ' +
        'or name, or "cpu" (a CPU worker). null: they run on the training device between ' +
        'steps.',
    }),
    gpus: Type.Union(
      [
        Type.Literal('all'),
        Type.String({ pattern: '^cpu:([1-9]|[1-5][0-9]|6[0-4])$' }),
        Type.Array(Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1 })]), {
          minItems: 1,
          maxItems: 64,
        }),
        Type.Null(),
      ],
      {
        default: null,
        description:
          'Data-parallel training: one replica per device, each on its rows of every batch ' +
          '(batching.batch_size is the global batch), gradients summed every optimizer ' +
          'step, the same losses as one device. `all` (every GPU adapter), a list of ' +
          'adapter indices or names ([0, 1]; [0, 0] puts two replicas on one GPU, taking turns: ' +
          'no faster, a rehearsal), or `cpu:N` (N replicas on the CPU backends). ' +
          'null: one device, model_device. `--gpus` sets it.',
      },
    ),
    bounds_checks: Enum(['on', 'off'] as const, {
      default: 'off',
      description:
        "webgpu: whether Dawn clamps every buffer and array index in the training devices' shaders " +
        "(its robustness transform, a browser's defence against untrusted shaders). `off` runs xtts's " +
        "and TensorFlow.js's programs without the clamps, as Chrome's own renderer and ONNX Runtime do: " +
        'the same results while every index is in bounds (the tests train both ways and compare the bits), ' +
        'faster where indexing is much of the work (a normal mixed_fp16 step on an H200: 62.8 → 44.6 ms); ' +
        'an index out of bounds (a bug) then touches memory outside its buffer. `on`: the clamps, as a ' +
        'browser runs them. Other backends ignore it.',
    }),
    gradient_exchange: Type.Union([Type.Literal('float32'), Type.Literal('bfloat16')], {
      default: 'float32',
      description:
        'How data-parallel replicas (`gpus`) exchange their gradients. `float32`: as computed, the same ' +
        'losses as one device. `bfloat16`: each replica rounds its gradient to bfloat16 (to nearest even) ' +
        "before the exchange, which moves half the bytes (as PyTorch DDP's bf16 compression hook); every " +
        'replica adds the same rounded gradients in float32, so the replicas stay identical, but the sum ' +
        "differs from one device's by that rounding (at most 2^-8 of each normal value).",
    }),
    model_memory_budget_mb: Type.Union([Type.Integer({ minimum: 64 }), Type.Null()], {
      default: null,
      description:
        "Memory the trainer may hold on its device (the engine's tensors: weights, " +
        "optimizer state, a step's buffers), checked after every step: a run that holds " +
        'more stops with exit code 3 at the first step that does, naming what to set. ' +
        "null: no bound but the device's memory.",
    }),
    data_memory_budget_mb: Type.Union([Type.Integer({ minimum: 64 }), Type.Null()], {
      default: null,
      description:
        'Memory the data producer may use: the prefetch ring holds at most this much in ' +
        'batches (fewer slots than pipeline.prefetch_depth when they would not fit, said ' +
        "at the start; fewer than two is an error). null means 1/8 of the host's memory.",
    }),
  },
  'Backend and devices: the training device (`model_device`, or one replica per ' +
    'device in `gpus`), the data device that validates and evaluates beside it, and ' +
    'the memory each may hold.',
);
