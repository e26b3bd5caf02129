/**
 * The reducer: pure `(record, signal) → record`. Every store folds every signal through it,
 * so every node derives the same record from the same signals. No I/O, no clock: expiry is
 * not decided here (the planner turns each record's expiresAt into a scheduled step).
 *
 * - Latest wins: a signal whose observedAt is not newer than the record's is refused (null).
 * - Anti-flap for `health.probe` (gdnsd's up/ok/down thresholds, Route 53's failure
 *   threshold): the record keeps a stable state that turns down only after `fall`
 *   consecutive failures and up only after `rise` consecutive successes. The first probe of
 *   an endpoint sets it directly (there is no earlier state to protect).
 * - Hysteresis for `capacity` and `power.budget`: the applied value moves only when a field
 *   changes by more than `hysteresis` (relative) or reaches 0, so a noisy meter cannot
 *   whipsaw weights.
 * - Grid facts (`grid.event`, `grid.alert`) remember when their content was first learned
 *   and what it was before its last change (GridFold).
 * Every other kind applies its latest value as is.
 * Each kind's fold is declared with the kind (gslb/model/kinds/); this module applies them.
 */
import type { Signal } from '../model/types.js';
import type { SignalRecord } from '../model/snapshot.js';
import { KINDS } from '../model/kinds/index.js';
import type { ReduceRules } from '../model/kinds/kind.js';
import { foldLatest } from '../model/kinds/folds.js';
import { signalId } from './signals.js';
import type { Provenance } from '../model/principal.js';

export type { ReduceRules } from '../model/kinds/kind.js';
export { movedEnough } from '../model/kinds/folds.js';

export const DEFAULT_RULES: ReduceRules = { rise: 2, fall: 3, hysteresis: 0.05 };

/**
 * Folds `s` into `prev` (the record of the same id, or undefined). Returns the new record,
 * or null when `s` is not newer than `prev` (nothing changes). Never mutates its inputs.
 */
export function reduce(prev: SignalRecord | undefined, s: Signal, rules: ReduceRules = DEFAULT_RULES, by?: Provenance): SignalRecord | null {
  if (prev && s.observedAt <= prev.signal.observedAt) return null;
  const next = (KINDS[s.kind]?.fold ?? foldLatest)(prev, s, rules, signalId(s));
  if (by === undefined) return next;
  return { ...next, principal: by.principal, ...(by.grant !== undefined ? { grant: by.grant } : {}) };
}

/**
 * The principal that holds `prev` against a write of `s` by `by` (ADR 0021), or null when the
 * write may go ahead: a record is its writer's until it expires, so two principals that name
 * the same source never silently replace each other's facts. A record of an earlier build (no
 * principal) or one expired at the new fact's observedAt is anyone's; a write without
 * provenance (a store's own tooling) is not checked, and an operator's (`by.operator`, audited by
 * its caller) may replace any. Pure: no clock, only the two facts' times.
 */
export function heldAgainst(prev: SignalRecord | undefined, s: Signal, by: Provenance | undefined): string | null {
  if (!prev || by === undefined || by.operator || prev.principal === undefined || prev.principal === by.principal) return null;
  return prev.signal.expiresAt > s.observedAt ? prev.principal : null;
}
