/**
 * What a signal kind is, in one place (docs/conventions.md "Layout": `gslb/model/kinds/`): its name, the schema of its
 * value, how a new fact folds into the record of the one before (pure), what its facts mean
 * once expired by default, and how its value reads in words. A kind is one file in this
 * folder and one line in index.ts; the reducer, the config's `policy.stale`, the planner's
 * default stale policies and the fleet view's summaries are built from the registry.
 * What a kind means for traffic is the planner's (gslb/policy/planner/).
 */
import type { TSchema } from '@sinclair/typebox';
import type { Signal } from '../types.js';
import type { SignalRecord } from '../snapshot.js';

/** What a kind's fact means once it is older than expiresAt + keepMs. */
export type StaleThen = 'down' | 'degraded' | 'healthy' | 'ignore';

/** The reducer's tunables (policy.health.rise/fall, policy.hysteresis). */
export interface ReduceRules {
  /** Consecutive successes before a down endpoint is up again (gdnsd up_thresh). */
  rise: number;
  /** Consecutive failures before an up endpoint is down (gdnsd down_thresh). */
  fall: number;
  /** Relative change a capacity or power field must exceed to be applied, e.g. 0.05. */
  hysteresis: number;
}

export interface KindDef<N extends string = string> {
  name: N;
  /** The schema of `value` (TypeBox; unknown keys are errors). */
  value: TSchema;
  /**
   * Folds `s` (newer than `prev`, same id) into the record of the one before. Pure; never
   * mutates its inputs.
   */
  fold(prev: SignalRecord | undefined, s: Signal, rules: ReduceRules, id: string): SignalRecord;
  /** The default stale policy (policy.stale.<kind>), and what the config reference calls one fact. */
  stale: { keepMs: number; then: StaleThen; what: string };
  /**
   * Its row of the kind table in docs/api.md (`POST /v1/signals`, rendered by kindTable() in
   * index.ts and checked by index.test.ts): the value's shape in short (`{up, latencyMs?}`) and
   * what the planner makes of it, in Markdown.
   */
  doc: { value: string; notes: string };
  /**
   * The longest a fact of this kind may claim to be valid (expiresAt − observedAt), ms: a
   * fact that says it holds for 170 years is refused (issue 27, gslb/model/domains.ts).
   */
  maxValidityMs: number;
  /**
   * Facts of this kind that validation must accept, and values it must refuse with the field it
   * names (`value.level`): gslb/model/kinds/index.test.ts runs every kind's, so a new kind brings
   * its own cases and no test pins a list of kinds.
   */
  examples: { valid: readonly unknown[]; invalid: readonly { value: unknown; field: string }[] };
  /** The value in words for people (the fleet view, the dashboard): short parts, joined by the caller. */
  summary(v: Record<string, unknown>): string[];
}
