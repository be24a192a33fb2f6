// What a linter rule is: the context it checks, its shape, and the helpers its checks write findings with.
import type { HostInventory } from '../env/index.js';
import type { Finding, Severity } from './findings.js';
import type { LoadedConfig } from './load.js';
import type { XttsConfig } from './schema.js';

export interface RuleContext {
  loaded: LoadedConfig;
  config: XttsConfig;
  /** The machine, or undefined when checks that depend on it are turned off (`--no-environment`). */
  host?: HostInventory;
}

type Task = XttsConfig['task'];

export interface Rule {
  id: string;
  title: string;
  /** The worst severity this rule reports. */
  severity: Severity;
  /** Why this matters for GPU utilisation; shown in docs/rules.md. */
  rationale: string;
  /** Whether the rule looks at this machine (skipped with --no-environment). */
  environment?: boolean;
  /** The `task`s whose configs the rule checks (default: every task). */
  tasks?: readonly Task[];
  check(ctx: RuleContext): Omit<Finding, 'ruleId' | 'docs'>[];
}

/** A finding as a rule writes it: the linter adds the rule's id and docs link. */
export type Draft = Omit<Finding, 'ruleId' | 'docs'>;

export function at(ctx: RuleContext, keyPath: string, severity: Severity, message: string, fix?: string): Draft {
  return { severity, message, keyPath, position: ctx.loaded.locate(keyPath), fix };
}

/**
 * The findings of a rule's independent checks, in order: each check is `condition && at(...)`, so a check
 * that does not fire writes nothing.
 */
export function fired(checks: readonly (Draft | false)[]): Draft[] {
  return checks.filter((d): d is Draft => d !== false);
}

/** The first of a rule's alternative checks that fires (written worst first), or none. */
export function firstFired(checks: readonly (Draft | false)[]): Draft[] {
  return fired(checks).slice(0, 1);
}
