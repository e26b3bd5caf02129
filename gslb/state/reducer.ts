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
 */
import type { Signal } from '../model/types.js';
import { signalId } from './signals.js';
import type { SignalRecord } from '../model/snapshot.js';

export interface ReduceRules {
  /** Consecutive successes before a down endpoint is up again (gdnsd up_thresh). */
  rise: number;
  /** Consecutive failures before an up endpoint is down (gdnsd down_thresh). */
  fall: number;
  /** Relative change a capacity or power field must exceed to be applied, e.g. 0.05. */
  hysteresis: number;
}

export const DEFAULT_RULES: ReduceRules = { rise: 2, fall: 3, hysteresis: 0.05 };

function numericFields(v: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) if (typeof x === 'number') out[k] = x;
  return out;
}

/**
 * True when `next` differs from `applied` enough to apply (see the module comment): a field
 * appears or disappears, reaches or leaves 0, or changes by more than `band` × its applied
 * value (a change of exactly `band` does not count).
 */
export function movedEnough(applied: Record<string, number>, next: Record<string, number>, band: number): boolean {
  const keys = new Set([...Object.keys(applied), ...Object.keys(next)]);
  for (const k of keys) {
    const a = applied[k];
    const n = next[k];
    if (a === undefined || n === undefined) return true;
    if (a === n) continue;
    if (n === 0 || a === 0) return true;
    // The tolerance keeps a change of exactly `band` inside it whatever the binary rounding
    // (1 → 0.95 is 0.050000000000000044 in doubles, 100 → 95 is exactly 5).
    if (Math.abs(n - a) > band * Math.abs(a) * (1 + 1e-9)) return true;
  }
  return false;
}

/** Deep equality of two JSON values with keys in any order. */
function sameContent(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => sameContent((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/**
 * Folds `s` into `prev` (the record of the same id, or undefined). Returns the new record,
 * or null when `s` is not newer than `prev` (nothing changes). Never mutates its inputs.
 */
export function reduce(prev: SignalRecord | undefined, s: Signal, rules: ReduceRules = DEFAULT_RULES): SignalRecord | null {
  if (prev && s.observedAt <= prev.signal.observedAt) return null;
  const id = signalId(s);
  switch (s.kind) {
    case 'health.probe': {
      const up = (s.value as { up: boolean }).up;
      const f = prev?.fold.kind === 'health' ? prev.fold : undefined;
      if (!f) return { id, signal: s, fold: { kind: 'health', stableUp: up, streak: 1, lastUp: up } };
      const streak = up === f.lastUp ? f.streak + 1 : 1;
      let stableUp = f.stableUp;
      let upSince = f.upSince;
      if (up !== stableUp && streak >= (up ? rules.rise : rules.fall)) {
        stableUp = up;
        upSince = up ? s.observedAt : undefined;
      }
      return { id, signal: s, fold: { kind: 'health', stableUp, streak, lastUp: up, ...(upSince !== undefined ? { upSince } : {}) } };
    }
    case 'capacity':
    case 'power.budget': {
      const next = numericFields(s.value);
      const applied = prev?.fold.kind === 'applied' ? prev.fold.value : undefined;
      const value = applied === undefined || movedEnough(applied, next, rules.hysteresis) ? next : applied;
      return { id, signal: s, fold: { kind: 'applied', value } };
    }
    case 'grid.event':
    case 'grid.alert': {
      const f = prev?.fold.kind === 'grid' ? prev.fold : undefined;
      if (!prev || !f) return { id, signal: s, fold: { kind: 'grid', learnedAt: s.observedAt } };
      if (sameContent(prev.signal.value, s.value)) return { id, signal: s, fold: f };
      return { id, signal: s, fold: { kind: 'grid', learnedAt: s.observedAt, last: { value: prev.signal.value, learnedAt: f.learnedAt, until: s.observedAt } } };
    }
    default:
      return { id, signal: s, fold: { kind: 'latest' } };
  }
}
