/**
 * What a planner rule is: a small stage that reads a region's inputs at one instant and
 * lowers its share, marks it down, shortens TTLs or stops its spill. The view
 * (planner/view.ts) runs the rules of rules/index.ts in their written order over one
 * accumulator; caps combine by minimum, so the order only decides which reason is listed
 * first and what a later rule may read of an earlier one (the power rule reads the grid rule's
 * import limit). Pure: no clock reads, no I/O.
 */
import type { Override, RegionId } from '../../model/types.js';
import type { SignalRecord } from '../../model/snapshot.js';
import type { StalePolicy } from '../settings.js';
import type { GridFact } from './grid.js';
import type { LossVerdict } from './loss.js';
import type { HealthScratch } from './health.js';
import type { RegionWindow } from './windows.js';
import { type PlannerRegion, type PlannerSettings, round } from '../settings.js';

/** A region's situation at one instant: what the rules made of it. */
export interface RegionView {
  down: boolean;
  /** The gateway should refuse new streams (an obligation to take nothing is in force). */
  refuse: boolean;
  /** gridPolicy's cap before the safety limits and the freeze (for the safety pass). */
  gridRaw: number;
  /** gridPolicy's cap in force (after the safety limits and any freeze). */
  grid: number;
  /** The trusted physical losses' cap (1 = none): never lifted by the safety limits or a freeze. */
  lossRaw: number;
  /** From this step the gateway sends GOAWAY to its connections so that all have it by then, ms epoch. */
  goawayBy?: number;
  /** Seconds (gridPolicy pre-arm); undefined = none. */
  ttlCap?: number;
  share: number;
  /**
   * The least cap but the soft holds (a slow start, a grid event's hold and restore after its
   * end): what the region would take of its own clients without them. The spill pass gives
   * a home's clients that no other region has headroom for back to their home up to it
   * (ADR 0018): a soft hold protects the region, not at the price of pushing full ones over.
   */
  firm: number;
  noSpill: boolean;
  reasons: string[];
}

/** A region's records split by what reads them (done once per region, not per instant: records.ts). */
export interface RegionRecords {
  health: SignalRecord[];
  grid: SignalRecord[];
  power: SignalRecord[];
  compute: SignalRecord[];
  /** The grid records read through gridPolicy, with their drain curves. */
  facts: GridFact[];
  /** The health rule's tally, laid out once for every instant (see tallyHealth). */
  tally: HealthScratch;
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

/** What a view needs besides the region's own records: fleet-wide freezes, the safety pass's floors, the plan's texts. */
export interface ViewContext {
  freezes: Override[];
  texts: Texts;
  /** The least gridPolicy share the safety limits allow at t (undefined: no limit). */
  floor?: (t: number) => { floor: number; why: string } | undefined;
  /** The loss pass's verdict on each claim of physical loss (rules/loss.ts); undefined: none trusted. */
  loss?: ReadonlyMap<GridFact, LossVerdict>;
  /** The recurring windows' occurrences acting on each region over the plan's horizon (rules/windows.ts); absent = none. */
  windows?: ReadonlyMap<RegionId, readonly RegionWindow[]>;
}

/**
 * One region at one instant, as the rules see it: the inputs (read only) and what the rules
 * before have set. One object per view (no closures, no per-rule allocation: the view runs
 * per region per instant, the planner's hot loop).
 */
export interface ViewAcc {
  readonly region: PlannerRegion;
  readonly rr: RegionRecords;
  readonly ovs: Override[];
  readonly t: number;
  readonly s: PlannerSettings;
  readonly ctx: ViewContext;
  /** The operator force-down / force-up in force at t (the force rule). */
  forceDown: Override | undefined;
  forceUp: Override | undefined;
  down: boolean;
  /** The least cap so far, and every reason in rule order. */
  share: number;
  /** The least cap so far but the soft holds (RegionView.firm). */
  firm: number;
  reasons: string[];
  /** gridPolicy's share before and after the safety limits and the freeze (the grid rule). */
  gridRaw: number;
  grid: number;
  lossRaw: number;
  goawayBy: number | undefined;
  /** The grid rule asks the gateway to refuse new streams (a freeze or a safety floor lifts it). */
  gridRefuse: boolean;
  /** The operator rule asks the gateway to refuse new streams (a drain to 0 past its deadline). */
  opRefuse: boolean;
  ttlCap: number | undefined;
  /** A grid event's import limit in force, W (Infinity: none), and whose: read by the power rule. */
  eventLimitW: number;
  eventLimitWhy: string;
  /** The region takes no spill (the compute rule: saturated). */
  noSpill: boolean;
  /** The tariff and practice windows' share (the windows rule): the grid rule starts from it, so the safety floor and the freeze apply. */
  winGrid: number;
  /** A tariff or practice window to 0 is in force: the grid rule asks the gateway to refuse new streams (unless a floor or freeze lifts it). */
  winRefuse: boolean;
}

/** A rule of the view: what it is, for the precedence table (docs/architecture.md), and what it does. */
export interface ViewRule {
  /** Short name, as the precedence table lists it. */
  readonly name: string;
  /** The module that holds it, relative to gslb/policy/. */
  readonly module: string;
  /** What it reads. */
  readonly reads: string;
  /** The instants at which what it sets can change (planner/instants.ts evaluates the region there). */
  readonly changesAt: string;
  /** What it sets. */
  readonly sets: string;
  apply(a: ViewAcc): void;
}

/** A plan-wide pass (after every region's schedule is made): described for the same table. */
export interface PlanPass {
  readonly name: string;
  readonly module: string;
  readonly reads: string;
  readonly changesAt: string;
  readonly sets: string;
}

/** A cap's reason as the rules word it. */
export function capWords(id: RegionId, c: number, why: string): string {
  return `${id}: ${why} → cap ${round(c)}`;
}

/** A cap with its words made already (capWords, mostly through the plan's texts). */
export function capText(a: ViewAcc, c: number, text: string, soft = false): void {
  if (c < a.share) a.share = c;
  if (!soft && c < a.firm) a.firm = c;
  if (c < 1) a.reasons.push(text);
}

/** A cap with its reason's words: made only when it caps. */
export function capWhy(a: ViewAcc, c: number, why: string): void {
  if (c < a.share) a.share = c;
  if (c < a.firm) a.firm = c;
  if (c < 1) a.reasons.push(capWords(a.region.id, c, why));
}

/** What the reason of a cap from a fact gone stale says (gslb/control/fleet.ts and the dashboard's timeline tell such a change from a scheduled one by it). */
export const STALE_MARK = 'is stale (policy: ';

/**
 * A stale record's cap by its kind's stale policy (`down` → 0, `degraded` → degradedShare,
 * otherwise none), worded "<what> from <source> is stale (policy: …)" once per plan.
 */
export function staleCap(a: ViewAcc, r: SignalRecord, what: string, pol: StalePolicy): void {
  const c = pol.then === 'down' ? 0 : pol.then === 'degraded' ? a.s.degradedShare : undefined;
  if (c === undefined) return;
  const texts = a.ctx.texts;
  capText(a, c, texts.get(r, 'stale') ?? texts.put(r, 'stale', capWords(a.region.id, c, `${what} from ${r.signal.source} ${STALE_MARK}${pol.then})`)));
}
