/**
 * The automation's safety limits (ADR 0007): at most maxAutoShare of a name's capacity removed by gridPolicy, one drain started per interval.
 * A rule of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import type { RegionId } from '../../model/types.js';
import { type PlannerSettings, round } from '../settings.js';
import type { PlanPass } from './rule.js';
import { isoOf } from '../../model/domains.js';

/** From `from` on (until the next segment), gridPolicy's share may not go below `floor` (0 = no limit). */
export interface FloorSegment {
  from: number;
  floor: number;
  why: string;
}

/**
 * The automation's safety limits (docs/design.md "Safety limits and the freeze"), over every region's
 * gridPolicy share in time (`grid`: per region, [instant, share] from that instant on):
 * - a region starts draining (its share leaves 1) at most one per minDrainIntervalMs: a
 *   later one is held at 1 until the interval after the previous start has passed;
 * - at no instant may gridPolicy take more than maxAutoShare of a name's capacity (capacity
 *   units, 1 per region without them): regions that started draining earliest keep their
 *   caps, the later ones are held at the share that keeps the name within the limit.
 * An operator's own drain is never limited: it is the confirmation the reasons ask for.
 */
export function safetyFloors(
  s: PlannerSettings,
  grid: Map<RegionId, [number, number][]>,
  /**
   * Per region, the trusted physical losses' share over time (rules/loss.ts): counted first
   * against a name's allowance and never held; a region the limits would have held is named
   * in `pierced` (with the limit in words).
   */
  loss?: Map<RegionId, [number, number][]>,
  pierced?: Map<RegionId, string>,
): Map<RegionId, FloorSegment[]> {
  const out = new Map<RegionId, FloorSegment[]>();
  const d = s.drain;
  if (grid.size === 0 || (d.maxAutoShare >= 1 && d.minDrainIntervalMs <= 0)) return out;
  const units = new Map(s.regions.map((r) => [r.id, r.capacityUnits ?? 1]));
  // Regions by index in id order (so index order is the id order the rules break ties by);
  // per-instant state in typed arrays: a 1,000-region fleet has ~1,000 instants here.
  const ids = [...grid.keys()].sort();
  const G = ids.length;
  const unit = ids.map((id) => units.get(id)!);
  const groups = (s.names ?? [{ name: 'the fleet', regions: s.regions.map((r) => r.id) }]).map((n) => {
    const members = new Set(n.regions.filter((r) => units.has(r)));
    return { name: n.name, member: ids.map((id) => members.has(id)), total: [...members].reduce((x, r) => x + units.get(r)!, 0) };
  });
  // Every change of every region's share, in time order.
  const changes: { t: number; i: number; v: number; loss?: true }[] = [];
  ids.forEach((id, i) => {
    for (const [t, v] of grid.get(id)!) changes.push({ t, i, v });
    for (const [t, v] of loss?.get(id) ?? []) changes.push({ t, i, v, loss: true });
  });
  changes.sort((a, b) => a.t - b.t || a.i - b.i);
  const times: number[] = [];
  for (const c of changes) if (times[times.length - 1] !== c.t) times.push(c.t);
  const cur = new Float64Array(G).fill(1);
  /** The trusted losses' share (1 = none): the limits count it and never hold it. */
  const base = new Float64Array(G).fill(1);
  /** When each draining region's drain counts as started (NaN: not draining). */
  const onset = new Float64Array(G).fill(NaN);
  /** Held by the interval rule until (NaN: not held), after which region. */
  const heldUntil = new Float64Array(G).fill(NaN);
  const heldAfter: RegionId[] = new Array<RegionId>(G).fill('');
  // This instant's holds: floor (NaN: none), whether by the interval rule, else which group.
  const floor = new Float64Array(G);
  const byInterval = new Uint8Array(G);
  const byGroup = new Int32Array(G);
  // The hold of each region's last segment (floor NaN: none yet, or not held).
  const lastFloor = new Float64Array(G).fill(NaN);
  const lastUntil = new Float64Array(G);
  const lastGroup = new Int32Array(G);
  let lastStart = -Infinity;
  let lastStartRegion = '';
  const iso = isoOf;
  const insert = (t: number) => {
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (times[mid]! < t) lo = mid + 1;
      else hi = mid;
    }
    if (times[lo] !== t) times.splice(lo, 0, t);
  };
  /** Why a region is held (words are made only when a segment starts). */
  const words = (i: number): string =>
    byInterval[i]
      ? `safety: gridPolicy starts draining at most one region per ${d.minDrainIntervalMs / 1000} s without an operator (${heldAfter[i]} started at ${iso(heldUntil[i]! - d.minDrainIntervalMs)}): held until ${iso(heldUntil[i]!)}; an operator can drain it now (gridsteer drain ${ids[i]})`
      : `safety: gridPolicy may take at most ${Math.round(d.maxAutoShare * 100)} % of ${groups[byGroup[i]!]!.name}'s capacity at once without an operator (regions that started draining earlier come first); an operator can drain it (gridsteer drain ${ids[i]})`;
  const order: number[] = [];
  let ci = 0;
  for (let ti = 0; ti < times.length; ti++) {
    const t = times[ti]!;
    while (ci < changes.length && changes[ci]!.t <= t) {
      const c = changes[ci]!;
      if (c.loss) base[c.i] = c.v;
      else cur[c.i] = c.v;
      ci++;
    }
    floor.fill(NaN);
    // New drains, in id order at one instant: the interval rule.
    for (let i = 0; i < G; i++) {
      if (cur[i]! >= 1) {
        onset[i] = NaN;
        heldUntil[i] = NaN;
        continue;
      }
      if (Number.isNaN(onset[i]!)) {
        const allowed = d.minDrainIntervalMs > 0 ? Math.max(t, lastStart + d.minDrainIntervalMs) : t;
        if (base[i]! < 1) {
          // A trusted loss starts now whatever the interval says.
          if (allowed > t && pierced && !pierced.has(ids[i]!)) pierced.set(ids[i]!, `at most one drain started per ${d.minDrainIntervalMs / 1000} s without an operator: ${lastStartRegion} started at ${iso(lastStart)}`);
          onset[i] = t;
          lastStart = t;
          lastStartRegion = ids[i]!;
          continue;
        }
        onset[i] = allowed;
        if (allowed > t) {
          heldUntil[i] = allowed;
          heldAfter[i] = lastStartRegion;
          insert(allowed);
        }
        lastStart = allowed;
        lastStartRegion = ids[i]!;
      }
      if (t < heldUntil[i]!) {
        floor[i] = 1;
        byInterval[i] = 1;
      }
    }
    // The share of each name's capacity gridPolicy takes.
    if (d.maxAutoShare < 1) {
      for (let gi = 0; gi < groups.length; gi++) {
        const gr = groups[gi]!;
        const allowance = d.maxAutoShare * gr.total;
        let taken = 0;
        // In the order drains started: a trusted loss is counted and never held (named when
        // beyond the allowance); a discretionary cap gets what the earlier ones left. So a
        // trusted loss never lifts a cap that started before it.
        order.length = 0;
        for (let i = 0; i < G; i++) if (gr.member[i] && (base[i]! < 1 || (cur[i]! < base[i]! && Number.isNaN(floor[i]!)))) order.push(i);
        order.sort((a, b) => onset[a]! - onset[b]! || a - b);
        for (const i of order) {
          const u = unit[i]!;
          if (base[i]! < 1) {
            taken += (1 - base[i]!) * u;
            if (taken > allowance + 1e-9 && pierced && !pierced.has(ids[i]!))
              pierced.set(ids[i]!, `gridPolicy may take at most ${Math.round(d.maxAutoShare * 100)} % of ${gr.name}'s capacity at once without an operator`);
          }
          if (!(cur[i]! < base[i]!) || !Number.isNaN(floor[i]!)) continue;
          const want = (base[i]! - cur[i]!) * u;
          if (taken + want <= allowance + 1e-9) {
            taken += want;
            continue;
          }
          const f = round(base[i]! - Math.max(0, allowance - taken) / u);
          taken = Math.max(taken, allowance);
          if (Number.isNaN(floor[i]!) || f > floor[i]!) {
            floor[i] = f;
            byInterval[i] = 0;
            byGroup[i] = gi;
          }
        }
      }
    }
    for (let i = 0; i < G; i++) {
      const f = floor[i]!;
      const held = !Number.isNaN(f);
      const until = held && byInterval[i] ? heldUntil[i]! : NaN;
      const group = held && !byInterval[i] ? byGroup[i]! : -1;
      const lf = lastFloor[i]!;
      if (held ? lf === f && Object.is(lastUntil[i], until) && lastGroup[i] === group : Number.isNaN(lf)) continue;
      lastFloor[i] = f;
      lastUntil[i] = until;
      lastGroup[i] = group;
      const id = ids[i]!;
      (out.get(id) ?? out.set(id, []).get(id)!).push({ from: t, floor: held ? f : 0, why: held ? words(i) : '' });
    }
  }
  return out;
}

/** The safety limits pass, for the precedence table. */
export const safetyPass: PlanPass = {
  name: 'safety limits',
  module: 'rules/safety.ts',
  kinds: [],
  reads: "every region's gridPolicy share over time (the grid rule's share before limits); capacity units per name",
  changesAt: "where a region's gridPolicy share changes; minDrainIntervalMs after a drain starts",
  sets: "a floor under gridPolicy's share (the grid rule reads it back): one drain started per interval, at most maxAutoShare of a name's capacity taken; operator drains are not limited",
};
