/**
 * A region's view at one instant: every rule's cap combined by minimum in DESIGN.md's order, with its reasons; and the step it becomes.
 * Part of the planner (gslb/policy/planner/): pure, no clock reads, no I/O.
 */
import type { Override, RegionId, RegionStep } from '../../model/types.js';
import type { SignalRecord } from '../../model/snapshot.js';
import type { Capacity, LoadMetrics, PowerBudget } from '../../model/signals.js';
import { curveWords } from '../drain.js';
import { type GridFact, gridFacts, liveFacts } from './grid.js';
import { type HealthScratch, cameBackAt, downEndpoints, healthScratch, tallyHealth } from './health.js';
import { operatorCap } from './operator.js';
import { type PlannerRegion, type PlannerSettings, phaseAt, round } from './settings.js';

/** A region's situation at one instant. */
export interface RegionView {
  down: boolean;
  /** The gateway should refuse new streams (an obligation to take nothing is in force). */
  refuse: boolean;
  /** gridPolicy's cap before the safety limits and the freeze (for the safety pass). */
  gridRaw: number;
  /** gridPolicy's cap in force (after the safety limits and any freeze). */
  grid: number;
  /** Seconds (gridPolicy pre-arm); undefined = none. */
  ttlCap?: number;
  share: number;
  noSpill: boolean;
  reasons: string[];
}

/** A region's records split by what reads them (done once per region, not per instant). */
export interface RegionRecords {
  health: SignalRecord[];
  grid: SignalRecord[];
  power: SignalRecord[];
  compute: SignalRecord[];
  /** The grid records read through gridPolicy, with their drain curves. */
  facts: GridFact[];
  /** healthAt's tally, laid out once for viewAt's every instant (see tallyHealth). */
  tally: HealthScratch;
}

export function splitRecords(recs: SignalRecord[], region: PlannerRegion, s: PlannerSettings): RegionRecords {
  const health: SignalRecord[] = [];
  const grid: SignalRecord[] = [];
  const power: SignalRecord[] = [];
  const compute: SignalRecord[] = [];
  for (const r of recs) {
    const k = r.signal.kind;
    if (k === 'health.probe') health.push(r);
    else if (k === 'grid.event' || k === 'grid.alert') grid.push(r);
    else if (k === 'power.budget') power.push(r);
    else if (k === 'capacity' || k === 'load.metrics') compute.push(r);
  }
  return { health, grid, power, compute, facts: gridFacts(region, grid, power, s), tally: healthScratch(health) };
}

/**
 * Reason texts made once per plan and handed out again at every instant that gives the same
 * words (per owner — a record, a region — and a variant): a region's views at its instants
 * then share their strings, so comparing steps is mostly a pointer check and the words are
 * not built, and collected, again and again (a 1,000-region fleet has ~10 instants per region).
 */
export class Texts {
  private readonly by = new Map<object, { v: string | number; text: string }[]>();
  /** The text kept for (owner, variant), if any: `get(o, v) ?? put(o, v, words)` builds the words only once. */
  get(owner: object, variant: string | number): string | undefined {
    const xs = this.by.get(owner);
    if (xs) for (const x of xs) if (x.v === variant) return x.text;
    return undefined;
  }
  put(owner: object, variant: string | number, text: string): string {
    const xs = this.by.get(owner);
    if (xs) xs.push({ v: variant, text });
    else this.by.set(owner, [{ v: variant, text }]);
    return text;
  }
}

/** What viewAt needs besides the region's own records: fleet-wide freezes, the safety pass's floors, the plan's texts. */
export interface ViewContext {
  freezes: Override[];
  texts: Texts;
  /** The least gridPolicy share the safety limits allow at t (undefined: no limit). */
  floor?: (t: number) => { floor: number; why: string } | undefined;
}

/** A cap's reason as viewAt words it. */
function capWords(id: RegionId, c: number, why: string): string {
  return `${id}: ${why} → cap ${round(c)}`;
}

/** viewAt's least cap so far and its reasons. */
interface CapAcc {
  share: number;
  reasons: string[];
}

/** A cap with its words made already (capWords, mostly through the plan's texts). */
function capText(a: CapAcc, c: number, text: string): void {
  if (c < a.share) a.share = c;
  if (c < 1) a.reasons.push(text);
}

/** A cap with its reason's words: made only when it caps. */
function capWhy(a: CapAcc, id: RegionId, c: number, why: string): void {
  if (c < a.share) a.share = c;
  if (c < 1) a.reasons.push(capWords(id, c, why));
}

