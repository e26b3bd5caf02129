/**
 * Failover practice runs (issue 21, docs/schedules.md): whether each practice occurrence of the
 * horizon runs, is skipped, or is aborted part-way — decided by the planner, so every node
 * agrees. A run is blocked while any of these holds (AWS ARC's zonal autoshift practice runs
 * have the same kind of blocking conditions):
 * - an operator's freeze of automation is in force;
 * - a region of the fleet (the practice regions included, before the run) is down, capped or
 *   drained: another window, an operator drain, a grid obligation, a failing health check;
 * - a grid alert is in force in any region (gridPolicy's facts of kind grid.alert, not shadowed);
 * - with the practice regions out, the other regions as they stand keep less than the run's
 *   minCapacityLeft of the fleet's capacity (capacity units × share; 1 unit per region without).
 * Blocked at the run's first ramp step → skipped (nothing happens); blocked later → aborted at
 * the first instant a condition holds (the region holds, then restores, from there).
 * The conditions are read from every region's schedule without practice runs (made first), so
 * one practice run never blocks itself; two practice runs at once block each other only
 * through the capacity they take.
 * A pass of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import type { Override, RegionId, RegionStep } from '../../model/types.js';
import type { GridFact, RegionWindow } from './shared.js';
import type { PlannerSettings } from '../settings.js';
import type { PlanPass } from './rule.js';
import { type PendingPractice, regionWindow } from './windows.js';
import { isoOf } from '../../model/domains.js';

export type PracticeOutcome = { run: true; abortAt?: number; why?: string } | { run: false; why: string };

const iso = isoOf;

function stepAt(steps: readonly RegionStep[] | undefined, t: number): RegionStep | undefined {
  if (!steps) return undefined;
  let cur: RegionStep | undefined;
  for (const st of steps) {
    if (st.at > t) break;
    cur = st;
  }
  return cur;
}

/**
 * The first blocking condition at t, in words, or null. `steps`: every region's schedule
 * without practice runs; `facts`: every region's grid facts.
 */
function blockedAt(p: PendingPractice, t: number, steps: Readonly<Record<RegionId, RegionStep[]>>, facts: ReadonlyMap<RegionId, readonly GridFact[]>, freezes: readonly Override[], s: PlannerSettings): string | null {
  const fr = freezes.find((o) => o.start <= t && (o.end === undefined || t < o.end));
  if (fr) return `automation is frozen by ${fr.actor} (${fr.reason}) [${fr.id}]`;
  let total = 0;
  let left = 0;
  for (const r of s.regions) {
    const st = stepAt(steps[r.id], t);
    const units = r.capacityUnits ?? 1;
    total += units;
    if (st?.down) return `${r.id} is down`;
    if (st && st.share < 1) return `${r.id} is capped at ${st.share}`;
    if (!p.occ.regions.includes(r.id)) left += units;
    for (const f of facts.get(r.id) ?? []) {
      if (f.rule.kind === 'grid.alert' && !f.shadow && t >= f.from && t < f.end) return `a grid alert is in force in ${r.id} (${f.what})`;
      // A claim of physical loss announced (trusted or not, ADR 0014) whose drain overlaps the run: no drill while the grid may take a region.
      if (f.loss && !f.shadow && !f.previous && t >= f.loss.learnedAt && t < f.end && f.loss.curve.rampStart < p.occ.end)
        return `a physical loss is announced for ${r.id} (${f.what})`;
    }
  }
  if (total > 0 && left < p.minCapacityLeft * total - 1e-9) {
    return `with ${p.occ.regions.join(', ')} out, the other regions keep ${Math.round((left / total) * 100)} % of the fleet's capacity, less than ${Math.round(p.minCapacityLeft * 100)} %`;
  }
  return null;
}

/**
 * Each pending practice run's outcome (see the module's comment), and for those that run the
 * windows to add per region (their drain curve, cut where an abort begins).
 */
export function practiceOutcomes(
  pending: readonly PendingPractice[],
  steps: Readonly<Record<RegionId, RegionStep[]>>,
  facts: ReadonlyMap<RegionId, readonly GridFact[]>,
  freezes: readonly Override[],
  s: PlannerSettings,
): { outcomes: Map<PendingPractice, PracticeOutcome>; add: Map<RegionId, RegionWindow[]> } {
  const outcomes = new Map<PendingPractice, PracticeOutcome>();
  const add = new Map<RegionId, RegionWindow[]>();
  // Every instant anything changes: each region's steps, alerts' windows, freezes.
  const changes = new Set<number>();
  for (const xs of Object.values(steps)) for (const st of xs) changes.add(st.at);
  for (const fs of facts.values()) for (const f of fs) if (f.rule.kind === 'grid.alert') for (const t of [f.from, f.end]) if (Number.isFinite(t)) changes.add(t);
  for (const o of freezes) for (const t of [o.start, o.end]) if (t !== undefined) changes.add(t);
  const sorted = [...changes].sort((a, b) => a - b);
  for (const p of pending) {
    const regions = s.regions.filter((r) => p.occ.regions.includes(r.id));
    // The run begins acting at its first ramp step (the earliest over its regions).
    const rws = regions.map((r) => regionWindow(p.occ, p.learnedAt, r.ttl0S ?? s.drain.ttl0S, s));
    const begin = Math.min(...rws.map((w) => w.curve.rampStart));
    const first = blockedAt(p, begin, steps, facts, freezes, s);
    if (first !== null) {
      outcomes.set(p, { run: false, why: `practice run blocked at ${iso(begin)}: ${first}` });
      continue;
    }
    let abortAt: number | undefined;
    let why: string | undefined;
    for (const t of sorted) {
      if (t <= begin) continue;
      if (t >= p.occ.end) break;
      const b = blockedAt(p, t, steps, facts, freezes, s);
      if (b !== null) {
        abortAt = t;
        why = `practice run aborted at ${iso(t)}: ${b}`;
        break;
      }
    }
    outcomes.set(p, abortAt === undefined ? { run: true } : { run: true, abortAt, why: why! });
    regions.forEach((r, i) => {
      const rw = abortAt === undefined ? rws[i]! : regionWindow(p.occ, p.learnedAt, r.ttl0S ?? s.drain.ttl0S, s, abortAt);
      if (abortAt !== undefined) rw.words += ` (${why})`;
      (add.get(r.id) ?? add.set(r.id, []).get(r.id)!).push(rw);
    });
  }
  return { outcomes, add };
}

/** The practice-run pass, for the precedence table. */
export const practicePass: PlanPass = {
  name: 'practice runs',
  module: 'rules/practice.ts',
  kinds: [],
  reads: "every region's schedule without practice runs, grid alerts in force, freezes; capacity units",
  changesAt: "a practice run's first ramp step, and any change of another region, an alert or a freeze during the run",
  sets: 'whether each practice run runs, is skipped (blocked before it begins) or is aborted (blocked during it); the runs that go are planned as tariff-rank windows, under the safety limits',
};
