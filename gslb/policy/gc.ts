/**
 * Which long-expired signal records may be removed from the store (the housekeeping job
 * `gc-signals`, gslb/control/jobs.ts): only those whose removal leaves the plan as decide reads
 * it from `now` on identical — every region's step in force and every later step, the windows,
 * the carbon preferences and unplaced demand (planFrom) — checked by planning without them.
 * A record whose stale policy still acts (a capacity reading that went stale caps its region at
 * degradedShare) is kept: removing it would change the plan.
 * Pure: no clock (now is an argument), no I/O.
 */
import type { Plan, RegionStep } from '../model/types.js';
import { plan } from './planner/plan.js';
import type { PlanInput } from './settings.js';

/** How many records are tried one by one when removing them all at once would change the plan (the rest wait for the next run). */
const MAX_SINGLE_TRIES = 50;

function stepAt(steps: readonly RegionStep[], t: number): RegionStep | undefined {
  let cur: RegionStep | undefined;
  for (const st of steps) {
    if (st.at > t) break;
    cur = st;
  }
  return cur;
}

/**
 * The plan as decide reads it from `now` on, as canonical JSON: per region the step in force
 * at now (its start aside: history may differ) and the steps after; the windows that have not
 * ended; `prefer` and `unplaced`. Two plans with equal planFrom answer every query alike from now on.
 */
export function planFrom(p: Plan, now: number): string {
  const regions: [string, unknown, RegionStep[]][] = [];
  for (const id of Object.keys(p.regions).sort()) {
    const steps = p.regions[id]!;
    const cur = stepAt(steps, now);
    const later = steps.filter((s) => s.at > now);
    // A region fully up from now on reads as no entry at all.
    if (later.length === 0 && (!cur || (cur.share === 1 && !cur.down && !cur.homes && !cur.refuse && cur.ttlCap === undefined && cur.reasons.length === 0))) continue;
    regions.push([id, cur ? { ...cur, at: 'now' } : null, later]);
  }
  return JSON.stringify({ regions, windows: (p.windows ?? []).filter((o) => o.end > now), prefer: p.prefer ?? null, unplaced: p.unplaced ?? null, lookahead: p.lookahead ?? null });
}

/**
 * The records to remove: expired for longer than their kind's stale keep plus `retentionMs`
 * (so nothing recent goes), and whose removal leaves planFrom(…, now) unchanged. Tried all at
 * once first; if that changes the plan, each alone (at most MAX_SINGLE_TRIES), then those
 * together again (none if even that changes it).
 */
export function collectable(input: PlanInput, now: number, retentionMs: number): { remove: { id: string; observedAt: number }[]; candidates: number; kept: number } {
  const snap = input.snapshot;
  const s = input.settings;
  const old = snap.records.filter((r) => r.signal.expiresAt + (s.stale[r.signal.kind]?.keepMs ?? 0) + retentionMs <= now);
  if (old.length === 0) return { remove: [], candidates: 0, kept: 0 };
  const before = planFrom(plan(input), now);
  const without = (ids: Set<string>) => planFrom(plan({ ...input, snapshot: { ...snap, records: snap.records.filter((r) => !ids.has(r.id)) } }), now);
  let chosen = old;
  if (without(new Set(old.map((r) => r.id))) !== before) {
    chosen = old.slice(0, MAX_SINGLE_TRIES).filter((r) => without(new Set([r.id])) === before);
    if (chosen.length > 0 && without(new Set(chosen.map((r) => r.id))) !== before) chosen = [];
  }
  return { remove: chosen.map((r) => ({ id: r.id, observedAt: r.signal.observedAt })), candidates: old.length, kept: old.length - chosen.length };
}
