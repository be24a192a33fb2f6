import { Flags } from '@oclif/core';
import { datasetFlag, ExitCode, parseThresholds, setFlag, thresholdFlag, XttsCommand } from '@xtts/core';
import { tensorCoreSupport } from '@xtts/core/backend';
import { BACKENDS } from '@xtts/core/config';
import { diagnose, DIAGNOSIS_SCHEMA_VERSION, watchGpus, type Diagnosis, type WatchResult } from '@xtts/core/diagnose';
import { paint, renderTable, watchFrameLines } from '@xtts/core/render';

export type DiagnoseResult =
  | ({ mode: 'report' } & Diagnosis)
  | ({ mode: 'watch'; schemaVersion: number } & WatchResult);

/** The report (not --watch) that render shows. */
type Report = Extract<DiagnoseResult, { mode: 'report' }>;

const gib = (b: number | null | undefined) => (b === null || b === undefined ? '?' : `${(b / 2 ** 30).toFixed(1)} GiB`);
const pct = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : `${(x * 100).toFixed(1)}%`);

export default class DiagnoseGpuUtilization extends XttsCommand<DiagnoseResult> {
  static override summary =
    'One report on why the GPU waits: environment, devices, backends, config audit, ' +
    'a speed test, and what to do first.';

  static override description =
    'Reports the environment (OS, CPU, memory, Node.js, package versions, ' +
    'GPU-related variables), every NVIDIA GPU (NVML addon or nvidia-smi: memory, ' +
    'clocks, power, GPM where the GPU has it) and what it does before xtts starts, ' +
    'the WebGPU adapters Dawn sees and which TensorFlow.js backends load here (with ' +
    "the exact reason for each that does not), the config audit (the validator's " +
    'rules; with --config), and a speed test: a few real, profiled training steps of ' +
    'the config (or of the quickstart preset) and the input pipeline against that ' +
    'step time. Ends with one list of actions graded critical, high and medium, with ' +
    'the thresholds every xtts tool shares (docs/rules.md#thresholds).\n' +
    '\n' +
    '--watch instead shows every GPU live (utilisation, SM activity, memory, clocks, ' +
    'power, temperature, clock reasons, with sparklines) until Ctrl-C or --duration; ' +
    'with --json it prints the samples and their summary at the end.\n' +
    '\n' +
    '--json is the snapshot to attach to a bug report. On a machine with no GPU it still runs and says so.\n' +
    '\n' +
    'Exit codes: 0 no critical action; 1 a critical action; 2 bad config or flags; 3 --watch with no GPU to watch.';

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --config my.yaml --json > diagnosis.json',
    '<%= config.bin %> <%= command.id %> --watch',
    '<%= config.bin %> <%= command.id %> --watch --duration 60 --json > gpu-minute.json',
  ];

  static override flags = {
    config: Flags.string({
      char: 'c',
      summary:
        'Training config to audit and speed-test (default: the machine alone, speed-tested on the quickstart preset).',
      helpValue: 'FILE',
      env: 'XTTS_CONFIG',
    }),
    set: setFlag,
    dataset: datasetFlag,
    backend: Flags.string({
      summary: 'TensorFlow.js backend for the speed test.',
      options: [...BACKENDS],
      env: 'XTTS_BACKEND',
    }),
    'speed-test': Flags.boolean({
      summary: 'Run the speed test (a few profiled training steps and the input pipeline).',
      default: true,
      allowNo: true,
    }),
    steps: Flags.integer({ summary: 'Profiled steps in the speed test.', default: 10, min: 2 }),
    warmup: Flags.integer({ summary: 'Warm-up steps before them.', default: 3, min: 0 }),
    // No default: oclif's dependsOn counts a default as given, and --duration, --rate and --gpu depend on it.
    watch: Flags.boolean({ summary: 'Watch every GPU live instead of reporting.' }),
    duration: Flags.integer({
      summary: 'With --watch: stop after this many seconds (default: at Ctrl-C).',
      min: 1,
      helpValue: 'SECONDS',
      dependsOn: ['watch'],
    }),
    rate: Flags.integer({
      summary: 'With --watch: samples per second per GPU (default 4).',
      min: 1,
      max: 100,
      dependsOn: ['watch'],
    }),
    threshold: thresholdFlag,
    gpu: Flags.integer({
      summary: 'With --watch: only this GPU (repeatable; nvidia-smi index).',
      multiple: true,
      min: 0,
      dependsOn: ['watch'],
    }),
  };

  protected async execute(): Promise<DiagnoseResult> {
    const { flags } = await this.parse(DiagnoseGpuUtilization);
    if (flags.watch) return this.watch(flags);
    const human = !this.jsonEnabled();
    const result = await diagnose({
      configFile: flags.config,
      set: flags.set,
      datasetDir: flags.dataset,
      backend: flags.backend as never,
      speedTest: flags['speed-test'],
      steps: flags.steps,
      warmup: flags.warmup,
      thresholds: parseThresholds(flags.threshold),
      xttsVersion: this.config.version ?? null,
      onMessage: human ? (m) => process.stderr.write(`${paint.dim(`… ${m}`)}\n`) : undefined,
    });
    return { mode: 'report', ...result };
  }

  private async watch(flags: { duration?: number; rate?: number; gpu?: number[] }): Promise<DiagnoseResult> {
    const abort = new AbortController();
    const onSigint = () => abort.abort();
    process.on('SIGINT', onSigint);
    const live = !this.jsonEnabled();
    const tty = Boolean(process.stdout.isTTY);
    try {
      const r = await watchGpus({
        rateHz: flags.rate ?? 4,
        durationMs: flags.duration !== undefined ? flags.duration * 1000 : undefined,
        signal: abort.signal,
        devices: flags.gpu?.length ? flags.gpu : undefined,
        frameMs: tty ? 1000 : 5000,
        onFrame: live
          ? (f) => {
              const lines = watchFrameLines(f.samples, f.elapsedMs, {
                source: f.status.source,
                rateHz: f.status.rateHz,
                devices: f.status.devices,
              });
              // A terminal redraws in place; a pipe or a log gets one frame after another.
              process.stdout.write(tty ? `\x1b[H\x1b[2J${lines.join('\n')}\n` : `${lines.join('\n')}\n\n`);
            }
          : undefined,
      });
      return { mode: 'watch', schemaVersion: DIAGNOSIS_SCHEMA_VERSION, ...r };
    } finally {
      process.off('SIGINT', onSigint);
    }
  }

  protected render(r: DiagnoseResult): void {
    if (r.mode === 'watch') return this.renderWatch(r);
    this.log(paint.bold(`xtts diagnose-gpu-utilization — ${r.createdAt}`));
    this.renderEnvironment(r.environment);
    this.renderGpus(r.gpus);
    this.renderBackends(r.backends);
    if (r.config) this.renderConfigAudit(r.config);
    this.renderSpeedTest(r.speedTest);
    this.renderActions(r);
  }

  /** OS, CPU, memory, Node.js, package versions and the GPU-related variables. */
  private renderEnvironment(e: Report['environment']): void {
    this.log('');
    this.log(paint.bold('Environment'));
    this.log(
      `  ${e.os.distribution ?? e.os.type} ` +
        `(${e.os.platform} ${e.os.release}, ${e.os.arch}); ${e.cpu.model ?? 'CPU'}, ${e.cpu.cores} ` +
        `cores (load ${e.cpu.loadAverage1m.toFixed(2)}); ` +
        `memory ${gib(e.memory.totalBytes)} (${gib(e.memory.freeBytes)} free)`,
    );
    this.log(`  Node.js ${e.node.version}; xtts ${e.xtts.version ?? '?'}${e.xtts.bundled ? ' (bundle)' : ''}`);
    this.log(
      `  ${Object.entries(e.packages)
        .map(([k, v]) => `${k.replace('@tensorflow/', '')} ${v ?? paint.dim('not installed')}`)
        .join(', ')}`,
    );
    if (Object.keys(e.env).length)
      this.log(
        `  ${Object.entries(e.env)
          .map(([k, v]) => `${k}=${v}`)
          .join('  ')}`,
      );
  }

  /** Every NVIDIA GPU and what it does before xtts starts, its processes, and the Vulkan loader. */
  private renderGpus(gpus: Report['gpus']): void {
    this.log('');
    this.log(paint.bold('GPUs'));
    const t = gpus.telemetry;
    if (!t.available) {
      this.log(
        `  ${paint.warn('No GPU')} ` +
          `— ${t.reason}${gpus.nvidiaDevicePresent ? ' (yet /dev/nvidiactl exists: a driver is loaded)' : ''}`,
      );
    } else {
      this.log(
        renderTable(
          [
            'GPU',
            'name',
            'memory',
            `busy (idle ${(gpus.windowMs / 1000).toFixed(0)} s)`,
            'memory used',
            'SM clock',
            'power',
            'temp',
            'GPM',
          ],
          t.devices.map((d) => {
            const s = gpus.idle.find((x) => x.index === d.index);
            return [
              d.index,
              d.name ?? '?',
              gib(d.memoryTotalBytes),
              s?.utilizationPct ? `${s.utilizationPct.mean.toFixed(0)}%` : '?',
              gib(s?.memoryPeakBytes),
              s?.smClockMhz ? `${s.smClockMhz.p50.toFixed(0)} MHz` : '?',
              s?.powerW ? `${s.powerW.p50.toFixed(0)} W` : '?',
              s?.temperaturePeakC !== null && s?.temperaturePeakC !== undefined ? `${s.temperaturePeakC} °C` : '?',
              d.gpm ? 'yes' : paint.dim(d.gpmReason ?? 'no'),
            ];
          }),
          { right: [0, 2, 3, 4, 5, 6, 7], widths: { 8: 30 } },
        ).trimEnd(),
      );
      this.log(
        `  telemetry: ${t.source} at ${t.rateHz} ` +
          (`Hz` +
            (t.driverVersion ? `, driver ${t.driverVersion}` : '') +
            (t.notes.length ? paint.dim(` (${t.notes.join('; ')})`) : '')),
      );
    }
    if (gpus.processes?.length)
      this.log(
        `  processes: ${gpus.processes.map((p) => `${p.name} (pid ${p.pid}, ${gib(p.usedMemoryBytes)})`).join(', ')}`,
      );
    this.log(
      `  Vulkan loader: ${gpus.vulkan.loader ?? paint.dim('not installed')}; driver ` +
        `manifests: ${gpus.vulkan.driverManifests.join(', ') || paint.dim('none')}`,
    );
  }

  /** Which TensorFlow.js backends load here, and the WebGPU adapters Dawn sees. */
  private renderBackends(backends: Report['backends']): void {
    this.log('');
    this.log(paint.bold('Backends'));
    this.log(
      renderTable(
        ['backend', 'loads', 'what it runs on, or why not'],
        backends.map((b) => [b.backend, b.available ? paint.ok('yes') : paint.error('no'), b.reason]),
        { widths: { 2: 90 } },
      ).trimEnd(),
    );
    const adapters = backends.find((b) => b.backend === 'webgpu')?.adapters ?? [];
    if (adapters.length) {
      this.log(
        renderTable(
          ['adapter', 'name', 'Dawn backend', 'kind', 'timestamps', 'f16', 'subgroup matrix', 'mixed_fp16'],
          adapters.map((a) => [
            a.index,
            a.name,
            a.dawnBackend,
            a.software ? 'software' : 'GPU',
            a.timestampQuery ? 'yes' : 'no',
            a.shaderF16 ? 'yes' : 'no',
            !a.subgroupMatrix
              ? 'no'
              : a.subgroupMatrixConfigs.length
                ? a.subgroupMatrixConfigs
                    .map((c) => `${c.componentType}→${c.resultComponentType} ${c.M}×${c.N}×${c.K}`)
                    .join(', ')
                : 'yes (no configurations listed)',
            tensorCoreSupport(a).ok ? 'yes' : 'no',
          ]),
          { right: [0] },
        ).trimEnd(),
      );
    }
  }

  /** The validator's findings on --config, counted. */
  private renderConfigAudit(config: NonNullable<Report['config']>): void {
    const s = config.report.summary;
    this.log('');
    this.log(paint.bold(`Config audit — ${config.file}`));
    this.log(
      `  ${s.error} error${s.error === 1 ? '' : 's'}, ${s.warn} ` +
        `warning${s.warn === 1 ? '' : 's'}, ${s.info} note${s.info === 1 ? '' : 's'} ` +
        `(the validator's rules: xtts validate-gpu-optimization)`,
    );
  }

  /** A few profiled training steps of the config and the input pipeline against that step time. */
  private renderSpeedTest(st: Report['speedTest']): void {
    this.log('');
    if ('skipped' in st) {
      this.log(`${paint.bold('Speed test')} ${paint.dim(st.skipped)}`);
      return;
    }
    const p = st.profile;
    const b = p.breakdown;
    this.log(
      paint.bold(
        `Speed test — ${st.preset ? `the ${st.preset} preset` : st.configFile} ` +
          `on ${p.backend}${p.device ? ` (${p.device})` : ''}`,
      ),
    );
    if (p.gpuNote) this.log(`  ${paint.warn(p.gpuNote)}`);
    this.log(
      `  ${b.steps} steps after ${st.warmup} warm-up: ` +
        `median ${b.wallMs.p50.toFixed(1)} ms, ${b.samplesPerS.toFixed(1)} ` +
        `samples/s, ${b.kernels.mean.toFixed(0)} ` +
        (`kernels/step` +
          (b.hostMsPerKernel !== null ? ` at ${(b.hostMsPerKernel * 1000).toFixed(0)} µs host time each` : '')),
    );
    this.log(
      `  device time per ` +
        (`step ` +
          (b.deviceMs
            ? `${b.deviceMs.p50.toFixed(1)} ms (${p.deviceTiming.source})`
            : `not measured${p.deviceTiming.reason ? ` (${p.deviceTiming.reason})` : ''}`) +
          `; `) +
        (`GPU busy ${pct(b.gpuBusyShare)}` +
          (b.gpuBusySource ? ` (${b.gpuBusySource})` : '') +
          (b.utilizationPct !== null ? `, NVML utilisation ${b.utilizationPct.toFixed(1)}%` : '') +
          (b.smActivityPct !== null ? `, SM activity ${b.smActivityPct.toFixed(1)}%` : '')),
    );
    this.log(
      `  step time: data wait ${pct(b.shares.dataWaitMs)}, ` +
        `upload ${pct(b.shares.uploadMs)}, ` +
        `dispatch ${pct(b.shares.forwardBackwardMs + b.shares.optimizerMs)}, ` +
        `sync ${pct(b.shares.syncMs)}, ` +
        `other ${pct(b.shares.otherMs + b.shares.checkpointMs)}`,
    );
    const ring = st.pipeline.ring;
    this.log(
      `  input pipeline: ${st.pipeline.audio.realtimeFactor.toFixed(0)}× real time per ` +
        `thread; against a ${ring.stepMs} ms step the ring kept the trainer ` +
        `waiting ${pct(ring.waitShare)} (${ring.grade} input-bound)`,
    );
  }

  /** One list of actions, graded critical, high and medium. */
  private renderActions(r: Report): void {
    this.log('');
    const n = r.summary;
    this.log(paint.bold(`Actions — ${n.critical} critical, ${n.high} high, ${n.medium} medium`));
    if (r.actions.length === 0) this.log(`  ${paint.ok('nothing to do: nothing here keeps the GPU waiting')}`);
    r.actions.forEach((a, i) => {
      this.log(`  ${i + 1}. ${paint.severity(a.priority)} ${paint.dim(`[${a.area}]`)} ${a.title}`);
      this.log(`     ${paint.dim(a.evidence)}`);
      const what = [
        a.key && a.value !== undefined ? paint.key(`${a.key}: ${a.value}`) : a.key ? paint.key(a.key) : '',
        a.fix && !(a.key && a.value !== undefined) ? a.fix.replace(/\n/g, ' ') : '',
      ]
        .filter(Boolean)
        .join(' — ');
      if (what || a.docs) this.log(`     → ${what}${a.docs ? paint.dim(` (${a.docs})`) : ''}`);
    });
  }

  private renderWatch(r: Extract<DiagnoseResult, { mode: 'watch' }>): void {
    if (process.stdout.isTTY)
      this.log(
        watchFrameLines(r.samples, r.durationMs, {
          source: r.telemetry.source,
          rateHz: r.telemetry.rateHz,
          devices: r.telemetry.devices,
        }).join('\n'),
      );
    this.log('');
    this.log(paint.bold(`watched ${(r.durationMs / 1000).toFixed(1)} s`));
    this.log(
      renderTable(
        [
          'GPU',
          'samples',
          'util mean',
          'util p95',
          'SM activity',
          'memory peak',
          'power p50',
          'temp peak',
          'clock reasons',
        ],
        r.summary.map((s) => [
          s.index,
          s.samples,
          s.utilizationPct ? `${s.utilizationPct.mean.toFixed(1)}%` : '?',
          s.utilizationPct ? `${s.utilizationPct.p95.toFixed(0)}%` : '?',
          s.smActivityPct ? `${s.smActivityPct.mean.toFixed(1)}%` : 'n/a',
          gib(s.memoryPeakBytes),
          s.powerW ? `${s.powerW.p50.toFixed(0)} W` : '?',
          s.temperaturePeakC !== null ? `${s.temperaturePeakC} °C` : '?',
          Object.entries(s.throttleShares)
            .filter(([k]) => k !== 'gpu_idle')
            .map(([k, v]) => `${k} ${(v * 100).toFixed(0)}%`)
            .join(', ') || '-',
        ]),
        { right: [0, 1, 2, 3, 4, 5, 6, 7] },
      ).trimEnd(),
    );
  }

  protected override exitCodeFor(r: DiagnoseResult): number {
    return r.mode === 'report' && r.summary.critical > 0 ? ExitCode.findings : ExitCode.ok;
  }
}
