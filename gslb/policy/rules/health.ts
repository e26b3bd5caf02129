/**
 * Health tallies: the vantages' votes per endpoint at an instant (majority down), when a region came back (slow start), the tally for metrics and the API.
 * A rule of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import type { SignalRecord } from '../../model/snapshot.js';
import { type StalePolicy, phaseAt } from '../settings.js';
import { type RegionRecords, type ViewAcc, type ViewContext, type ViewRule, capText, capWords, markDown } from './rule.js';
import type { HealthScratch } from './shared.js';
import { isoOf } from '../../model/domains.js';

export function healthScratch(health: readonly SignalRecord[]): HealthScratch {
  const keys: string[] = [];
  const keyOf = new Int32Array(health.length).fill(-1);
  health.forEach((r, j) => {
    if (r.fold.kind !== 'health') return;
    let k = keys.indexOf(r.signal.key);
    if (k < 0) k = keys.push(r.signal.key) - 1;
    keyOf[j] = k;
  });
  const n = keys.length;
  return { keys, keyOf, ups: new Int32Array(n), downs: new Int32Array(n), since: new Float64Array(n), lateDowns: 0 };
}

/**
 * The health votes at t (per endpoint, each vantage's stable state; a stale probe votes as the
 * kind's stale policy says), counted into `h` (valid until the next call with it): what
 * healthAt and viewAt read. Returns the endpoints probed and those down.
 */
export function tallyHealth(health: readonly SignalRecord[], h: HealthScratch, t: number, hp: StalePolicy, fresh = Infinity): { probed: number; down: number } {
  const { keyOf, ups, downs, since } = h;
  ups.fill(0);
  downs.fill(0);
  since.fill(-Infinity);
  h.lateDowns = 0;
  for (let j = 0; j < health.length; j++) {
    const k = keyOf[j]!;
    if (k < 0) continue;
    const r = health[j]!;
    const fold = r.fold as Extract<SignalRecord['fold'], { kind: 'health' }>;
    // A probe made at or after `fresh` (the end of a known outage: lossEndedAt) votes what it
    // saw: the failures before were the outage's, so one success is enough to come back
    // (rise 1), and one failure keeps it down. A second success turns the fold's stable state
    // up, and the slow start then runs from that probe (10 s later, at the usual interval).
    const late = r.signal.observedAt >= fresh;
    let vote: boolean | null = late ? fold.lastUp : fold.stableUp;
    if (phaseAt(r, t, hp) === 'stale') vote = hp.then === 'down' ? false : hp.then === 'healthy' ? true : null;
    if (vote === true) {
      ups[k]!++;
      const u = late && !fold.stableUp ? r.signal.observedAt : fold.upSince;
      since[k] = u === undefined ? NaN : Math.max(since[k]!, u);
    } else if (vote === false) {
      downs[k]!++;
      if (late) h.lateDowns++;
    }
  }
  return tallyCounts(h);
}

/**
 * The end of the latest known outage of the region that has ended by t, or Infinity: a trusted
 * physical loss (a power-off or a load-shed order: rules/loss.ts) or a grid fact its source is
 * trusted to drain the region to 0 for (a grid emergency). Health probes made from then on
 * are read by themselves (tallyHealth's `fresh`), and until one says the region is down its
 * down state is the outage's, not a fault (the health rule: back after a known outage, ADR 0019).
 */
export function lossEndedAt(rr: RegionRecords, ctx: ViewContext, t: number): number {
  let end = -Infinity;
  for (const f of rr.facts) {
    if (f.shadow || f.end > t || f.start >= f.end || f.end <= end) continue;
    if (f.cap <= 0 || (f.loss !== undefined && ctx.loss?.get(f)?.status === 'trusted')) end = f.end;
  }
  return end === -Infinity ? Infinity : end;
}

/** Endpoints a tally has votes for, and those down by a majority of them. */
function tallyCounts(h: HealthScratch): { probed: number; down: number } {
  let probed = 0;
  let down = 0;
  for (let k = 0; k < h.ups.length; k++) {
    if (h.ups[k]! + h.downs[k]! === 0) continue;
    probed++;
    if (h.downs[k]! > h.ups[k]!) down++;
  }
  return { probed, down };
}

/**
 * When the region came back up as a whole (slow start): the latest turn up among its up
 * endpoints; NaN when none is up or one of them never turned.
 */
export function cameBackAt(h: HealthScratch): number {
  let back = -Infinity;
  let upEps = 0;
  for (let k = 0; k < h.keys.length; k++) {
    if (h.ups[k]! + h.downs[k]! === 0 || h.downs[k]! > h.ups[k]!) continue;
    upEps++;
    const sk = h.since[k]!;
    back = sk === -Infinity ? NaN : Math.max(back, sk);
  }
  return upEps > 0 ? back : NaN;
}

