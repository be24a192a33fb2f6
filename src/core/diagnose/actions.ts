// The diagnosis's prioritised actions, from every part of the report, graded with the thresholds
// every xtts tool uses (config/thresholds.ts) so that the diagnosis never disagrees with the
// validator, the pipeline analyzer or the profiler that it reuses:
//   critical — the GPU cannot be used, the config cannot run, or the trainer starves (input-bound
//              at or above inputBoundHigh);
//   high     — a verdict or finding that costs a large share of GPU time (validator warnings,
//              profiler verdicts graded high, harmful clock throttling, no GPU at all);
//   medium   — worth doing (validator infos, moderate verdicts, a GPU shared with other processes).
import type { Finding } from '../config/index.js';
import { ruleDocsLink } from '../config/index.js';
import { THRESHOLDS } from '../config/index.js';
import type { Thresholds } from '../profile/index.js';
import { formatPosition } from '../errors.js';
import type { BackendProbe } from '../backend/index.js';
import type { PipelineAnalysis } from '../data/index.js';
import type { ProfileResult } from '../profile/index.js';
import { THROTTLE_REASONS, throttleReasonLabel, type GpuTelemetryStatus } from '../telemetry/index.js';
import type { GpuSnapshot } from './gpus.js';

export const PRIORITIES = ['critical', 'high', 'medium'] as const;
export type Priority = (typeof PRIORITIES)[number];

export interface DiagnosisAction {
  priority: Priority;
  /** Which part of the report it comes from. */
  area: 'gpu' | 'backend' | 'config' | 'pipeline' | 'training';
  title: string;
  /** The measurement or finding behind it. */
  evidence: string;
  /** What to do: a config change (key and value) and/or a command or step. */
  key?: string;
  value?: string | number | boolean;
  fix?: string;
  /** The validator rule that checks the same thing, and its docs. */
  rule?: string;
  docs?: string;
}

/** GPU telemetry that works: its source, its devices and its notes. */
type LiveTelemetry = Extract<GpuTelemetryStatus, { available: true }>;

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;

export interface ActionInputs {
  gpus: GpuSnapshot;
  backends: BackendProbe[];
  findings?: readonly Finding[];
  profile?: ProfileResult;
  pipeline?: PipelineAnalysis;
  /** GPU samples' summaries during the speed test (clock reasons under load). */
  underLoad?: GpuSnapshot['idle'];
  thresholds?: Partial<Thresholds>;
}

/** Every part of the report's actions, in the report's order (GPUs, config, training, pipeline), prioritised. */
export function diagnosisActions(x: ActionInputs): DiagnosisAction[] {
  const th = { ...THRESHOLDS, ...x.thresholds };
  const telemetry = x.gpus.telemetry;
  return prioritise([
    ...reachabilityActions(x),
    ...(telemetry.available
      ? [
          ...telemetrySourceActions(telemetry),
          ...sharedGpuActions(x.gpus, telemetry.devices, th),
          ...throttleActions(x.underLoad, th),
        ]
      : []),
    ...configActions(x.findings),
    ...(x.profile ? trainingActions(x.profile, th) : []),
    ...(x.pipeline ? pipelineActions(x.pipeline) : []),
  ]);
}