export function viewAt(region: PlannerRegion, rr: RegionRecords, ovs: Override[], t: number, s: PlannerSettings, ctx: ViewContext): RegionView {
  const reasons: string[] = [];
  const id = region.id;
  let forceDown: Override | undefined;
  let forceUp: Override | undefined;
  for (const o of ovs) {
    if (!(o.start <= t && (o.end === undefined || t < o.end))) continue;
    if (o.action === 'force-down') forceDown ??= o;
    else if (o.action === 'force-up') forceUp ??= o;
  }

  // Health: per endpoint, a majority of vantage votes.
  const health = tallyHealth(rr.health, rr.tally, t, s.stale['health.probe']);
  const healthDown = health.probed > 0 && health.down === health.probed;

  let down = false;
  if (forceDown) {
    down = true;
    reasons.push(`${id}: forced down by ${forceDown.actor} (${forceDown.reason}) [${forceDown.id}]`);
  } else if (healthDown && forceUp) {
    reasons.push(`${id}: health says down (${downEndpoints(rr.tally).join(', ')}) but forced up by ${forceUp.actor} (${forceUp.reason}) [${forceUp.id}]`);
  } else if (healthDown) {
    down = true;
    reasons.push(`${id}: down: every probed endpoint failed on a majority of vantages (${downEndpoints(rr.tally).join(', ')})`);
  }

  // The least cap and its reasons, gathered in one object (not closures over locals, which
  // would cost a context per view).
  const acc: CapAcc = { share: 1, reasons };
  const texts = ctx.texts;

  // Slow start: a region whose every up endpoint turned up recently came back as a whole
  // (a cold start): it takes clients back in steps over slowStartMs.
  if (!down && s.slowStartMs > 0) {
    const back = cameBackAt(rr.tally);
    if (!Number.isNaN(back)) {
      if (t >= back && t < back + s.slowStartMs) {
        const n = Math.max(1, Math.ceil(s.slowStartMs / s.rampStepMs));
        const k = Math.min(n, Math.floor(((t - back) * n) / s.slowStartMs) + 1);
        capText(acc, k / n, texts.get(rr.health, `${back}/${k}`) ?? texts.put(rr.health, `${back}/${k}`, capWords(id, k / n, `slow start after coming back up at ${new Date(back).toISOString()}, step ${k}/${n}`)));
      }
    }
  }

  const op = operatorCap(region, ovs, t, s);
  if (op.why) capWhy(acc, id, op.cap, op.why);

  // Grid obligations: every grid fact, read through gridPolicy (first matching rule), with
  // its drain curve (drain.ts): the ramp ahead of its start, the hold, the restore after it.
  let ttlCap: number | undefined;
  let eventLimitW = Infinity;
  let eventLimitWhy = '';
  let refuse = false;
  let grid = 1;
  // OpenADR: among overlapping events of one source and program, the lowest priority number wins.
  const { live, bestPriority } = liveFacts(rr.facts, t);
  for (const { f: f0, p, inWindow } of live) {
    const f = f0.keptFrom !== undefined && t >= f0.keptFrom ? { ...f0, what: `${f0.what} (expired, kept)` } : f0;
    const best = bestPriority.get(f.priorityKey);
    if (f.priority !== undefined && best !== undefined && f.priority > best) {
      reasons.push(`${id}: ${f.what} (priority ${f.priority}) yields to priority ${best} of the same program`);
      continue;
    }
    const phase = p && p.cap < 1 && f.curve ? `: ${curveWords(f.curve, p)}` : '';
    if (f.shadow) {
      reasons.push(`${id}: shadow: rule ${f.rule.name} (${f.what}) would apply: ${f.effect || 'nothing'}${f.note}${phase ? ` — now${phase}` : ''}`);
      continue;
    }
    if (p && p.cap < 1) {
      if (p.cap < grid) grid = p.cap;
      reasons.push(`${id}: rule ${f.rule.name} (${f.what})${f.note}${phase} → cap ${p.cap}`);
    }
    const c = f.curve;
    if (c && c.shortfallMs > 0 && !f.previous && t >= c.input.learnedAt && t < f.start) {
      ttlCap = Math.min(ttlCap ?? Infinity, s.drain.minTtlS);
      reasons.push(
        `${id}: ${f.what} was learned ${Math.round(c.shortfallMs / 1000)} s later than the lead it needs (${Math.round((c.input.start - c.noticeStart) / 1000)} s): TTL ${s.drain.minTtlS} s until it starts`,
      );
    }
    if (!inWindow) continue;
    if (f.cap === 0) refuse = true;
    if (f.rule.then.ttlCap !== undefined) {
      ttlCap = Math.min(ttlCap ?? Infinity, f.rule.then.ttlCap);
      reasons.push(`${id}: rule ${f.rule.name} (${f.what}) → TTL ≤ ${f.rule.then.ttlCap} s`);
    }
    if (f.rule.then.importLimit && f.limitW !== undefined && f.limitW < eventLimitW) {
      eventLimitW = f.limitW;
      eventLimitWhy = `rule ${f.rule.name} (${f.what})`;
    }
  }
  // Safety and the operator's freeze act on gridPolicy's share only (measured power and
  // compute are physical facts: no switch makes them untrue).
  const gridRaw = grid;
  const fr = ctx.freezes.length === 0 ? undefined : ctx.freezes.find((o) => o.start <= t && (o.end === undefined || t < o.end));
  if (fr) {
    const held = fr.hold?.[id] ?? 1;
    if (held !== grid) reasons.push(`${id}: automation frozen by ${fr.actor} (${fr.reason}) [${fr.id}]: gridPolicy held at ${held}${grid < 1 ? `, not ${grid}` : ' (it would lift)'}`);
    grid = held;
    if (held > 0) refuse = false;
  } else {
    const fl = ctx.floor?.(t);
    if (fl && fl.floor > grid) {
      reasons.push(`${id}: ${fl.why}: gridPolicy held at ${round(fl.floor)}, not ${grid}`);
      grid = round(fl.floor);
      refuse = false;
    }
  }
  if (grid < acc.share) acc.share = grid;

  // Power budget: available watts over full-load draw. A grid event's import limit lowers
  // the import part while it holds.
  let budgeted = false;
  for (const r of rr.power) {
    if (r.signal.kind !== 'power.budget' || r.fold.kind !== 'applied') continue;
    const pol = s.stale['power.budget'];
    const ph = phaseAt(r, t, pol);
    if (ph === 'stale') {
      if (pol.then === 'down') capText(acc, 0, (texts.get(r, 'stale') ?? texts.put(r, 'stale', capWords(id, 0, `power budget from ${r.signal.source} is stale (policy: down)`))));
      else if (pol.then === 'degraded') capText(acc, s.degradedShare, (texts.get(r, 'stale') ?? texts.put(r, 'stale', capWords(id, s.degradedShare, `power budget from ${r.signal.source} is stale (policy: degraded)`))));
      continue;
    }
    const fullLoadW = region.fullLoadW;
    if (!fullLoadW) continue;
    budgeted = true;
    const v = r.fold.value as PowerBudget;
    const importW = Math.min(v.importLimitW ?? region.importLimitW ?? Infinity, eventLimitW);
    const storageW = (v.storageWh ?? 0) > 0 ? (v.storageMaxW ?? 0) : 0;
    const avail = importW + (v.generationW ?? 0) + storageW;
    if (avail < fullLoadW) {
      const limited = importW === eventLimitW;
      const c = avail / fullLoadW;
      const variant = limited ? `${eventLimitW}|${eventLimitWhy}` : avail;
      capText(
        acc,
        c,
        texts.get(r, variant) ??
          texts.put(r, variant, capWords(id, c, `power: ${Math.round(avail)} W available of ${fullLoadW} W at full load (${r.signal.source}${limited ? `; import limited by ${eventLimitWhy}` : ''})`)),
      );
    }
  }
  if (!budgeted && eventLimitW < Infinity) {
    if (region.fullLoadW) {
      const importW = Math.min(region.importLimitW ?? Infinity, eventLimitW);
      if (importW < region.fullLoadW) capWhy(acc, id, importW / region.fullLoadW, `power: ${Math.round(importW)} W of grid import available of ${region.fullLoadW} W at full load; import limited by ${eventLimitWhy}`);
    } else reasons.push(`${id}: ${eventLimitWhy} sets an import limit, but the region has no power.fullLoadW to turn watts into a share: not applied`);
  }

  // Compute capacity and load.
  let noSpill = false;
  for (const r of rr.compute) {
    const kind = r.signal.kind;
    if (kind !== 'capacity' && kind !== 'load.metrics') continue;
    const pol = s.stale[kind];
    const ph = phaseAt(r, t, pol);
    if (ph === 'stale') {
      if (pol.then === 'down') capText(acc, 0, (texts.get(r, 'stale') ?? texts.put(r, 'stale', capWords(id, 0, `${kind} from ${r.signal.source} is stale (policy: down)`))));
      else if (pol.then === 'degraded') capText(acc, s.degradedShare, (texts.get(r, 'stale') ?? texts.put(r, 'stale', capWords(id, s.degradedShare, `${kind} from ${r.signal.source} is stale (policy: degraded)`))));
      continue;
    }
    if (kind === 'capacity' && r.fold.kind === 'applied') {
      const v = r.fold.value as Capacity;
      let c = v.fraction ?? 1;
      if (v.units !== undefined && region.capacityUnits) c = Math.min(c, v.units / region.capacityUnits);
      if (c < 1) capText(acc, c, (texts.get(r, 'capacity') ?? texts.put(r, 'capacity', capWords(id, c, `capacity ${round(c)} reported by ${r.signal.source}`))));
    } else if (kind === 'load.metrics') {
      const v = r.signal.value as LoadMetrics;
      // GPU memory is not a sign of saturation: inference servers preallocate most of it.
      const waiting = v.queueDepth ?? 0;
      const kv = v.kvCacheUse ?? 0;
      const saturated = waiting > s.saturation.queueWaiting || kv > s.saturation.kvCacheUse;
      if (v.throttledShare !== undefined && v.throttledShare > 0) {
        // Throttled and saturated: the sessions already running exceed what the throttle
        // left, and long ones take minutes to end; admit fewer new ones until it is not.
        const left = 1 - v.throttledShare;
        const lost = v.throttledShare;
        if (saturated && s.saturation.throttledFactor < 1) {
          const c = left * s.saturation.throttledFactor;
          capText(
            acc,
            c,
            texts.get(r, 'throttled, saturated') ??
              texts.put(r, 'throttled, saturated', capWords(id, c, `${Math.round(lost * 100)} % of GPUs throttled and saturated (${r.signal.source}): ${s.saturation.throttledFactor} of what is left until the load is back under it`)),
          );
        } else capText(acc, left, (texts.get(r, 'throttled') ?? texts.put(r, 'throttled', capWords(id, left, `${Math.round(lost * 100)} % of GPUs throttled (${r.signal.source})`))));
      }
      if (saturated) {
        noSpill = true;
        reasons.push((texts.get(r, 'saturated') ?? texts.put(r, 'saturated', `${id}: saturated (${waiting} requests waiting, KV cache at ${Math.round(kv * 100)} %, ${r.signal.source}): takes no spill`)));
      }
    }
  }
  const view: RegionView = { down, refuse: refuse || op.refuse, gridRaw, grid, share: round(acc.share), noSpill, reasons };
  if (ttlCap !== undefined) view.ttlCap = ttlCap;
  return view;
}

