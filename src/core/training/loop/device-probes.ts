// Device-timed probe steps (profiling: TrainOptions.deviceTimedSteps): the run's last N steps each
// run under the backend's device timer, and their programs' device times are summed. Timing
// serialises dispatch, so these steps are probes for device time, never part of the step-time figures.
import * as tf from '@tensorflow/tfjs-core';
import { mergeProgramTimes, type ProgramTime, programTimesPerStep, timeOnDevice } from '../../backend/index.js';

export interface DeviceTiming {
  available: boolean;
  source?: string;
  reason?: string;
  programs?: ProgramTime[];
}

export class DeviceProbes {
  /** What the probes found (or why there are none); undefined where none were asked for. */
  timing: DeviceTiming | undefined;
  /** Device time per program kind, summed over the timed steps, and how many steps were timed. */
  private readonly programs = new Map<string, ProgramTime>();
  private timedSteps = 0;

  private constructor(
    /** The first step (counted from 0, before it is made) that runs timed. */
    readonly from: number,
    timing: DeviceTiming | undefined,
  ) {
    this.timing = timing;
  }

  /**
   * The last `requested` of `maxSteps` steps run timed. A backend with no device time (`untimeable`
   * says why) runs none of them: the run is that many steps shorter, as the probes come last.
   */
  static plan(
    requested: number,
    maxSteps: number,
    untimeable: string | undefined,
  ): { probes: DeviceProbes; maxSteps: number } {
    const timed = Math.max(0, Math.floor(requested));
    if (timed > 0 && untimeable)
      return {
        probes: new DeviceProbes(maxSteps - timed, { available: false, reason: untimeable }),
        maxSteps: maxSteps - timed,
      };
    return { probes: new DeviceProbes(maxSteps - timed, undefined), maxSteps };
  }

  /** Runs `issue` under the device timer; the device time of its kernels, where the backend has it. */
  async run(issue: () => void): Promise<number | undefined> {
    const timing = await timeOnDevice(tf as never, issue);
    this.timing = timing.available
      ? { available: true, source: timing.source }
      : { available: false, reason: timing.reason };
    if (!timing.available) return undefined;
    mergeProgramTimes(this.programs, timing.programs);
    return timing.kernelMs;
  }

  /** A step made of timed micro-batches (it counts once, however many it had). */
  countStep(): void {
    this.timedSteps++;
  }

  /** What to record of the probes: per timed step, largest first. */
  summary(): DeviceTiming | undefined {
    if (this.timing?.available && this.programs.size > 0)
      this.timing.programs = programTimesPerStep(this.programs, this.timedSteps);
    return this.timing;
  }
}