/** The GPU is there but the engine cannot reach it (everything else is moot), or there is no GPU at all. */
function reachabilityActions(x: ActionInputs): DiagnosisAction[] {
  const webgpu = x.backends.find((b) => b.backend === 'webgpu');
  const hardwareAdapter = webgpu?.adapters?.some((a) => !a.software) ?? false;
  const nvidia = x.gpus.telemetry.available || x.gpus.nvidiaDevicePresent;
  if (hardwareAdapter) return [];
  if (nvidia) {
    const names = x.gpus.telemetry.available
      ? x.gpus.telemetry.devices.map((d) => d.name ?? `GPU ${d.index}`).join(', ')
      : 'an NVIDIA GPU (/dev/nvidiactl)';
    return [
      {
        priority: 'critical',
        area: 'backend',
        title: 'the GPU is idle because the webgpu backend cannot reach it',
        evidence:
          `${names} is present, ` +
          `but ${webgpu?.available === false ? webgpu.reason : 'Dawn offers no hardware adapter'}`,
        fix:
          x.gpus.vulkan.loader === null
            ? 'install the Vulkan loader (apt-get install libvulkan1) or `source ' +
              '.gpu-runtime/setup.sh` (built by `npm run gpu-runtime`)'
            : "point the Vulkan loader at the NVIDIA driver's manifest " +
              '(VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json), or `source ' +
              '.gpu-runtime/setup.sh`',
      },
    ];
  }
  return [
    {
      priority: 'high',
      area: 'gpu',
      title: 'no GPU: training runs on the CPU',
      evidence:
        `no NVIDIA GPU or driver, and WebGPU has no hardware adapter (the GPUs and ` +
        `Backends sections say ` +
        `why)${x.profile ? `; the speed test ran on the ${x.profile.backend} backend` : ''}`,
      fix:
        'train on a host with a GPU (an H100 ran the tiny preset ~45× faster than its ' +
        'own CPU); here, use the tiny preset',
    },
  ];
}

/** nvidia-smi instead of NVML: the report lacks SM activity and occupancy. */
function telemetrySourceActions(telemetry: LiveTelemetry): DiagnosisAction[] {
  if (telemetry.source !== 'nvidia-smi') return [];
  return [
    {
      priority: 'medium',
      area: 'gpu',
      title: 'GPU telemetry comes from nvidia-smi: no SM activity or occupancy',
      evidence: telemetry.notes.join('; ') || 'the NVML addon did not load',
      fix: 'build the NVML addon (npm run build:native) or set XTTS_NVML_LIBRARY to libnvidia-ml.so.1',
    },
  ];
}

/** A GPU already busy (or holding memory) before xtts started, and the processes on it. */
function sharedGpuActions(gpus: GpuSnapshot, devices: LiveTelemetry['devices'], th: Thresholds): DiagnosisAction[] {
  const out: DiagnosisAction[] = [];
  for (const g of gpus.idle) {
    const util = g.utilizationPct?.mean ?? 0;
    const mem = g.memoryPeakShare ?? 0;
    if (util <= th.idleGpuBusyPct && mem <= th.idleGpuMemoryShare) continue;
    const dev = devices.find((d) => d.index === g.index);
    const procs = (gpus.processes ?? []).filter((p) => !dev?.uuid || p.gpuUuid === dev.uuid);
    out.push({
      priority: 'medium',
      area: 'gpu',
      title: `GPU ${g.index} is already in use by another process`,
      evidence:
        `before xtts started: ${util.toFixed(0)}% ` +
        `busy, ${g.memoryPeakBytes !== null ? gib(g.memoryPeakBytes) : '?'} of memory ` +
        (`held` +
          (procs.length
            ? ` (` +
              procs
                .map((p) => `${p.name} pid ${p.pid}${p.usedMemoryBytes !== null ? ` ${gib(p.usedMemoryBytes)}` : ''}`)
                .join(', ') +
              `)`
            : '')),
      fix: 'train on a free GPU (device.model_device), or stop the other process',
    });
  }
  return out;
}

/** Harmful clock-throttle reasons active in enough of the speed test's samples. */
function throttleActions(underLoad: ActionInputs['underLoad'], th: Thresholds): DiagnosisAction[] {
  const out: DiagnosisAction[] = [];
  for (const g of underLoad ?? []) {
    for (const r of THROTTLE_REASONS.filter((t) => t.harmful)) {
      const share = g.throttleShares[r.name] ?? 0;
      if (share < th.throttleShareReported) continue;
      out.push({
        priority: r.name === 'sw_power_cap' ? 'medium' : 'high',
        area: 'gpu',
        title: `GPU ${g.index} clocks are held down: ${throttleReasonLabel(r.name)}`,
        evidence:
          `active in ${pct(share)} of the samples during the speed ` +
          (`test` +
            (g.temperaturePeakC !== null ? `; peak ${g.temperaturePeakC} °C` : '') +
            (g.smClockMhz ? `; SM clock median ${g.smClockMhz.p50.toFixed(0)} MHz` : '')),
        fix: r.name.includes('thermal')
          ? 'check the cooling (fans, airflow, data-centre inlet temperature)'
          : r.name === 'sw_power_cap'
            ? 'expected under full load; raise the power limit (nvidia-smi -pl) only if the host allows'
            : "ask the host's administrator: the board slows itself (power supply or hardware protection)",
      });
    }
  }
  return out;
}

