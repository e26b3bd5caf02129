/**
 * plan(): the whole planner pass over a snapshot: per region its schedule (made, or reused), the safety pass, spill and carbon, and the version hash.
 * Part of the planner (gslb/policy/planner/): pure, no clock reads, no I/O.
 */
import { createHash } from 'node:crypto';
import { FLEET, type Override, type Plan, type RegionId, type RegionStep } from '../../model/types.js';
import type { SignalRecord, StoreSnapshot } from '../../model/snapshot.js';
import type { KindValue } from '../../model/kinds/index.js';

type LoadMetrics = KindValue<'load.metrics'>;
import { carbonPreferences } from '../rules/carbon.js';
import { healthOutcome, lossEndedAt, tallyHealth } from '../rules/health.js';
import { ANY_CHANGE, VOTES_ONLY, regionInstants } from './instants.js';
import { RegionMemo, regionMemos } from './memo.js';
import { type FloorSegment, safetyFloors } from '../rules/safety.js';
import { type PlanInput, type PlannerRegion, type PlannerSettings, phaseAt, round } from '../settings.js';
import { demandPerHome, spillLimits } from '../rules/spill.js';
import { routeRecords } from '../rules/records.js';
import { ROUTED_KINDS } from '../rules/index.js';
import { type RegionRecords, type RegionView, Texts, type ViewContext } from '../rules/rule.js';
import type { RegionWindow } from '../rules/shared.js';
import { sameStep, staticWeightsOf, stepOf, viewAt } from './view.js';
import { lossAlerts, lossVerdicts, trustDecisions, verdictKey } from '../rules/loss.js';
import { type WindowSkip, windowExpansion, windowInstants } from '../rules/windows.js';
import { practiceOutcomes } from '../rules/practice.js';
import { quarantineAlert, quarantineOf, withoutTargets } from '../quarantine.js';
import type { PlannerWindow, WindowOccurrence } from '../../model/windows.js';

/** canonical(settings), once per settings object (the service re-plans with the same one). */
const settingsKeys = new WeakMap<PlannerSettings, string>();