/**
 * A region's step from its view: `share` for every home; `homes` where a home differs —
 * static config weights w[home][region] multiply the share, and a saturated region (no
 * spill) has share 0 except for its own clients.
 */
export function stepOf(id: RegionId, v: RegionView, t: number, sw: StaticWeights): RegionStep {
  const share = v.noSpill ? 0 : v.share;
  const st: RegionStep = { at: t, share, down: v.down, reasons: sw.reason === null ? v.reasons : [...v.reasons, sw.reason] };
  if (v.ttlCap !== undefined) st.ttlCap = v.ttlCap;
  if (v.refuse) st.refuse = true;
  if (!v.noSpill && sw.homes.length === 0) return st;
  const homes: Record<RegionId, number> = {};
  if (v.noSpill && v.share !== share) homes[id] = v.share;
  for (const [home, stat] of sw.homes) {
    const base = v.noSpill && home !== id ? 0 : v.share;
    const w = round(base * stat);
    if (w !== share) homes[home] = w;
    else delete homes[home];
  }
  if (Object.keys(homes).length > 0) st.homes = Object.fromEntries(Object.entries(homes).sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  return st;
}

/** A region's static config weights (policy.weights) as stepOf reads them: made once per plan. */
interface StaticWeights {
  /** (home, weight) for every home of the fleet with a weight for this region. */
  homes: [RegionId, number][];
  /** The reason step lists for them, or null when every weight is 1. */
  reason: string | null;
}

export function staticWeightsOf(id: RegionId, s: PlannerSettings, ids: ReadonlySet<RegionId>): StaticWeights {
  const homes: [RegionId, number][] = [];
  const words: string[] = [];
  for (const [home, row] of Object.entries(s.staticWeights)) {
    const stat = row[id];
    if (stat === undefined || !ids.has(home)) continue;
    homes.push([home, stat]);
    if (stat !== 1) words.push(`from ${home} ${stat}`);
  }
  return { homes, reason: words.length > 0 ? `${id}: static weights (policy.weights): ${words.sort().join(', ')}` : null };
}

/** Two steps of one region with the same effect and reasons (their `at` aside). */
export function sameStep(a: RegionStep, b: RegionStep): boolean {
  if (a.share !== b.share || a.down !== b.down || a.ttlCap !== b.ttlCap || a.refuse !== b.refuse || a.reasons.length !== b.reasons.length) return false;
  for (let i = 0; i < a.reasons.length; i++) if (a.reasons[i] !== b.reasons[i]) return false;
  const ha = a.homes ?? {};
  const hb = b.homes ?? {};
  const ka = Object.keys(ha);
  if (ka.length !== Object.keys(hb).length) return false;
  for (const k of ka) if (ha[k] !== hb[k]) return false;
  return true;
}