/** The validator's findings, graded by their severity. */
function configActions(findings: readonly Finding[] = []): DiagnosisAction[] {
  return findings.map((f) => ({
    priority: f.severity === 'error' ? 'critical' : f.severity === 'warn' ? 'high' : 'medium',
    area: 'config',
    title: f.message,
    evidence: `${f.position ? formatPosition(f.position) : f.keyPath || 'config'} (${f.ruleId})`,
    ...(f.keyPath ? { key: f.keyPath } : {}),
    ...(f.fix ? { fix: f.fix } : {}),
    rule: f.ruleId,
    docs: f.docs,
  }));
}

/** The profiler's verdicts that are not ok: one action per suggested config change. */
function trainingActions(profile: ProfileResult, th: Thresholds): DiagnosisAction[] {
  const out: DiagnosisAction[] = [];
  for (const v of profile.verdicts) {
    if (v.grade === 'ok') continue;
    const inputHigh = v.id === 'input-bound' && profile.breakdown.shares.dataWaitMs >= th.inputBoundHigh;
    const priority: Priority = inputHigh ? 'critical' : v.grade === 'high' ? 'high' : 'medium';
    if (v.actions.length === 0) out.push({ priority, area: 'training', title: v.title, evidence: v.evidence });
    for (const a of v.actions)
      out.push({
        priority,
        area: 'training',
        title: v.title,
        evidence: `${v.evidence} — ${a.effect}`,
        key: a.key,
        value: a.value,
        ...(a.rule ? { rule: a.rule, docs: ruleDocsLink(a.rule) } : {}),
      });
  }
  return out;
}

/** The pipeline analyzer's recommendations when the prefetch ring keeps the step waiting. */
function pipelineActions(pipeline: PipelineAnalysis): DiagnosisAction[] {
  const r = pipeline.ring;
  if (r.grade === 'not') return [];
  const priority: Priority = r.grade === 'highly' ? 'critical' : 'medium';
  const title = `the input pipeline is ${r.grade} input-bound`;
  const evidence =
    `the prefetch ring kept a ${r.stepMs.toFixed(0)} ms step ` +
    `waiting ${pct(r.waitShare)} of the time (${r.producers} producer ` +
    `thread${r.producers === 1 ? '' : 's'}, depth ${r.depth})`;
  if (pipeline.recommendations.length === 0) return [{ priority, area: 'pipeline', title, evidence }];
  return pipeline.recommendations.map((rec) => ({
    priority,
    area: 'pipeline',
    title,
    evidence: `${evidence} — ${rec.why}`,
    key: rec.key,
    value: rec.value,
    ...(rec.rule ? { rule: rec.rule, docs: ruleDocsLink(rec.rule) } : {}),
  }));
}

/**
 * Most important first (critical, high, medium; in the order found within each). Two actions that
 * set the same key keep the more important one — its evidence joined with the other's — and the
 * value it names; the validator's, the analyzer's and the profiler's advice on one key is one action.
 */
export function prioritise(actions: readonly DiagnosisAction[]): DiagnosisAction[] {
  const rank = (p: Priority) => PRIORITIES.indexOf(p);
  const sorted = [...actions].sort((a, b) => rank(a.priority) - rank(b.priority));
  const out: DiagnosisAction[] = [];
  for (const a of sorted) {
    const same = a.key ? out.find((o) => o.key === a.key) : undefined;
    if (same) {
      if (!same.evidence.includes(a.evidence)) same.evidence = `${same.evidence}; ${a.evidence}`;
      same.value ??= a.value;
      same.rule ??= a.rule;
      same.docs ??= a.docs;
      continue;
    }
    out.push({ ...a });
  }
  return out;
}
