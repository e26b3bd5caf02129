/**
 * The ways a record remembers its past (the reducer's folds, shared by the kinds): health
 * probes count streaks (rise/fall), capacity and power readings apply only changes beyond
 * the hysteresis band, grid facts remember when their content was learned and what it said
 * before, everything else keeps the latest. Pure.
 */
import type { Signal } from '../types.js';
import type { SignalRecord } from '../snapshot.js';
import type { ReduceRules } from './kind.js';

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

export function foldHealth(prev: SignalRecord | undefined, s: Signal, rules: ReduceRules, id: string): SignalRecord {
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

export function foldApplied(prev: SignalRecord | undefined, s: Signal, rules: ReduceRules, id: string): SignalRecord {
  const next = numericFields(s.value);
  const applied = prev?.fold.kind === 'applied' ? prev.fold.value : undefined;
  const value = applied === undefined || movedEnough(applied, next, rules.hysteresis) ? next : applied;
  return { id, signal: s, fold: { kind: 'applied', value } };
}

export function foldGrid(prev: SignalRecord | undefined, s: Signal, _rules: ReduceRules, id: string): SignalRecord {
  const f = prev?.fold.kind === 'grid' ? prev.fold : undefined;
  if (!prev || !f) return { id, signal: s, fold: { kind: 'grid', learnedAt: s.observedAt } };
  if (sameContent(prev.signal.value, s.value)) return { id, signal: s, fold: f };
  return { id, signal: s, fold: { kind: 'grid', learnedAt: s.observedAt, last: { value: prev.signal.value, learnedAt: f.learnedAt, until: s.observedAt } } };
}

export function foldLatest(_prev: SignalRecord | undefined, s: Signal, _rules: ReduceRules, id: string): SignalRecord {
  return { id, signal: s, fold: { kind: 'latest' } };
}
