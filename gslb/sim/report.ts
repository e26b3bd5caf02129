/**
 * The simulator's report: the targets checked against a run, the Markdown summary and its
 * JSON twin. Pure (no I/O, no clock): the same SimReport gives the same text.
 *
 * Metric definitions (docs/simulation.md repeats them):
 * - Counts are of sessions that arrived in the measured window, per client class:
 *   TTL-honouring (the client and its resolver honour TTLs), clamped-resolver (the resolver
 *   raises short TTLs to its floor), TTL-ignoring (the client keeps its address until its
 *   connection breaks).
 * - sent to a dark region: sessions with at least one attempt (a new connection or a new
 *   stream on a pooled one) sent to the event's region while the event was in force (T ≤ t < E):
 *   the sessions a policy started toward a region while it was dark (every such attempt is
 *   refused).
 * - cut: sessions active on a region when it lost power (at T of a power-off event), split by
 *   their start: before the announcement — the **unavoidable bound**: no steering after the
 *   announcement could have moved them — and after it.
 * - failed: every attempt refused (the retries used up); started over capacity: started on a
 *   region whose load was already at or above its capacity.
 * - added distance: km from the client's metro to the region that served the session, minus
 *   km to its nearest region, over sessions of the event regions' own clients started from
 *   the announcement (or T) to 15 minutes after E; mean and 95th percentile (1 km bins).
 * - peak utilisation: the highest load ÷ capacity of each region in the window (capacity as
 *   it was at that instant), the share of that load from clients of other homes (spill), and
 *   the time spent over capacity (sampled every second); over capacity by spill: load above
 *   capacity while clients of other homes are on the region, min(spill, load − capacity),
 *   counted while the reachable fleet has room: the capacity of the regions not announced to
 *   lose power (from the announcement to the event's end) holds the expected demand.
 * - unplaced demand: the plan's `unplaced` (q/s per home) sampled every simulated second.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { formatDuration } from './scenario.js';
import { simClassLeadMs, simDrainLeadMs, POLICY_TITLES, type PolicyName } from './policies.js';
import { DIST_AFTER_MS, type ByClass, type CapCheck, type Cls, type EventRt, type PolicyResult } from './engine.js';
import type { SimReport } from './run.js';
import { CLASS_IGNORING, CLASS_TITLES, type ClassName } from './world.js';
import type { WindowOccurrence } from '../model/windows.js';

export type TargetId = 'a' | 'b' | 'c' | 'd' | 'e';
export type TargetStatus = 'met' | 'not met' | 'n/a';

/**
 * One target line (the report contract, docs/simulation.md "The report contract"): met when
 * `measured` ≤ `bound`; n/a when it cannot apply or its quantity is 0 of 0, `why` saying which.
 */