/** The endpoints a tally found down (by a majority of their vantages), in order. */
export function downEndpoints(h: HealthScratch): string[] {
  return h.keys.filter((_, k) => h.ups[k]! + h.downs[k]! > 0 && h.downs[k]! > h.ups[k]!);
}

/** A region's health probes at one instant, counted as the planner counts them (healthAt). */
export interface HealthTally {
  /** Endpoints (signal keys) with a probe record. */
  keys: string[];
  /** Per endpoint: vantages voting up, voting down. */
  ups: number[];
  downs: number[];
  /** Per endpoint, the latest time an up vote turned up (undefined: one of them never turned). */
  since: (number | undefined)[];
  /** Endpoints with at least one vote. */
  probed: number;
  /** Endpoints a majority of their vantages say are down. */
  downEps: string[];
  /** Every probed endpoint is down: the region is down by health (absent an operator's force-up). */
  down: boolean;
}

/**
 * Health at `t` from a region's health.probe records: per endpoint, a majority of vantage
 * votes (each vantage's stable state; a stale probe votes as the kind's stale policy says).
 */
export function healthAt(health: readonly SignalRecord[], t: number, hp: StalePolicy): HealthTally {
  const h = healthScratch(health);
  const { probed, down } = tallyHealth(health, h, t, hp);
  return {
    keys: h.keys,
    ups: [...h.ups],
    downs: [...h.downs],
    since: Array.from(h.since, (x) => (Number.isNaN(x) ? undefined : x)),
    probed,
    downEps: downEndpoints(h),
    down: probed > 0 && down === probed,
  };
}

/**
 * What a region's health tally (rr.tally, just filled by tallyHealth) decides in viewAt: down
 * (and which endpoints), and when a slow start began if one can apply. At an instant where
 * only votes change, a view with the same outcome as the instant before is that view again:
 * nothing else viewAt reads changes there (overrides, facts, curves, floors and the other
 * records have instants of their own, and slow-start steps too).
 */
export function healthOutcome(h: HealthScratch): string {
  const { probed, down } = tallyCounts(h);
  if (probed > 0 && down === probed) return `down ${downEndpoints(h).join(',')} ${h.lateDowns}`;
  const back = cameBackAt(h);
  return Number.isNaN(back) ? 'up' : `up ${back}`;
}

/** The health rule: down when every probed endpoint failed on a majority of its vantages. */
export const healthRule: ViewRule = {
  name: 'health',
  module: 'rules/health.ts',
  kinds: ['health.probe'],
  derived: ['tally', 'facts'],
  reads: 'health.probe (every vantage, every endpoint); the end of a known outage (a trusted physical loss, a grid drain to 0)',
  changesAt: "a probe's expiry and stale point (votes only: skipped when the votes decide as before)",
  sets: "down (unless forced up); after a known outage's end, until a probe made since says otherwise, a soft cap 0 instead, and one probe decides (ADR 0019)",
  apply(a: ViewAcc): void {
    // Always tallied: the slow-start rule and the planner's vote-only skip read the tally.
    const ended = lossEndedAt(a.rr, a.ctx, a.t);
    const h = tallyHealth(a.rr.byKind['health.probe'], a.rr.tally, a.t, a.s.stale['health.probe'], ended);
    if (a.forceDown || !(h.probed > 0 && h.down === h.probed)) return;
    const id = a.region.id;
    const f = a.forceUp;
    if (f) a.reasons.push(`${id}: health says down (${downEndpoints(a.rr.tally).join(', ')}) but forced up by ${f.actor} (${f.reason}) [${f.id}]`);
    else if (ended !== Infinity && a.rr.tally.lateDowns === 0) {
      // Back after a known outage (ADR 0019): the power came back at `ended` by the outage's own
      // account, and no probe since has failed. Until one succeeds (it is up, rise 1) or fails
      // (down, as ever) the region takes none of its clients but those no region with room
      // can take (a soft hold: the spill pass sends them back home), and no one else's.
      const texts = a.ctx.texts;
      capText(a, 0, texts.get(a.rr, `back ${ended}`) ?? texts.put(a.rr, `back ${ended}`, capWords(id, 0, `health says down (${downEndpoints(a.rr.tally).join(', ')}) but only by probes made before its known outage ended at ${isoOf(ended)}: awaiting a probe; its own clients no region with room can take go to it`)), true);
    } else {
      markDown(a, `${id}: down: every probed endpoint failed on a majority of vantages (${downEndpoints(a.rr.tally).join(', ')})`);
    }
  },
};