/** Canonical JSON (sorted keys) for hashing. */
function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .filter((k) => o[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

/**
 * The plan for a snapshot. Deterministic: the same (configHash, snapshot, settings) give the
 * same bytes. Steps start at 0 (everything known now) and follow every instant at which
 * anything changes; consecutive steps with the same weights, caps, down set and reasons merge.
 * Settings are never changed in place (a reload makes new ones): a region whose inputs are
 * those of the last plan made with the same settings object keeps its schedule (RegionMemo,
 * ADR 0009), and the plan is the same as if it had been made again.
 */
export function plan(input: PlanInput): Plan {
  return planCore(input).plan;
}

/**
 * plan() and how many regions' schedules it made (the others were reused from the last plan
 * made with the same settings object, their inputs unchanged): for the benchmark and tests.
 */
export function planCounting(input: PlanInput): { plan: Plan; made: number } {
  const { plan, made } = planCore(input);
  return { plan, made };
}

/**
 * gridPolicy's share per region at `t` as the plan has it (after the safety limits, before
 * any freeze): what `POST /v1/automation/freeze` holds.
 */
export function gridSharesAt(input: PlanInput, t: number): Record<RegionId, number> {
  return planCore({ ...input, snapshot: { ...input.snapshot, overrides: input.snapshot.overrides.filter((o) => o.action !== 'freeze') } }).gridAt(t);
}


function planCore(input: PlanInput): { plan: Plan; gridAt: (t: number) => Record<RegionId, number>; made: number } {
  const { settings: s } = input;
  // Records the store's quarantine holds out are not planned (ADR 0020); the plan says so in an alert.
  const quarantine = quarantineOf(input.snapshot);
  const snap0 = withoutTargets(input.snapshot, quarantine.targets);
  const snapshot: StoreSnapshot = input.frozen
    ? { ...snap0, records: snap0.records.map((r) => ({ ...r, signal: { ...r.signal, expiresAt: Infinity } })) }
    : snap0;
  const ids = new Set(s.regions.map((r) => r.id));
  const regionById = new Map(s.regions.map((r) => [r.id, r]));
  const recsBy = new Map<RegionId, SignalRecord[]>();
  const ovsBy = new Map<RegionId, Override[]>();
  for (const r of s.regions) {
    recsBy.set(r.id, []);
    ovsBy.set(r.id, []);
  }
  let newest = 0;
  for (const r of snapshot.records) {
    const region = r.signal.region;
    if (!ids.has(region) || r.signal.kind === 'demand') continue;
    recsBy.get(region)!.push(r);
    newest = Math.max(newest, r.signal.observedAt);
  }
  // Fleet-wide freezes of automation; every region is re-evaluated where one starts or ends.
  const freezes: Override[] = [];
  // Recurring windows added through the API, and operators' skips of one occurrence (rules/windows.ts).
  const storeWindows: PlannerWindow[] = [];
  const skips: WindowSkip[] = [];
  for (const o of snapshot.overrides) {
    if (o.region === FLEET && o.action === 'window' && o.window) {
      storeWindows.push(o.window);
      continue;
    }
    if (o.region === FLEET && o.action === 'window-skip' && o.skip) {
      skips.push({ window: o.skip.window, at: o.skip.at, why: `skipped by ${o.actor} (${o.reason}) [${o.id}]` });
      continue;
    }
    if (o.region === FLEET && o.action === 'freeze') {
      freezes.push(o);
      newest = Math.max(newest, o.start);
      continue;
    }
    if (!ids.has(o.region)) continue;
    ovsBy.get(o.region)!.push(o);
    newest = Math.max(newest, o.start);
  }
  // Each region's schedule on its own: evaluated at 0 and at each of its instants, a step
  // wherever its view changes. Work and size grow with the changes, not regions × instants.
  // A region whose inputs are those of the last plan made with these settings keeps the
  // schedule that plan made for it (see RegionMemo): a plan after one signal redoes one region.
  const regionsOut: Record<RegionId, RegionStep[]> = {};
  const skipVotes = input.exhaustive !== true;
  const texts = new Texts();
  // Recurring windows over the horizon of the epoch the control loop passes (none without one).
  const allWindows = s.windows && s.windows.length > 0 ? [...s.windows, ...storeWindows] : storeWindows;
  const wx = input.horizonEpoch !== undefined && allWindows.length > 0 ? windowExpansion(s, allWindows, skips, input.horizonEpoch) : undefined;
  // The plan's own map (the expansion is reused across plans): the practice pass adds the runs that go.
  const winMap: Map<RegionId, readonly RegionWindow[]> | undefined = wx ? new Map(wx.byRegion) : undefined;
  const ctx: ViewContext = winMap ? { freezes, texts, windows: winMap } : { freezes, texts };
  const schedule = (
    region: PlannerRegion,
    rr: RegionRecords,
    own: ReadonlyMap<number, number>,
    c: ViewContext,
    extra: number[] = [],
  ): { steps: RegionStep[]; grid: [number, number][] | null; loss: [number, number][] | null } => {
    const id = region.id;
    let whyAt = own;
    if (extra.length > 0) {
      const m = new Map(own);
      for (const t of extra) m.set(t, ANY_CHANGE);
      whyAt = m;
    }
    const times = new Float64Array(whyAt.size + 1); // [0, ...instants], sorted numerically
    let n = 1;
    for (const t of whyAt.keys()) times[n++] = t;
    times.sort();
    const steps: RegionStep[] = [];
    /** gridPolicy's share at each instant, kept only for regions where it ever falls below 1. */
    let grid: [number, number][] | null = null;
    /** The trusted losses' share at each instant, likewise. */
    let loss: [number, number][] | null = null;
    const ovs = ovsBy.get(id)!;
    const sw = staticWeightsOf(id, s, ids);
    const hp = s.stale['health.probe'];
    let outcome = '';
    for (const t of times) {
      // Only votes change here: if they decide what they decided before, so is the view.
      if (whyAt.get(t) === VOTES_ONLY && skipVotes) {
        tallyHealth(rr.byKind['health.probe'], rr.tally, t, hp, lossEndedAt(rr, c, t));
        const o = healthOutcome(rr.tally);
        if (o === outcome) continue;
      }
      const v = viewAt(region, rr, ovs, t, s, c);
      outcome = healthOutcome(rr.tally);
      if (grid === null && v.gridRaw < 1) grid = [[0, 1]];
      if (grid !== null && grid[grid.length - 1]![1] !== v.gridRaw) grid.push([t, v.gridRaw]);
      if (loss === null && v.lossRaw < 1) loss = [[0, 1]];
      if (loss !== null && loss[loss.length - 1]![1] !== v.lossRaw) loss.push([t, v.lossRaw]);
      const st = stepOf(id, v, t, sw);
      const last = steps[steps.length - 1];
      if (last && sameStep(last, st)) continue;
      steps.push(st);
    }
    return { steps, grid, loss };
  };
  const keep = (id: RegionId, steps: RegionStep[]) => {
    // A region that is fully up throughout needs no schedule at all. The plan gets its own
    // step objects (the spill pass below replaces their homes and reasons; the memo's stay).
    if (!(steps.length === 1 && steps[0]!.share === 1 && !steps[0]!.homes && !steps[0]!.down && steps[0]!.reasons.length === 0)) regionsOut[id] = steps.map((st) => ({ ...st }));
    else delete regionsOut[id];
  };
  let memos = regionMemos.get(s);
  if (!memos) regionMemos.set(s, (memos = new Map()));
  const freezeKey = freezes.length === 0 ? '' : JSON.stringify(freezes);
  const frozen = input.frozen === true;
  const rrBy = new Map<RegionId, RegionRecords>();
  const memoBy = new Map<RegionId, RegionMemo>();
  const gridBy = new Map<RegionId, [number, number][]>();
  const lossBy = new Map<RegionId, [number, number][]>();
  // The records split once per region (kept from the last plan where they are the same), then
  // the loss pass over every region's claims of physical loss (rules/loss.ts).
  const reuse = new Map<RegionId, RegionMemo>();
  const factsBy = new Map<RegionId, RegionRecords['facts']>();
  const gridRecsBy = new Map<RegionId, readonly SignalRecord[]>();
  for (const region of s.regions) {
    const recs = recsBy.get(region.id)!;
    const m = memos.get(region.id);
    const rr = m && m.sameRecords(recs) ? (reuse.set(region.id, m), m.rr) : routeRecords(recs, region, s, ROUTED_KINDS);
    rrBy.set(region.id, rr);
    factsBy.set(region.id, rr.facts);
    gridRecsBy.set(region.id, rr.byKind['grid.event']);
  }
  const verdicts = lossVerdicts(s, factsBy, gridRecsBy, snapshot.overrides);
  if (verdicts.size > 0) ctx.loss = verdicts;
  let made = 0;
  for (const region of s.regions) {
    const id = region.id;
    const recs = recsBy.get(id)!;
    const ovs = ovsBy.get(id)!;
    const ovsKey = (ovs.length === 0 ? '' : JSON.stringify(ovs)) + (wx?.keys.get(id) ?? '');
    const rr = rrBy.get(id)!;
    const lossKey = verdicts.size === 0 ? freezeKey : `${freezeKey}\n${verdictKey(rr.facts, verdicts)}`;
    let m = reuse.get(id);
    if (!m || !m.sameKeys(ovsKey, lossKey, frozen)) {
      made++;
      const own = regionInstants(region, recs, rr, ovs, ctx, s);
      m = new RegionMemo(recs, ovsKey, lossKey, frozen, rr, own, schedule(region, rr, own, ctx));
      memos.set(id, m);
    }
    memoBy.set(id, m);
    keep(id, m.steps);
    if (m.grid) gridBy.set(id, m.grid);
    if (m.loss) lossBy.set(id, m.loss);
  }
  // Practice runs (rules/practice.ts): decided over every region's schedule made so far; the
  // regions of the runs that go are planned again with them, before the safety limits.
  const extraBy = new Map<RegionId, number[]>();
  let windowsOut: WindowOccurrence[] | undefined = wx?.occurrences;
  if (wx && winMap && wx.practice.length > 0) {
    const facts = new Map([...rrBy].map(([id, rr]) => [id, rr.facts]));
    const { outcomes, add } = practiceOutcomes(wx.practice, regionsOut, facts, freezes, s);
    const byOcc = new Map(wx.practice.map((p) => [p.occ, outcomes.get(p)!]));
    windowsOut = wx.occurrences.map((o) => {
      const r = byOcc.get(o);
      if (!r) return o;
      if (!r.run) return { ...o, skipped: r.why };
      return r.abortAt !== undefined ? { ...o, aborted: { at: r.abortAt, why: r.why! } } : o;
    });
    for (const [id, ws] of add) {
      winMap.set(id, [...(wx.byRegion.get(id) ?? []), ...ws]);
      const extra: number[] = [];
      windowInstants(ws, (t) => {
        if (t > 0 && Number.isFinite(t)) extra.push(t);
      });
      extraBy.set(id, extra);
      const m = memoBy.get(id)!;
      const key = JSON.stringify(ws.map((w) => [w.occ.window, w.occ.start, w.curve.endAt, w.words]));
      if (m.practiced?.key !== key) m.practiced = { key, ...schedule(regionById.get(id)!, m.rr, m.instants, ctx, extra) };
      keep(id, m.practiced.steps);
      if (m.practiced.grid) gridBy.set(id, m.practiced.grid);
      else gridBy.delete(id);
    }
  }
  // Safety limits on gridPolicy (safetyFloors): the regions they hold back are planned again.
  const pierced = new Map<RegionId, string>();
  const floors = safetyFloors(s, gridBy, lossBy, pierced);
  const floorCtx = new Map<RegionId, ViewContext>();
  for (const [id, segs] of floors) {
    const c: ViewContext = {
      freezes,
      texts,
      ...(ctx.loss ? { loss: ctx.loss } : {}),
      ...(winMap ? { windows: winMap } : {}),
      floor: (t) => {
        let cur: FloorSegment | undefined;
        for (const g of segs) if (g.from <= t) cur = g;
        return cur && cur.floor > 0 ? { floor: cur.floor, why: cur.why } : undefined;
      },
    };
    floorCtx.set(id, c);
    const m = memoBy.get(id)!;
    const segsKey = JSON.stringify(segs) + (extraBy.has(id) ? m.practiced!.key : '');
    if (m.floored?.key !== segsKey) {
      m.floored = {
        key: segsKey,
        steps: schedule(
          regionById.get(id)!,
          m.rr,
          m.instants,
          c,
          [...segs.map((g) => g.from), ...(extraBy.get(id) ?? [])],
        ).steps,
      };
    }
    keep(id, m.floored.steps);
  }
  const alerts = verdicts.size > 0 || floors.size > 0 ? lossAlerts(factsBy, verdicts, floors, pierced, freezes, newest) : [];
  const held = quarantineAlert(quarantine.held);
  if (held) alerts.unshift(held);
  const trust = verdicts.size > 0 ? trustDecisions(factsBy, verdicts, newest) : [];

  // Every region's view at the newest input instant, worked out once (only if needed) for the
  // carbon tie-break and the spill limits, which both look at "now".
  let atRef: Map<RegionId, RegionView> | undefined;
  const viewsAtRef = (): Map<RegionId, RegionView> =>
    (atRef ??= new Map(s.regions.map((region) => [region.id, viewAt(region, rrBy.get(region.id)!, ovsBy.get(region.id)!, newest, s, floorCtx.get(region.id) ?? ctx)])));

  // Carbon tie-break, at the newest input instant: per home, a cleaner healthy region of its
  // latency band (a soft fact: never over health, drains, caps or power).
  const prefer = carbonPreferences(s, recsBy, viewsAtRef, newest);

  // Spill limits from measured demand, at the newest input instant (see spillLimits); plans
  // are made again every 10 s with fresh demand, so the limits follow it.
  const demand = demandPerHome(snapshot.demand);
  let spillKey = '';
  let unplaced: Record<RegionId, number> | undefined;
  let overflow: Record<RegionId, Record<RegionId, number>> | undefined;
  if (demand.size > 0) {
    const tRef = newest;
    const views = viewsAtRef();
    const util = new Map<RegionId, number>();
    const loadAt = new Map<RegionId, number>();
    for (const region of s.regions) {
      for (const r of rrBy.get(region.id)!.byKind['load.metrics']) {
        if (phaseAt(r, tRef, s.stale['load.metrics']) === 'stale') continue;
        const v = r.signal.value as LoadMetrics;
        const u = v.kvCacheUse ?? 0;
        if (u > (util.get(region.id) ?? 0)) {
          util.set(region.id, u);
          loadAt.set(region.id, r.signal.observedAt);
        }
      }
    }
    // When each home began spilling: the first of the run of steps, up to tRef, in which it
    // does not take all its clients.
    const spillSince = new Map<RegionId, number>();
    for (const region of s.regions) {
      const steps = regionsOut[region.id] ?? [];
      let since: number | undefined;
      for (const st of steps) {
        if (st.at > tRef) break;
        const spilling = st.down || (st.homes?.[region.id] ?? st.share) < 1;
        since = spilling ? (since ?? st.at) : undefined;
      }
      if (since !== undefined) spillSince.set(region.id, since);
    }
    const { limits, reasons, unplaced: lost, overflow: over } = spillLimits(s, views, util, demand, spillSince, loadAt);
    if (lost.size > 0) unplaced = Object.fromEntries([...lost.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
    if (over.size > 0) overflow = Object.fromEntries([...over.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
    // What demand changed in the plan (not the raw counts) goes into the version.
    if (limits.size > 0 || reasons.size > 0 || over.size > 0) spillKey = JSON.stringify([[...limits.entries()].sort(), [...reasons.entries()].sort(), overflow ?? null]);
    for (const region of s.regions) {
      const lim = limits.get(region.id);
      const why = reasons.get(region.id);
      if (!lim && !why) continue;
      const steps = (regionsOut[region.id] ??= [{ at: 0, share: 1, down: false, reasons: [] }]);
      for (const st of steps) {
        if (lim) {
          const homes = { ...(st.homes ?? {}) };
          for (const [h, w] of Object.entries(lim)) homes[h] = Math.min(homes[h] ?? st.share, round(w * st.share));
          st.homes = Object.fromEntries(Object.entries(homes).sort((a, b) => (a[0] < b[0] ? -1 : 1)));
          st.reasons = [...st.reasons, `${region.id}: spill limited by headroom: ${Object.entries(lim).map(([h, w]) => `from ${h} ${w}`).join(', ')}`];
        }
        if (why) st.reasons = [...st.reasons, ...why];
      }
    }
  }

  // The inputs: a stored record is identified by its id and observedAt (latest wins, and the
  // store never replaces a record with an older one), so those stand for its content;
  // overrides are hashed whole, settings with sorted keys.
  const h = createHash('sha256').update(`${input.configHash}\n${snapshot.revision}\n${input.frozen ? 'frozen\n' : ''}`);
  // One flat string (joined, not a rope of 2 × records pieces that hashing must flatten).
  const ids4hash = snapshot.records.map((r) => `${r.id}@${r.signal.observedAt}`);
  h.update(ids4hash.length > 0 ? `${ids4hash.join('\n')}\n` : '').update(JSON.stringify(snapshot.overrides));
  h.update(spillKey);
  if (quarantine.held.length > 0) h.update(`quarantine\n${quarantine.held.map((e) => `${e.target}@${e.fingerprint}`).join('\n')}\n`);
  h.update(JSON.stringify(prefer ?? null));
  if (wx) h.update(`windows@${wx.epoch}\n`);
  let sk = settingsKeys.get(s);
  if (sk === undefined) settingsKeys.set(s, (sk = canonical(s)));
  const version = h.update(sk).digest('hex').slice(0, 16);
  const out: Plan = { version, configHash: input.configHash, storeRevision: snapshot.revision, computedAt: newest, regions: regionsOut, ...(prefer ? { prefer } : {}), ...(unplaced ? { unplaced } : {}), ...(overflow ? { overflow } : {}), ...(alerts.length > 0 ? { alerts } : {}), ...(trust.length > 0 ? { trust } : {}), ...(windowsOut ? { windows: windowsOut } : {}), lookahead: { resolverFloorS: s.drain.resolverFloorS, marginMs: s.drain.marginMs } };
  const gridAt = (t: number) =>
    Object.fromEntries(s.regions.map((region) => [region.id, viewAt(region, rrBy.get(region.id)!, ovsBy.get(region.id)!, t, s, floorCtx.get(region.id) ?? ctx).grid]));
  return { plan: out, gridAt, made };
}