export interface Target {
  /** (a) … (e): the issue's targets. */
  id: TargetId;
  /** The event's id (events[].id); null for (d) over the part of the window outside every event's span. */
  event: string | null;
  /** The client class counted (CLASS_TITLES), or `all` for targets on load ((d), (e)). */
  class: ClassName | 'all';
  status: TargetStatus;
  /** What was measured, and the most it may be. */
  measured: number;
  bound: number;
  /** The figures behind the status, and for n/a why it cannot apply. */
  why: string;
  /** The target in words. */
  what: string;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (x: number, digits = 0) => `${(x * 100).toFixed(digits)} %`;
/** q/s with one decimal, two below 0.1 (a trickle is not 0.0). */
const qps = (x: number) => x.toFixed(x < 0.1 ? 2 : 1);

/**
 * Cut at event e's T, of class c, under policy x: in all, split by start before and after the
 * announcement (of those before, `spillBefore`: other homes' clients the policy had placed on
 * the region, which the bound does not count); and the unavoidable bound, which is the same for every policy (PolicyResult.bound).
 */
export function eventCuts(x: PolicyResult, e: number, c: Cls): { bound: number; before: number; spillBefore: number; after: number; total: number } {
  const before = x.cutBeforeAnnounce[e]![c];
  const after = x.cutAfterAnnounce[e]![c];
  return { bound: x.bound[e]![c], before, spillBefore: x.cutSpillBeforeAnnounce[e]![c], after, total: before + after };
}

/** Every class index, in CLASS_TITLES order. */
export const CLASSES: readonly Cls[] = [0, 1, 2, 3];
const round1 = (x: number) => Math.round(x * 10) / 10;
/** A bound to one decimal, rounded down (an integer count is then met by it exactly when by the bound itself; 1e-9 absorbs float error). */
const floor1 = (x: number) => Math.floor(x * 10 + 1e-9) / 10;
const fmt1 = (x: number) => round1(x).toLocaleString('en-US');

/**
 * The targets for GridSteer (issues 17 and 30), checked against the run. Per power-off event
 * and per client class c (its lead L(c): the drain lead, with the clamp's TTL as the resolver
 * floor for clamped resolvers — simClassLeadMs):
 * (a) sessions sent to the region while it is dark and the reachable fleet had room at that
 *     instant, plus sessions that failed on the region's own gateway refusing them before T:
 *     0 (TTL-ignoring: at most one per TTL-ignoring client of the region's with a session while
 *     it is dark — such a client keeps its address until a refusal breaks it) — applies when
 *     the notice is at least L(c);
 * (b) sessions cut ≤ 1.10 × the unavoidable bound + 0.1 % of the sessions alive on the region
 *     at T without steering (both the same for every policy: PolicyResult.bound) — applies when
 *     the notice is at least L(c) and the region goes dark at the event's T;
 * (c) with ≥ 50 minutes' notice and reactive failover run: GridSteer's cuts ≤ reactive's −
 *     0.9 × (reactive's − the bound), i.e. it avoids 90 % of what reactive cuts above the bound.
 * (d) per event's span (announcement to 15 minutes after E) and for the rest of the window: no
 *     second with a region over capacity by spill while the fleet had room elsewhere (SpillSpan);
 *     what the fleet could not hold is reported beside it as unplaced;
 * (e) per partial cap (every throttle event, told or not): the capped level held on the
 *     region's simulated load from max(T, when the policy could act) to E (CapCheck).
 * `leadMs` overrides the drain lead of every class (tests with worlds built by hand).
 */
export function evaluateTargets(rep: Pick<SimReport, 'world' | 'events' | 'results'>, o: { leadMs?: number } = {}): Target[] {
  const gs = rep.results.find((r) => r.policy === 'gridsteer');
  const re = rep.results.find((r) => r.policy === 'reactive');
  const out: Target[] = [];
  const ids = rep.world.regions.map((r) => r.id);
  if (!gs) return [];
  const notice = (e: EventRt) => e.T - e.learn;
  for (const e of rep.events) {
    const id = ids[e.region]!;
    if (e.kind === 'throttle') {
      out.push(capTarget(gs.capChecks[e.idx]!, e, id), spillTarget(gs, e.idx, e, ids));
      continue;
    }
    // A claim with no physical effect: nothing goes dark or is capped; only spill is judged (what it costs is in the figures: where the region's clients went, how far).
    if (e.kind === 'none') {
      out.push(spillTarget(gs, e.idx, e, ids));
      continue;
    }
    const mine: Target[] = [];
    for (const c of CLASSES) {
      const cls = CLASS_TITLES[c];
      const lead = o.leadMs ?? simClassLeadMs(rep.world, c);
      const nTxt = `notice ${formatDuration(notice(e))}, ${cls} lead ${formatDuration(lead)}`;
      const short = notice(e) < lead;
      const base = { event: e.id, class: cls };

      // (a) Room is judged per instant: a session sent to the dark region is excused only if the
      // reachable fleet had no room at the instant it was sent (engine.ts, roomNow).
      const sent = gs.sentToEventRegion[e.idx]![c];
      const withRoom = gs.sentWithRoom[e.idx]![c];
      const refused = gs.failedRefusedBeforeT[e.idx]![c];
      const span = gs.eventSpanMs[e.idx]!;
      const roomMs = gs.eventRoomMs[e.idx]!;
      const aMeasured = withRoom + refused;
      const aBound = c === CLASS_IGNORING ? gs.ignoringClients[e.idx]! : 0;
      const aWhat = `(a) ${cls} sessions sent to ${id} while it is dark and the fleet has room, or failed on its gateway's refusal before T: ${c === CLASS_IGNORING ? 'at most one per TTL-ignoring client of its own with a session then' : '0'}`;
      const roomTxt = roomMs === span ? 'the reachable fleet had room throughout' : `the reachable fleet had room for ${formatDuration(roomMs)} of ${formatDuration(span)}; ${fmt(sent - withRoom)} sent while it had none (not counted)`;
      const aFig = `${fmt(withRoom)} sent while dark with room, ${fmt(refused)} failed on ${id}'s refusal before T${c === CLASS_IGNORING ? ` (${fmt(aBound)} TTL-ignoring clients of ${id}'s with a session while it is dark)` : ''}; ${roomTxt}`;
      const homeArr = gs.homeArrivals[e.idx]![c];
      if (short) mine.push({ ...base, id: 'a', what: aWhat, status: 'n/a', measured: aMeasured, bound: aBound, why: `${nTxt}: less notice than the lead; measured ${aFig}` });
      else if (roomMs === 0 && refused === 0) mine.push({ ...base, id: 'a', what: aWhat, status: 'n/a', measured: aMeasured, bound: aBound, why: `the reachable fleet had no room at any instant of ${e.id} (${formatDuration(span)}); ${fmt(sent)} sent while it had none` });
      else if (homeArr === 0 && aMeasured === 0) mine.push({ ...base, id: 'a', what: aWhat, status: 'n/a', measured: 0, bound: aBound, why: `no ${cls} session of ${id}'s own clients while it is dark, none sent there or refused (0 of 0)` });
      else mine.push({ ...base, id: 'a', what: aWhat, status: aMeasured <= aBound ? 'met' : 'not met', measured: aMeasured, bound: aBound, why: `${aFig}; ${nTxt}` });

      // (b) Cuts against the one bound.
      const k = eventCuts(gs, e.idx, c);
      const alive = gs.aliveAtT[e.idx]![c];
      const limit = floor1(1.1 * k.bound + 0.001 * alive);
      const bWhat = `(b) ${cls} sessions cut at ${id} ≤ 1.10 × the unavoidable bound + 0.1 % of those alive there at T`;
      // Spill placed on the region before anyone could know (a drill's drain, spill by room) is the policy's own: the bound does not grow with it, the figure says how much of the cut it is.
      const spillTxt = k.spillBefore > 0 ? ` — ${fmt(k.spillBefore)} of them other homes' clients placed there as spill` : '';
      const bFig = `${fmt(k.total)} cut (${fmt(k.before)} started before the announcement${spillTxt}, ${fmt(k.after)} after) against ${fmt1(limit)} = 1.10 × ${fmt(k.bound)} (the unavoidable bound, the same for every policy) + 0.1 % × ${fmt(alive)} alive there at T without steering`;
      const darkBy = rep.events.find((x) => x.kind === 'power-off' && x.region === e.region && x.idx !== e.idx && x.T <= e.T && x.E >= e.T);
      const already = `${id} was already dark at ${e.id}'s T${darkBy ? ` (${darkBy.id} in force)` : ''}: nothing is cut then (0 of 0)`;
      const bBase = { ...base, id: 'b' as const, what: bWhat, measured: k.total, bound: limit };
      if (!e.goesDark) mine.push({ ...bBase, status: 'n/a', why: `${already}; measured ${fmt(k.total)}` });
      else if (alive === 0 && k.total === 0) mine.push({ ...bBase, status: 'n/a', why: `no ${cls} session alive on ${id} at T without steering, none cut (0 of 0)` });
      else if (short) mine.push({ ...bBase, status: 'n/a', why: `${nTxt}: less notice than the lead; measured ${bFig}` });
      else mine.push({ ...bBase, status: k.total <= limit ? 'met' : 'not met', why: bFig });

      // (c) Against reactive failover: avoid 90 % of what it cuts above the bound.
      const cWhat = `(c) ${cls} cuts at ${id} ≤ reactive's − 0.9 × (reactive's − the bound)`;
      const cBase = { ...base, id: 'c' as const, what: cWhat, measured: k.total };
      if (!e.goesDark) mine.push({ ...cBase, status: 'n/a', bound: 0, why: already });
      else if (notice(e) < 50 * 60_000) mine.push({ ...cBase, status: 'n/a', bound: 0, why: `notice ${formatDuration(notice(e))} < 50m` });
      else if (!re) mine.push({ ...cBase, status: 'n/a', bound: 0, why: 'reactive failover was not run' });
      else {
        const r = eventCuts(re, e.idx, c);
        const avoidable = r.total - k.bound;
        const cBound = floor1(r.total - 0.9 * avoidable);
        if (avoidable <= 0) mine.push({ ...cBase, status: 'n/a', bound: r.total, why: `reactive cut ${fmt(r.total)}, no more than the bound ${fmt(k.bound)}: nothing to avoid (0 of 0)` });
        else {
          const avoided = r.total - k.total;
          mine.push({
            ...cBase,
            status: k.total <= cBound ? 'met' : 'not met',
            bound: cBound,
            why: `reactive ${fmt(r.total)}, GridSteer ${fmt(k.total)}, bound ${fmt(k.bound)}: avoided ${fmt(avoided)} of ${fmt(avoidable)} (${pct(avoided / avoidable, 1)}; ${pct(1 - k.total / r.total, 1)} fewer cuts, ${pct(1 - k.bound / r.total, 1)} at the bound)`,
          });
        }
      }
    }
    // Target by target, each in class order.
    out.push(...mine.sort((x, y) => x.id.localeCompare(y.id)), spillTarget(gs, e.idx, e, ids));
  }
  out.push(spillTarget(gs, rep.events.length, null, ids));
  return out;
}

/**
 * Target (e) for one partial cap (PolicyResult.capChecks): the capped level held on the
 * region's simulated load from max(T, free) to E, judged every second; sessions started before
 * `free` (no steering could have moved them) are reported, not judged.
 */
function capTarget(cc: CapCheck, e: EventRt, id: string): Target {
  const at = (t: number) => (t === e.T ? 'T' : `T ${t < e.T ? '−' : '+'} ${formatDuration(Math.abs(t - e.T))}`);
  const what = `(e) ${id}'s capped level (${pct(1 - e.share)} of its capacity: ${fmt(cc.capacity)} sessions) held on its load from ${at(cc.from)} to the cap's end`;
  const base = { id: 'e' as const, event: e.id, class: 'all' as const, what, measured: cc.overMs / 1000, bound: 0 };
  const learnt = `sessions started there from ${at(cc.free)} on (${formatDuration(cc.free - e.learn)} after anyone could learn of the cap, at ${at(e.learn)}) are the policy's`;
  if (cc.spanMs <= 0) return { ...base, status: 'n/a', why: `the cap ends (or the window does) before ${at(cc.from)}: 0 of 0` };
  const judged =
    cc.overMs === 0
      ? `never over its level with such sessions on it in ${formatDuration(cc.spanMs)}`
      : `over its level with such sessions on it for ${formatDuration(cc.overMs)} of ${formatDuration(cc.spanMs)}, by up to ${pct(cc.peakExcess, 1)} of its capacity then`;
  return {
    ...base,
    status: cc.overMs === 0 ? 'met' : 'not met',
    why: `${learnt}; ${judged}; reported, not judged: over capacity at all for ${formatDuration(cc.overAnyMs)}, its load at ${at(cc.from)} ${fmt(cc.loadAtFrom)} (${fmt(cc.loadAtFrom - cc.newLoadAtFrom)} of it sessions started before ${at(cc.free)}), ${fmt(cc.startsAfter)} sessions started there in the span`,
  };
}

/** An event's effect on its region, in words. */
export function effectWords(e: Pick<EventRt, 'kind' | 'share'>): string {
  return e.kind === 'power-off' ? 'no power: stops serving' : e.kind === 'throttle' ? `throttle: ${pct(e.share)} of GPUs lost` : 'no physical effect: a claim only';
}

/** Where a span of target (d) runs, in words. */
function spanWords(e: EventRt | undefined): string {
  return e ? `from ${e.id}'s announcement${e.announce > e.T ? ' (T)' : ''} to ${formatDuration(DIST_AFTER_MS)} after its end` : 'outside every event\'s span';
}

/**
 * Target (d) over one span (PolicyResult.spillSpans): no second with a region over capacity by
 * spill while the fleet had room elsewhere. The fleet's overflow (load the reachable fleet could
 * not hold) is reported beside it as unplaced, not judged.
 */
function spillTarget(gs: PolicyResult, span: number, e: EventRt | null, ids: string[]): Target {
  const sp = gs.spillSpans[span]!;
  const what = `(d) no region over capacity by spill while the fleet has room elsewhere, ${spanWords(e ?? undefined)}`;
  const base = { id: 'd' as const, event: e ? e.id : null, class: 'all' as const, what, measured: sp.judgedMs / 1000, bound: 0 };
  const unplaced =
    sp.overflowMs > 0
      ? `unplaced (not judged: the reachable fleet's load above its capacity, which it could not hold) for ${formatDuration(sp.overflowMs)}, up to ${fmt(sp.overflowPeak)} sessions (${pct(sp.overflowPeakShare, 1)} of its capacity), ${fmt(sp.overflowSessionS / 3600)} session-hours`
      : 'nothing unplaced (the reachable fleet held its load throughout)';
  if (sp.spanMs === 0) return { ...base, status: 'n/a', why: 'the span is outside the measured window (0 of 0)' };
  const regions = sp.regionMs.map((ms, r) => ({ ms, r })).filter((x) => x.ms > 0);
  const judged =
    sp.judgedMs === 0
      ? `no second of ${formatDuration(sp.spanMs)} over capacity by spill while the fleet had room elsewhere`
      : `over capacity by spill while the fleet had room elsewhere for ${formatDuration(sp.judgedMs)} of ${formatDuration(sp.spanMs)}, up to ${fmt(sp.judgedPeak)} sessions (${pct(sp.judgedPeakShare, 1)} of the reachable capacity): ${regions.map((x) => `${ids[x.r]} ${formatDuration(x.ms)}, up to ${pct(sp.regionPeak[x.r]!, 1)} of its capacity`).join(', ')}`;
  return { ...base, status: sp.judgedMs === 0 ? 'met' : 'not met', why: `${judged}; ${unplaced}` };
}

const utc = (t: number) => new Date(t).toISOString().slice(11, 16);
const rel = (t: number, T: number) => {
  const d = t - T;
  return d === 0 ? 'T' : `T ${d < 0 ? '−' : '+'} ${formatDuration(Math.abs(d))}`;
};

function eventRow(rep: SimReport, e: EventRt): string {
  const sc = rep.scenario.events[e.idx]!;
  const told = sc.facts.length === 0 ? 'nothing: its own scrapes and probes only' : sc.facts.map((f) => `${f.kind} ${String(f.value.type ?? '')}${f.value.level !== undefined ? ` level ${String(f.value.level)}` : ''} from ${f.source}`).join('; ');
  const changes = sc.changes.map((c) => `; at ${utc(rep.scenario.epoch + c.atMs)} ${c.cancelled ? 'cancelled' : `the end moved to ${utc(rep.scenario.epoch + c.endMs!)}`}`).join('');
  const effect = effectWords(e);
  const announced = sc.noticeMs > 0 ? `${rel(e.announce, e.T)} (${utc(e.announce)})` : 'at T (no notice)';
  return `| ${e.id} | ${rep.world.regions[e.region]!.id} | ${effect} | ${announced} | ${utc(e.T)} | ${utc(e.E)} | ${told}${changes} |`;
}

/** One window occurrence in words: which, when, and whether it ran, was skipped or was aborted (the planner's words). */
function windowWords(o: WindowOccurrence): string {
  const hms = (t: number) => new Date(t).toISOString().slice(11, 19);
  const outcome = o.skipped !== undefined ? `skipped (${o.skipped})` : o.aborted ? `aborted at ${hms(o.aborted.at)} (${o.aborted.why.replace(/^practice run aborted at \S+: /, '')})` : o.kind === 'practice' ? 'ran' : 'acted';
  return `${o.window} (${o.kind}, ${o.regions.join(', ')}, to ${o.cap}) ${utc(o.start)}–${utc(o.end)} UTC: ${outcome}`;
}

/** The Markdown report. `command` is the command line that made it; `chart` the SVG's file name (relative), if any. */
export function renderMarkdown(rep: SimReport, o: { command?: string; chart?: string; json?: string } = {}): string {
  const sc = rep.scenario;
  const w = rep.world;
  const R = w.regions.length;
  const L: string[] = [];
  const results = rep.results;
  const cols = results.map((r) => POLICY_TITLES[r.policy]);
  const header = (first: string) => [`| ${first} | ${cols.join(' | ')} |`, `| --- | ${cols.map(() => '---:').join(' | ')} |`];
  const lead = simDrainLeadMs(w);
  L.push(`# ${sc.title}`, '');
  if (sc.description) L.push(sc.description, '');
  const windowH = (rep.timeline.windowEnd - rep.timeline.windowStart) / 3_600_000;
  L.push(
    `Scenario \`${sc.name}\`, seed ${rep.seed}, scale ${rep.scale}: ${fmt(sc.world.sessionsPerHour * rep.scale)} sessions per hour, ${formatDuration(rep.timeline.windowEnd - rep.timeline.windowStart)} measured (${utc(rep.timeline.windowStart)}–${utc(rep.timeline.windowEnd)} UTC on ${new Date(rep.timeline.windowStart).toISOString().slice(0, 10)}) after ${formatDuration(sc.world.warmupMs)} of warm-up.` +
      (windowH * 3_600_000 < sc.hoursMs ? ` Shortened from ${formatDuration(sc.hoursMs)} with --hours: facts announced before the window are known from its start.` : ''),
  );
  if (o.command) L.push('', `Made with \`${o.command}\`.`);
  if (o.json) L.push('', `Every figure below, and the time series, are also in [${o.json}](${o.json}).`);
  L.push('', '## Events', '', `GridSteer's drain lead (max(ramp, TTL0 − g) + g + S + m, g = max(Tmin, F), S at its minimum: ADR 0016) is ${formatDuration(lead)}.`, '', '| event | region | effect | announced | T (UTC) | E (UTC) | GridSteer is told |', '| --- | --- | --- | --- | --- | --- | --- |');
  for (const e of rep.events) L.push(eventRow(rep, e));
  if (sc.operator.length > 0) {
    const what = (a: (typeof sc.operator)[number]) =>
      `${utc(sc.epoch + a.atMs)} ${a.action} ${a.region ?? a.source ?? a.principal ?? ''}${a.value ? ` to ${a.value}` : ''}${a.byMs !== undefined ? ` by ${utc(sc.epoch + a.byMs)}` : ''}${a.untilMs !== undefined ? ` until ${utc(sc.epoch + a.untilMs)}` : ''} (${a.reason})`;
    L.push('', `The operator (GridSteer's overrides; the other policies ignore them): ${sc.operator.map(what).join('; ')}.`);
  }
  const occ = rep.results.find((x) => x.policy === 'gridsteer')?.windows;
  if (occ) L.push('', `Recurring windows (GridSteer's own drains: the world and the other policies ignore them), as GridSteer's last plan listing each occurrence has it: ${occ.length === 0 ? 'no occurrence in the window' : occ.map(windowWords).join('; ')}.`);

  L.push('', '## The world', '');
  const cr = sc.world.cutRetry;
  const cyc = sc.world.dailyCycle;
  const hk = sc.policies.gridsteer.hook;
  L.push(
    `${fmt(w.subnetMetro.length)} client /24s in ${w.metros.length} metros, ${w.clientsPerSubnet} clients each; ${fmt(w.resolverClamps.length)} resolvers, ${pct(sc.world.clampingResolvers)} of which clamp TTLs up to ${sc.world.clampTtlS} s and ${pct(sc.world.noEcsResolvers)} send no ECS (one answer, for the resolver's location, cached for every /24 behind it); ${pct(sc.world.ttlIgnoringClients)} of clients ignore TTLs. Demand by class: ${CLASS_TITLES.map((c, i) => `${c} ${pct(w.classShare[i]!, 1)}`).join(', ')}. Mean session ${(w.meanLengthMs / 1000).toFixed(1)} s, so ${fmt(w.expectedConcurrent)} concurrent sessions are expected on average; the fleet's capacity is ${sc.world.fleetHeadroom} × that, shared by capacity units. Regions from \`${sc.regionsFrom}\`.`,
    '',
    `${cr.share > 0 ? `Clients retry ${pct(cr.share)} of cut sessions ${formatDuration(cr.delayMs)} after the cut, resolving again.` : 'Cut sessions are not retried.'} ${cyc.amplitude > 0 ? `Demand follows a daily cycle: ± ${pct(cyc.amplitude)} around its mean, peaking at ${cyc.peakHour} h local solar time in each metro.` : 'Demand is flat over the day.'} Reactive failover's checks fail ${sc.policies.reactive.check === 'load' ? 'while a region is dark or loaded above its capacity' : 'while one of its events is in force'}. GridSteer's drain hook: ${hk.enabled ? `${hk.delayMs === 0 && hk.failureRate === 0 ? 'every call delivered within the simulated second' : `delivered ${formatDuration(hk.delayMs)} after a successful attempt, ${pct(hk.failureRate)} of attempts failing (${hk.retries} retries from ${hk.retryBaseMs < 1000 ? `${hk.retryBaseMs}ms` : formatDuration(hk.retryBaseMs)}, doubling)`}; the gateway refuses new streams from the plan's refuse steps${hk.refuse ? '' : ' (off here)'} and ${hk.progressiveGoaway ? 'sends GOAWAY to every connection progressively up to a step\'s goawayBy when the plan gives one' : 'sends GOAWAY by share only (progressive GOAWAY off)'}.` : 'none (the gateways do nothing).'}`,
    '',
    '| region | capacity units | capacity (concurrent sessions) | own clients (expected concurrent) | utilisation by own clients |',
    '| --- | ---: | ---: | ---: | ---: |',
  );
  for (let r = 0; r < R; r++) {
    L.push(`| ${w.regions[r]!.id} | ${w.regions[r]!.capacityUnits} | ${fmt(w.capacity[r]!)} | ${fmt(w.expectedHomeConcurrent[r]!)} | ${pct(w.expectedHomeConcurrent[r]! / w.capacity[r]!)} |`);
  }

  const classTable = (cls: Cls) => {
    L.push('', `### ${CLASS_TITLES[cls]} clients`, '', ...header('sessions'));
    const row = (name: string, f: (x: PolicyResult) => string) => L.push(`| ${name} | ${results.map(f).join(' | ')} |`);
    row('arrived', (x) => fmt(x.arrivals[cls]));
    for (const e of rep.events) {
      const id = w.regions[e.region]!.id;
      if (e.kind === 'power-off') {
        row(`sent to ${id} while ${e.id} has it dark`, (x) => fmt(x.sentToEventRegion[e.idx]![cls]));
        row(`… of them while the reachable fleet had room (at that instant)`, (x) => fmt(x.sentWithRoom[e.idx]![cls]));
        row(`failed with an attempt on ${id} while dark / failed on its gateway's refusal before T`, (x) => `${fmt(x.failedDark[e.idx]![cls])} / ${fmt(x.failedRefusedBeforeT[e.idx]![cls])}`);
        row(`cut at ${id} when ${e.id} took its power`, (x) => fmt(eventCuts(x, e.idx, cls).total));
        row(`… the **unavoidable bound** (the same for every policy)`, (x) => fmt(eventCuts(x, e.idx, cls).bound));
        row(`… cut: started before / after the announcement`, (x) => `${fmt(eventCuts(x, e.idx, cls).before)} / ${fmt(eventCuts(x, e.idx, cls).after)}`);
        row(`… of those started before it, other homes' clients (spill; not in the bound)`, (x) => fmt(eventCuts(x, e.idx, cls).spillBefore));
      } else {
        row(`sent to ${id} while ${e.id} is in force`, (x) => fmt(x.sentToEventRegion[e.idx]![cls]));
        row(`… started there (it still serves)`, (x) => fmt(x.startedOnEventRegion[e.idx]![cls]));
      }
    }
    row('cut (active on a region when it lost power)', (x) => fmt(x.cut[cls]));
    row('failed (every attempt refused)', (x) => fmt(x.failed[cls]));
    row('started on a region at or over capacity', (x) => fmt(x.startedOverCapacity[cls]));
    row('attempts refused', (x) => fmt(x.refusedAttempts[cls]));
    if (sc.world.cutRetry.share > 0) row('cut sessions retried: started / failed / tried a dark region first', (x) => `${fmt(x.cutRetry.retried[cls])}: ${fmt(x.cutRetry.started[cls])} / ${fmt(x.cutRetry.failed[cls])} / ${fmt(x.cutRetry.sentDark[cls])}`);
    row(`added distance of the event regions' clients, mean / p95 (km)`, (x) => `${fmt(x.addedKm.mean[cls])} / ${fmt(x.addedKm.p95[cls])}`);
  };
  L.push('', '## Results');
  for (const c of CLASSES) classTable(c);
  L.push('', '### Whole fleet', '', ...header(''));
  const gsOnly = (f: (x: PolicyResult) => string) => results.map((x) => (x.policy === 'gridsteer' ? f(x) : '–')).join(' | ');
  L.push(`| DNS answers computed (resolver cache misses) | ${results.map((x) => fmt(x.dnsQueries)).join(' | ')} |`);
  L.push(`| GOAWAYs sent by gateways (drain hook) | ${gsOnly((x) => fmt(x.goaways))} |`);
  L.push(`| drain-hook calls: delivered / late (after a failed attempt) / given up / abandoned for a newer state | ${gsOnly((x) => `${fmt(x.hook.calls)}: ${fmt(x.hook.delivered)} / ${fmt(x.hook.late)} / ${fmt(x.hook.gaveUp)} / ${fmt(x.hook.abandoned)}`)} |`);
  L.push(`| drain-hook failed attempts; delivery lag mean / max | ${gsOnly((x) => `${fmt(x.hook.failedAttempts)}; ${formatDuration(x.hook.delivered ? Math.round(x.hook.sumLagMs / x.hook.delivered / 1000) * 1000 : 0)} / ${formatDuration(x.hook.maxLagMs)}`)} |`);
  L.push(`| plans made | ${gsOnly((x) => fmt(x.plans))} |`);

  L.push('', '### Peak load ÷ capacity per region (share of it from spill; time over capacity)', '', ...header('region'));
  for (let r = 0; r < R; r++) {
    const cell = (x: PolicyResult) => {
      const u = x.peakUtil[r]!;
      const sp = ` (${pct(x.peakSpillShare[r]!)} spill)`;
      return u > 1 ? `**${pct(u)}**${sp} (${formatDuration(x.overCapacityMs[r]!)})` : `${pct(u)}${sp}`;
    };
    L.push(`| ${w.regions[r]!.id} | ${results.map(cell).join(' | ')} |`);
  }
  L.push(
    '',
    'Over capacity **by spill** while the fleet had room elsewhere, sampled every second over the whole window (target d): load above capacity with clients of other homes on the region, at seconds when the spill excess of the regions not announced to lose power was more than the load they could not hold between them (their overflow: demand the fleet could not hold, reported as unplaced below, not judged); the highest part of the judged excess the region carried, ÷ its capacity:',
    '',
    ...header('region'),
  );
  for (let r = 0; r < R; r++) {
    const cell = (x: PolicyResult) => {
      return x.spillOverMs[r]! > 0 ? `**${formatDuration(x.spillOverMs[r]!)}**, up to ${pct(x.spillOverPeak[r]!, 1)}` : '0s';
    };
    L.push(`| ${w.regions[r]!.id} | ${results.map(cell).join(' | ')} |`);
  }

  L.push('', '### Demand the fleet could not hold (unplaced: the reachable fleet\'s load above its capacity)', '', ...header('span'));
  for (let i = 0; i <= rep.events.length; i++) {
    const sp = (x: PolicyResult) => x.spillSpans[i]!;
    const cell = (x: PolicyResult) => (sp(x).overflowMs > 0 ? `${formatDuration(sp(x).overflowMs)}, up to ${fmt(sp(x).overflowPeak)} sessions (${pct(sp(x).overflowPeakShare, 1)}); ${fmt(sp(x).overflowSessionS / 3600)} session-hours` : '–');
    L.push(`| ${spanWords(rep.events[i])} | ${results.map(cell).join(' | ')} |`);
  }

  const gs = results.find((x) => x.policy === 'gridsteer');
  if (gs) {
    L.push('', '### Unplaced demand (GridSteer\'s plan)', '');
    const u = gs.unplaced;
    if (u.seconds === 0) L.push('The plan placed all measured demand throughout the window (`unplaced` absent).');
    else {
      L.push(
        `Some demand was unplaced for ${formatDuration(u.seconds * 1000)} of the window: ${fmt(u.queries)} queries in all, at most ${u.peakQps.toFixed(1)} q/s (at ${new Date(u.peakAt).toISOString().slice(11, 19)}). It appeared or vanished ${fmt(u.flips)} times and changed ${fmt(u.changes)} times (sampled every second).`,
        '',
        '| from (UTC) | mean unplaced, q/s | per home |',
        '| --- | ---: | --- |',
      );
      const s = gs.series;
      const per = Math.max(1, Math.ceil(s.n / 24));
      for (let b0 = 0; b0 < s.n; b0 += per) {
        const homes = new Float64Array(R);
        let n = 0;
        for (let b = b0; b < Math.min(s.n, b0 + per); b++, n++) for (let r = 0; r < R; r++) homes[r] = homes[r]! + s.unplaced[b * R + r]!;
        const tot = homes.reduce((a, x) => a + x, 0) / n;
        if (tot <= 0) continue;
        const list = Array.from(homes, (x, r) => ({ x: x / n, r }))
          .filter((h) => h.x > 0)
          .sort((a, b) => b.x - a.x)
          .map((h) => `${w.regions[h.r]!.id} ${qps(h.x)}`)
          .join(', ');
        L.push(`| ${utc(s.t0 + b0 * s.bucketMs)} | ${qps(tot)} | ${list} |`);
      }
    }
  }

  const vs = versusReactive(rep);
  if (vs.length > 0) {
    L.push('', '## GridSteer against reactive failover', '', 'Sessions cut at T, per power-off event: in all and per client class; **GridSteer cut more** flags any line where it cut more than reactive failover.', '', '| event | class | reactive failover | GridSteer | GridSteer against reactive |', '| --- | --- | ---: | ---: | --- |');
    const words = (g: number, r: number) => (g > r ? `**GridSteer cut more** (${fmt(g - r)} more)` : r === 0 ? 'both 0' : `${pct(1 - g / r, 1)} fewer`);
    for (const v of vs) {
      L.push(`| ${v.event} | all | ${fmt(v.reactive)} | ${fmt(v.gridsteer)} | ${words(v.gridsteer, v.reactive)} |`);
      for (const c of CLASS_TITLES) L.push(`| ${v.event} | ${c} | ${fmt(v.byClass[c].reactive)} | ${fmt(v.byClass[c].gridsteer)} | ${words(v.byClass[c].gridsteer, v.byClass[c].reactive)} |`);
    }
  }

  L.push('', '## Targets (GridSteer)', '', 'Each line is met when what was measured is at most its bound, per event and client class (load: `all`); n/a says why it cannot apply. The definitions are in docs/simulation.md (the targets and the report contract).');
  const targets = evaluateTargets(rep);
  const groups = [...rep.events.map((e) => e.id), null];
  for (const g of groups) {
    const mine = targets.filter((t) => t.event === g);
    if (mine.length === 0) continue;
    const e = rep.events.find((x) => x.id === g);
    L.push('', `### ${e ? `${e.id} (${w.regions[e.region]!.id}, ${effectWords(e)})` : 'Outside every event\'s span'}`, '', '| target | class | status | measured | at most | why |', '| --- | --- | --- | ---: | ---: | --- |');
    for (const t of mine) L.push(`| ${t.what.replace(/\|/g, '\\|')} | ${t.class} | **${t.status}** | ${fmt1(t.measured)} | ${fmt1(t.bound)} | ${t.why.replace(/\|/g, '\\|')} |`);
  }
  if (o.chart) {
    L.push('', '## Traffic share per region', '', `![Share of sessions started per region, per minute, one panel per policy](${o.chart})`, '');
    L.push('Each panel stacks, per minute, the share of sessions that started on each region; grey is sessions that failed (every attempt refused). The dashed line is the load on the event region as a share of its normal capacity. Framed in red: the event (T to E); dotted red: the announcement.');
  }
  L.push('');
  return L.join('\n');
}

/** One line per policy for a terminal: the headline figures (per class: TTL-honouring/clamped/ignoring). */
export function summaryLines(rep: SimReport): string[] {
  const c3 = (x: ByClass) => x.map(fmt).join('/');
  return rep.results.map((x) => {
    const sent = rep.events.map((e) => c3(x.sentToEventRegion[e.idx]!)).join(',');
    const bound = rep.events.filter((e) => e.kind === 'power-off').map((e) => c3(x.bound[e.idx]!)).join(',');
    return `${POLICY_TITLES[x.policy as PolicyName].padEnd(17)} sent-to-dark ${sent}  cut ${c3(x.cut)} (bound ${bound || '–'})  failed ${c3(x.failed)}  over-capacity starts ${c3(x.startedOverCapacity)}  peak ${pct(Math.max(...x.peakUtil))}  (${CLASS_TITLES.join('/')})`;
  });
}

/** One event's per-class counts under policy x (the report contract's events[].counts[policy][class]). */
function classCounts(x: PolicyResult, e: EventRt, c: Cls): EventClassCounts {
  const k = eventCuts(x, e.idx, c);
  return {
    sentWhileDark: x.sentToEventRegion[e.idx]![c],
    sentWithRoom: x.sentWithRoom[e.idx]![c],
    startedThere: x.startedOnEventRegion[e.idx]![c],
    failedDark: x.failedDark[e.idx]![c],
    failedRefusedBeforeT: x.failedRefusedBeforeT[e.idx]![c],
    cut: k.total,
    cutBeforeAnnouncement: k.before,
    cutSpillBeforeAnnouncement: k.spillBefore,
    cutAfterAnnouncement: k.after,
  };
}

/** The contract's counts of one event and class under one policy. */
export interface EventClassCounts {
  /** Sessions with an attempt on the region while the event was in force; of them while the fleet had room then. */
  sentWhileDark: number;
  sentWithRoom: number;
  /** Sessions started on the region while the event was in force (a throttled region still serves). */
  startedThere: number;
  /** Failed with an attempt on the dark region; failed on its gateway's refusal before T (and not on it dark). */
  failedDark: number;
  failedRefusedBeforeT: number;
  /** Cut at T, and split by start at the announcement. */
  cut: number;
  cutBeforeAnnouncement: number;
  /** Of cutBeforeAnnouncement, other homes' clients placed on the region as spill (not in the unavoidable bound). */
  cutSpillBeforeAnnouncement: number;
  cutAfterAnnouncement: number;
}

/** GridSteer's cuts against reactive failover's at one power-off event, per class and in all; `gridsteerCutMore` flags GridSteer cutting more. */
export interface VersusReactive {
  event: string;
  gridsteer: number;
  reactive: number;
  gridsteerCutMore: boolean;
  byClass: Record<ClassName, { gridsteer: number; reactive: number; gridsteerCutMore: boolean }>;
}

/** GridSteer against reactive failover, per power-off event that cuts (both run), in events' order. */
export function versusReactive(rep: Pick<SimReport, 'events' | 'results'>): VersusReactive[] {
  const gs = rep.results.find((r) => r.policy === 'gridsteer');
  const re = rep.results.find((r) => r.policy === 'reactive');
  if (!gs || !re) return [];
  return rep.events
    .filter((e) => e.kind === 'power-off' && e.goesDark)
    .map((e) => {
      const byClass = Object.fromEntries(
        CLASSES.map((c) => {
          const g = eventCuts(gs, e.idx, c).total;
          const r = eventCuts(re, e.idx, c).total;
          return [CLASS_TITLES[c], { gridsteer: g, reactive: r, gridsteerCutMore: g > r }];
        }),
      ) as VersusReactive['byClass'];
      const g = CLASSES.reduce<number>((a, c) => a + eventCuts(gs, e.idx, c).total, 0);
      const r = CLASSES.reduce<number>((a, c) => a + eventCuts(re, e.idx, c).total, 0);
      return { event: e.id, gridsteer: g, reactive: r, gridsteerCutMore: g > r, byClass };
    });
}

/** One event of the JSON twin: what it is, its policy-independent figures per class, and every policy's counts per class. */
function eventJson(rep: SimReport, e: EventRt): unknown {
  const w = rep.world;
  const iso = (t: number) => new Date(t).toISOString();
  const byClass = <T>(f: (c: Cls) => T) => Object.fromEntries(CLASSES.map((c) => [CLASS_TITLES[c], f(c)]));
  const first = rep.results[0];
  return {
    id: e.id,
    region: w.regions[e.region]!.id,
    kind: e.kind,
    share: e.share,
    announce: iso(e.announce),
    learn: iso(e.learn),
    T: iso(e.T),
    E: iso(e.E),
    noticeMs: e.T - e.announce,
    goesDark: e.goesDark,
    // The same under every policy (the sessions and their clients are shared).
    shared: first
      ? {
          ignoringClients: first.ignoringClients[e.idx]!,
          byClass: byClass((c) => ({ bound: first.bound[e.idx]![c], aliveAtT: first.aliveAtT[e.idx]![c], homeArrivals: first.homeArrivals[e.idx]![c] })),
        }
      : null,
    counts: Object.fromEntries(rep.results.map((x) => [x.policy, byClass((c) => classCounts(x, e, c))])),
    room: first ? { spanMs: first.eventSpanMs[e.idx]!, roomMs: first.eventRoomMs[e.idx]! } : null,
    versusReactive: versusReactive(rep).find((v) => v.event === e.id) ?? null,
  };
}

// ---------------------------------------------------------------------------------------
// The report contract (docs/simulation.md "The report contract"): what the JSON twin promises
// to readers of targets[] and events[], as a schema and the rules a schema cannot say.

const Count = Type.Integer({ minimum: 0 });
const ClassKey = Type.Union(CLASS_TITLES.map((c) => Type.Literal(c)));
/** One entry of targets[]. */
export const TargetContract = Type.Object(
  {
    id: Type.Union(['a', 'b', 'c', 'd', 'e'].map((x) => Type.Literal(x)), { description: 'the target\'s letter' }),
    event: Type.Union([Type.String({ minLength: 1 }), Type.Null()], { description: 'the id of the event in events[]; null: (d) outside every event\'s span' }),
    class: Type.Union([ClassKey, Type.Literal('all')], { description: 'the client class counted; all for targets on load ((d), (e))' }),
    status: Type.Union([Type.Literal('met'), Type.Literal('not met'), Type.Literal('n/a')]),
    measured: Type.Number({ minimum: 0 }),
    bound: Type.Number({ minimum: 0 }),
    why: Type.String({ minLength: 1 }),
    what: Type.String({ minLength: 1 }),
  },
  { additionalProperties: false },
);
const CountsContract = Type.Object(
  { sentWhileDark: Count, sentWithRoom: Count, startedThere: Count, failedDark: Count, failedRefusedBeforeT: Count, cut: Count, cutBeforeAnnouncement: Count, cutSpillBeforeAnnouncement: Count, cutAfterAnnouncement: Count },
  { additionalProperties: false },
);
const ByClassOf = (t: TSchema) => Type.Object(Object.fromEntries(CLASS_TITLES.map((c) => [c, t])), { additionalProperties: false });
/** One entry of events[]: the event, its policy-independent figures per class, and every policy's counts per class. */
export const EventContract = Type.Object({
  id: Type.String({ minLength: 1 }),
  region: Type.String({ minLength: 1 }),
  kind: Type.Union([Type.Literal('power-off'), Type.Literal('throttle'), Type.Literal('none')]),
  goesDark: Type.Boolean(),
  shared: Type.Union([Type.Object({ ignoringClients: Count, byClass: ByClassOf(Type.Object({ bound: Count, aliveAtT: Count, homeArrivals: Count }, { additionalProperties: false })) }), Type.Null()]),
  counts: Type.Record(Type.String(), ByClassOf(CountsContract)),
});
/** The parts of the JSON twin the contract covers (the rest — results[], the series — is every figure as the engine gives it). */
export const ReportContract = Type.Object({
  classes: Type.Array(Type.String()),
  events: Type.Array(EventContract),
  results: Type.Array(Type.Object({ policy: Type.String() })),
  targets: Type.Array(TargetContract),
});

/**
 * Every way `json` (a parsed JSON twin) breaks the report contract, in words; [] when it keeps
 * it. The schema, then what it cannot say: the classes are CLASS_TITLES; every target names an
 * event of events[] (or null for (d) outside the events' spans); a target that applies is met
 * exactly when measured ≤ bound; each power-off event has one (a), (b) and (c) per class, each
 * throttle one (e), each event one (d), and there is one (d) with event null; (a)–(c) count a
 * class, (d) and (e) all; every event has counts for every policy of results[].
 */
export function contractProblems(json: unknown): string[] {
  const errs = [...Value.Errors(ReportContract, json)].map((e) => `${e.path || '/'}: ${e.message}`);
  if (errs.length > 0) return errs;
  const j = json as Static<typeof ReportContract>;
  const out: string[] = [];
  if (JSON.stringify(j.classes) !== JSON.stringify(CLASS_TITLES)) out.push(`classes: ${JSON.stringify(j.classes)}, not ${JSON.stringify(CLASS_TITLES)}`);
  const ids = new Set(j.events.map((e) => e.id));
  j.targets.forEach((t, i) => {
    const at = `targets[${i}] (${t.id} ${t.event ?? 'null'} ${t.class})`;
    if (t.event !== null && !ids.has(t.event)) out.push(`${at}: no event ${t.event} in events[]`);
    if (t.event === null && t.id !== 'd') out.push(`${at}: only (d) may have event null`);
    if ((t.id === 'd' || t.id === 'e') !== (t.class === 'all')) out.push(`${at}: (a)–(c) count a client class, (d) and (e) all`);
    if (t.status !== 'n/a' && (t.status === 'met') !== t.measured <= t.bound) out.push(`${at}: ${t.status} with ${t.measured} against ${t.bound}`);
  });
  if (!j.results.some((r) => r.policy === 'gridsteer')) {
    if (j.targets.length > 0) out.push('targets: GridSteer was not run, so there are none to check');
    return out;
  }
  const count = (id: string, event: string | null, cls: string) => j.targets.filter((t) => t.id === id && t.event === event && t.class === cls).length;
  const want = (n: number, id: string, event: string | null, cls: string) => {
    if (n !== 1) out.push(`targets: ${n} lines of (${id}) for ${event ?? 'outside every event'}, ${cls}; want 1`);
  };
  for (const e of j.events) {
    if (e.kind === 'power-off') for (const id of ['a', 'b', 'c']) for (const c of CLASS_TITLES) want(count(id, e.id, c), id, e.id, c);
    else if (e.kind === 'throttle') want(count('e', e.id, 'all'), 'e', e.id, 'all');
    else if (j.targets.some((t) => t.event === e.id && t.id !== 'd')) out.push(`targets: ${e.id} has no physical effect: (d) only`);
    want(count('d', e.id, 'all'), 'd', e.id, 'all');
    for (const r of j.results) if (!e.counts[r.policy]) out.push(`events[${e.id}].counts: no ${r.policy}`);
    for (const [p, byClass] of Object.entries(e.counts)) {
      for (const [c, k] of Object.entries(byClass as Record<string, EventClassCounts>)) {
        const at = `events[${e.id}].counts.${p}.${c}`;
        if (k.cut !== k.cutBeforeAnnouncement + k.cutAfterAnnouncement) out.push(`${at}: cut ${k.cut} is not ${k.cutBeforeAnnouncement} before + ${k.cutAfterAnnouncement} after the announcement`);
        if (k.cutSpillBeforeAnnouncement > k.cutBeforeAnnouncement) out.push(`${at}: ${k.cutSpillBeforeAnnouncement} spill cut of ${k.cutBeforeAnnouncement} started before the announcement`);
      }
    }
  }
  want(count('d', null, 'all'), 'd', null, 'all');
  return out;
}

/** reportJson as text: indented, with each list of numbers on one line. */
export function reportJsonText(rep: SimReport, o: { command?: string } = {}): string {
  return JSON.stringify(reportJson(rep, o), null, 1).replace(/\[\n\s*(-?[\d.e+-]+(?:,\n\s*-?[\d.e+-]+)*)\n\s*\]/g, (_m, inner: string) => `[${inner.replace(/\s+/g, '')}]`) + '\n';
}

/** The report as JSON: every figure of every policy, the time series, the targets. */
export function reportJson(rep: SimReport, o: { command?: string } = {}): unknown {
  const w = rep.world;
  const arr = (x: Float64Array) => Array.from(x, (v) => Math.round(v * 1000) / 1000);
  return {
    scenario: { name: rep.scenario.name, title: rep.scenario.title, file: rep.scenario.name + '.yaml' },
    ...(o.command ? { command: o.command } : {}),
    seed: rep.seed,
    scale: rep.scale,
    window: { start: new Date(rep.timeline.windowStart).toISOString(), end: new Date(rep.timeline.windowEnd).toISOString() },
    classes: CLASS_TITLES,
    drainLeadMs: simDrainLeadMs(w),
    world: {
      regions: w.regions.map((r, i) => ({ id: r.id, capacityUnits: r.capacityUnits, capacity: Math.round(w.capacity[i]!), ownExpectedConcurrent: Math.round(w.expectedHomeConcurrent[i]!) })),
      expectedConcurrent: Math.round(w.expectedConcurrent),
      classShare: w.classShare.map((x) => Math.round(x * 10000) / 10000),
    },
    events: rep.events.map((e) => eventJson(rep, e)),
    results: rep.results.map((x) => {
      const { series, ...rest } = x;
      return {
        ...rest,
        series: { t0: new Date(series.t0).toISOString(), bucketMs: series.bucketMs, n: series.n, regions: w.regions.map((r) => r.id), started: arr(series.started), failed: arr(series.failed), refused: arr(series.refused), load: arr(series.load), capacity: arr(series.capacity), spill: arr(series.spill), unplacedQps: arr(series.unplaced), goaways: arr(series.goaways) },
      };
    }),
    targets: evaluateTargets(rep),
  };
}
