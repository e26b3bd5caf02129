/**
 * Spill limits: measured demand per home and how much of it the neighbours with headroom can take; the rest is unplaced.
 * A rule of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import { rankRegions, type LatLon } from '../../geo/distance.js';
import type { RegionId } from '../../model/types.js';
import type { DemandBucket } from '../../model/snapshot.js';
import { type PlannerRegion, type PlannerSettings, round } from '../settings.js';
import type { PlanPass, RegionView } from './rule.js';

/** Closed demand buckets the planner averages over (60 s of 10-second buckets). */
export const DEMAND_WINDOW_BUCKETS = 6;

/**
 * A region whose KV-cache reading is at least this is full whatever the forecast says: it takes
 * none of the demand the fleet cannot place below its saturation points while another region
 * has room (ADR 0019). Below 1 because a reading is capped at 1 and a region at 1 may be over.
 */
export const FULL_READING = 0.95;

/** Spill that began this long before the fleet's load readings is taken to be in them (demand window and cache turnover), ms. */
export const SPILL_SETTLE_MS = 60_000;

/** Demand left over is reported as unplaced only beyond this many queries/s … */
export const UNPLACED_MIN_QPS = 0.1;
/** … and beyond this share of the home's spill. */
export const UNPLACED_MIN_SHARE = 0.02;

/** x in two significant digits (65.3 → 65, 0.1234 → 0.12). */
function twoDigits(x: number): number {
  if (x <= 0) return 0;
  const k = 10 ** (Math.floor(Math.log10(x)) - 1);
  return Math.round(Math.round(x / k) * k * 1000) / 1000;
}

/** How many neighbours of a home its spill may go to, nearest first. */
const SPILL_NEIGHBOURS = 3;

/**
 * Measured demand per home in queries/s: the mean of the last DEMAND_WINDOW_BUCKETS closed
 * buckets, where "closed" means older than the newest bucket in the store (other nodes may
 * still be adding to the newest). All names summed: weights are per home, not per name.
 */
export function demandPerHome(rows: DemandBucket[]): Map<RegionId, number> {
  const out = new Map<RegionId, number>();
  if (rows.length === 0) return out;
  const newest = Math.max(...rows.map((r) => r.bucket));
  const closed = [...new Set(rows.filter((r) => r.bucket < newest).map((r) => r.bucket))].sort((a, b) => b - a).slice(0, DEMAND_WINDOW_BUCKETS);
  if (closed.length === 0) return out;
  const use = new Set(closed);
  for (const r of rows) if (use.has(r.bucket)) out.set(r.home, (out.get(r.home) ?? 0) + r.queries);
  for (const [h, q] of out) out.set(h, q / (closed.length * 10));
  return out;
}

/**
 * Spill limits (docs/design.md "Spill and unplaced demand": spill goes only where the receiving region
 * has headroom; what no region can take is reported as unplaced demand). From the views of
 * every region at `t` and measured demand D (q/s per home):
 * - a home h sends D_h × (1 − share_h) onward (all of D_h when it is down);
 * - a region n holds F_n = units_n × ΣS ÷ Σ(u·units) q/s at full load: its capacity units at
 *   the fleet's cost per query (the sums over the regions up, measured and not capped; ΣS all
 *   the demand but what the others keep and spill newer than the readings by
 *   SPILL_SETTLE_MS; ADR 0019), and can take
 *   `headroom_n = F_n × target − D_n × share_n` of spill (load grows with the demand it
 *   serves); without a load reading its headroom is not known and its admission is not
 *   limited;
 * - homes (in id order) place their spill on their nearest SPILL_NEIGHBOURS regions in turn;
 *   where a neighbour cannot take all that reaches it, w[h][n] = what it can take ÷ what
 *   reaches it, and the rest goes on.
 * - what the neighbours cannot take goes to every other region that can take spill, in
 *   proportion to its headroom; what none can take goes back to the home itself where only
 *   soft holds (slow start, restore after a grid event) keep it below its firm share, up to
 *   that share (ADR 0018); what the whole fleet cannot take is unplaced demand, spread
 *   over every region up and open, saturated or not, by the room each has before it is full
 *   (F_n − D_n × share_n less the spill this pass gave it; none once it reads FULL_READING),
 *   or by capacity where none has room: never all onto one region (ADR 0019),
 *   and reported beyond a dead band (UNPLACED_MIN_QPS, UNPLACED_MIN_SHARE of the spill) in
 *   two significant digits, so that it does not flicker with jitter;
 * Returns w[h][n] below 1 per receiving region, words on unplaced demand per home, and per
 * home the overflow: where clients no region of their ranking admits go, as weights.
 */
export function spillLimits(
  s: PlannerSettings,
  views: Map<RegionId, RegionView>,
  util: Map<RegionId, number>,
  demand: Map<RegionId, number>,
  /** When each home began spilling (its share fell below 1 or it went down), ms epoch. */
  spillSince: Map<RegionId, number>,
  /** observedAt of the load reading behind util, per region. */
  loadAt: Map<RegionId, number>,
): { limits: Map<RegionId, Record<RegionId, number>>; reasons: Map<RegionId, string[]>; unplaced: Map<RegionId, number>; overflow: Map<RegionId, Record<RegionId, number>> } {
  const limits = new Map<RegionId, Record<RegionId, number>>();
  const reasons = new Map<RegionId, string[]>();
  const unplaced = new Map<RegionId, number>();
  const overflow = new Map<RegionId, Record<RegionId, number>>();
  const located = s.regions.filter((r) => r.location !== undefined) as (PlannerRegion & { location: LatLon })[];
  if (demand.size === 0 || located.length < 2) return { limits, reasons, unplaced, overflow };
  const homes = [...demand.keys()].filter((h) => views.has(h)).sort();
  const neighboursOf = new Map<RegionId, RegionId[]>();
  for (const h of homes) {
    const home = located.find((r) => r.id === h);
    if (!home) continue;
    neighboursOf.set(
      h,
      rankRegions(home.location, located.map((r) => ({ id: r.id, location: r.location, bias: r.bias ?? 0 })))
        .map((x) => x.id)
        .filter((id) => id !== h)
        .slice(0, SPILL_NEIGHBOURS),
    );
  }
  // The spill that reaches each region along its homes' rankings as the views stand (before
  // this pass limits it): what a region left out of the fleet's sums serves besides its own
  // clients (below).
  const reaching = new Map<RegionId, number>();
  for (const h of homes) {
    const v = views.get(h)!;
    let left = (demand.get(h) ?? 0) * (v.down ? 1 : 1 - v.share);
    for (const n of neighboursOf.get(h) ?? []) {
      const vn = views.get(n)!;
      if (vn.down || vn.noSpill || left <= 1e-9) continue;
      reaching.set(n, (reaching.get(n) ?? 0) + left * vn.share);
      left -= left * vn.share;
    }
  }
  const headroom = new Map<RegionId, number>();
  const roomFull = new Map<RegionId, number>();
  const servedOf = (r: PlannerRegion): number => {
    const v = views.get(r.id)!;
    return (demand.get(r.id) ?? 0) * (v.down ? 0 : v.share) + (reaching.get(r.id) ?? 0);
  };
  // What a query/s costs, in capacity units at full load, over the whole fleet, and what each
  // region holds at full load: its capacity units at that cost (ADR 0019). A region's own
  // reading (served ÷ u) is not used: its load lags whatever moved onto it lately (its
  // sessions last, hours for a long tail), and what it serves is known only along its
  // neighbours' ranking — spill placed past the ranking is in its load but not in its served
  // demand — so read alone it promised room that the load took later, or refused room it had.
  // Demand moved between regions leaves the fleet's sums alike, so the fleet's ratio does not
  // lag the move. Every query is served somewhere: the regions in the sums serve all the
  // demand but what the others (down ones none; drained, capped or unmeasured ones their own
  // admitted clients and the spill reaching them) keep. A region being drained or capped is
  // left out of the sums: its sessions stay while its demand goes, which would make every
  // query look dearer. Capacity units are the operator's relative capacities; a region whose
  // reading says it is full anyway (FULL_READING) takes no overflow (below).
  let loadUnits = 0;
  let total = 0;
  for (const q of demand.values()) total += q;
  let kept = 0;
  // The oldest of the readings in the sums: spill newer than it by SPILL_SETTLE_MS is not in
  // their load yet, and is counted where it came from, as it was when they were read.
  let readAt = Infinity;
  for (const r of located) {
    const u = util.get(r.id);
    const v = views.get(r.id)!;
    if (v.down) continue;
    if (u === undefined || v.share < 1) {
      kept += servedOf(r);
      continue;
    }
    loadUnits += u * (r.capacityUnits ?? 1);
    readAt = Math.min(readAt, loadAt.get(r.id) ?? -Infinity);
  }
  for (const h of homes) {
    const v = views.get(h)!;
    if ((spillSince.get(h) ?? Infinity) + SPILL_SETTLE_MS > readAt) kept += (demand.get(h) ?? 0) * (v.down ? 1 : 1 - v.share);
  }
  const servedAll = Math.max(0, total - kept);
  const qpsPerUnit = loadUnits > 0 && servedAll > 0 ? servedAll / loadUnits : Infinity;
  for (const r of located) {
    const v = views.get(r.id)!;
    const u = util.get(r.id);
    const ownServed = (demand.get(r.id) ?? 0) * (v.down ? 0 : v.share);
    if (u === undefined || !Number.isFinite(qpsPerUnit)) continue;
    // What it can serve at full load, q/s.
    const full = (r.capacityUnits ?? 1) * qpsPerUnit;
    // Spill fills a region up to saturation.spillMargin below its saturation point
    // (saturation.kvCacheUse), not to full: load lags admission (sessions last), and a region
    // over the point takes no spill, so filling right up to it switches spill on and off
    // from scrape to scrape. The rest is spread by the room to full below.
    const target = Math.max(0, Math.min(1, s.saturation.kvCacheUse) - (s.saturation.spillMargin ?? 0));
    headroom.set(r.id, v.down ? 0 : Math.max(0, full * target - ownServed));
    // Room before it is full (u = 1), saturated or not: what an unplaceable remainder is spread
    // by. All spill is placed again by this pass (it is not counted as served here), and a
    // region reading full already has none.
    roomFull.set(r.id, v.down || u >= FULL_READING ? 0 : Math.max(0, full - ownServed));
  }
  // A region's part of the unplaceable remainder falls from its room to none as its reading
  // goes from its saturation point to FULL_READING: the forecast cannot see the load it
  // carries now, the reading can, and a region near full gets less of what is left (ADR 0019).
  const taperFrom = Math.min(s.saturation.kvCacheUse, FULL_READING - 0.01);
  const taper = (r: PlannerRegion): number => {
    const u = util.get(r.id) ?? 0;
    return u <= taperFrom ? 1 : Math.max(0, (FULL_READING - u) / (FULL_READING - taperFrom));
  };
  for (const h of homes) {
    const v = views.get(h)!;
    const home = located.find((r) => r.id === h);
    if (!home) continue;
    let left = (demand.get(h) ?? 0) * (v.down ? 1 : 1 - v.share);
    if (left <= 1e-9) continue;
    const sent = left;
    const neighbours = neighboursOf.get(h) ?? [];
    for (const n of neighbours) {
      const vn = views.get(n)!;
      if (vn.down || vn.noSpill) continue;
      const reach = left * vn.share;
      if (reach <= 1e-9) continue;
      const room = headroom.get(n);
      if (room === undefined) {
        left -= reach;
        continue;
      }
      const take = Math.min(reach, room);
      headroom.set(n, room - take);
      roomFull.set(n, Math.max(0, (roomFull.get(n) ?? 0) - take));
      if (take < reach) (limits.get(n) ?? limits.set(n, {}).get(n)!)[h] = round(take / reach);
      left -= take;
    }
    if (left <= 1e-6) continue;
    // Past the neighbours: every other region that can take spill, in proportion to its
    // headroom; what the whole fleet cannot take is unplaced, and spread over every region up
    // and open by its room before full (below: never all onto one).
    const can = (n: RegionId) => {
      const vn = views.get(n);
      return n !== h && vn !== undefined && !vn.down && !vn.refuse && !vn.noSpill && vn.share > 0;
    };
    const amounts = new Map<RegionId, number>();
    const farther = located.filter((r) => can(r.id) && !neighbours.includes(r.id) && (headroom.get(r.id) ?? 0) > 1e-9);
    const room = farther.reduce((x, r) => x + headroom.get(r.id)!, 0);
    const placed = Math.min(left, room);
    if (placed > 1e-9) {
      for (const r of farther) {
        const take = (placed * headroom.get(r.id)!) / room;
        amounts.set(r.id, take);
        headroom.set(r.id, headroom.get(r.id)! - take);
        roomFull.set(r.id, Math.max(0, (roomFull.get(r.id) ?? 0) - take));
      }
    }
    left -= placed;
    // Back home (ADR 0018): a home held below its firm share only by soft holds (its slow
    // start, a grid event's hold and restore after its end) takes its own clients that no
    // region with headroom can take, up to that share: it is up and has the room, and the
    // alternative is pushing full regions over.
    if (left > 1e-6 && !v.down && !v.refuse && v.firm > v.share) {
      const back = Math.min(left, (demand.get(h) ?? 0) * (v.firm - v.share));
      if (back > 1e-9) {
        amounts.set(h, (amounts.get(h) ?? 0) + back);
        left -= back;
        (reasons.get(h) ?? reasons.set(h, []).get(h)!).push(
          `${h}: ${twoDigits(back)} q/s of its own clients that no region with headroom can take stay at home through its slow start or restore (up to share ${round(v.firm)})`,
        );
      }
    }
    if (left > 1e-6) {
      // Reported only beyond a dead band, in two significant digits: measured demand and load
      // jitter from plan to plan, and a report that flickers on and off is no report.
      if (left > Math.max(UNPLACED_MIN_QPS, UNPLACED_MIN_SHARE * sent)) unplaced.set(h, twoDigits(left));
      // Over every region up and open that takes some of its own clients, saturated or not (a
      // saturated one has room before it is full too; limiting this to the regions below
      // their saturation point sent all of it to the one region that read below it at the
      // last scrape: ADR 0019). By the room each has before it is full; where none has any,
      // by capacity.
      const spread = located.filter((r) => {
        const vn = views.get(r.id);
        return r.id !== h && vn !== undefined && !vn.down && !vn.refuse && vn.share > 0;
      });
      const measured = spread.filter((r) => (roomFull.get(r.id) ?? 0) > 1e-9);
      const byRoom = measured.length > 0;
      const weigh = byRoom ? measured : spread;
      // (A region with room reads below FULL_READING, so its tapered weight stays above 0.)
      const weights = weigh.map((r) => (byRoom ? roomFull.get(r.id)! * taper(r) : (r.capacityUnits ?? 1)));
      const weightSum = weights.reduce((x, y) => x + y, 0);
      weigh.forEach((r, i) => {
        const take = (left * weights[i]!) / weightSum;
        amounts.set(r.id, (amounts.get(r.id) ?? 0) + take);
        if (byRoom) roomFull.set(r.id, Math.max(0, roomFull.get(r.id)! - take));
      });
      if (unplaced.has(h)) {
        const words = `${h}: ${left.toFixed(1)} of ${sent.toFixed(1)} q/s of spill could not be placed on ${neighbours.join(', ')}${farther.length > 0 ? ` or the ${farther.length} regions beyond them with headroom` : ''} (no headroom); ${weigh.length > 0 ? `spread over ${weigh.length} regions in proportion to ${byRoom ? 'the room each has before it is full' : 'capacity'}` : "those clients get whenAllDown's answer or stay"}`;
        (reasons.get(h) ?? reasons.set(h, []).get(h)!).push(words);
      }
    }
    const placedBeyond = [...amounts.values()].reduce((x, y) => x + y, 0);
    if (placedBeyond > 1e-9) overflow.set(h, Object.fromEntries([...amounts.entries()].filter(([, a]) => a > 1e-9).sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([n, a]) => [n, round(a / placedBeyond)])));
  }
  return { limits, reasons, unplaced, overflow };
}

/** The spill pass, for the precedence table. */
export const spillPass: PlanPass = {
  name: 'spill',
  module: 'rules/spill.ts',
  kinds: ['load.metrics'],
  reads: "measured demand per home (closed 10-second buckets), every region's view at the newest input, KV-cache use",
  changesAt: 'every plan (re-planned every 10 s with fresh demand)',
  sets: 'per-home admission limits into neighbours by their headroom; overflow past them by headroom, back home through soft holds (ADR 0018), else over every region up and open by its room before full (ADR 0019); unplaced demand',
};
