/**
 * The rule contract (docs/architecture.md "The rule contract"): what a planner rule is, what
 * it may read and what it may set. A rule is a small stage that reads a region's inputs at
 * one instant — the records of the kinds it declares (`kinds`), the derivations it declares
 * (`derived`), the overrides, the plan's context — and acts through the outputs below, the
 * same for every rule: a share cap with its reason (capText, capWhy, staleCap), down (markDown),
 * refuse new streams with its reason (refuseNew: one mechanism, decided after every rule has
 * run, so no rule's refusal depends on the order), no spill (noSpill), a TTL cap (capTtl) and
 * the instants at which what it sets can change (`instants`). The view (planner/view.ts) runs
 * the rules of rules/index.ts in their written order over one accumulator; caps combine by
 * minimum, so the order only decides which reason is listed first and what a later rule may
 * read of an earlier one (the power rule reads the grid rule's import limit; the automation
 * limits read every automation obligation's share). This module imports no rule: the types
 * rules share are in shared.ts. Pure: no clock reads, no I/O.
 */
import type { Override, RegionId } from '../../model/types.js';
import type { SignalRecord } from '../../model/snapshot.js';
import type { SignalKind } from '../../model/kinds/index.js';
import type { StalePolicy } from '../settings.js';
import type { GridFact, HealthScratch, LossVerdict, RegionWindow } from './shared.js';
import { type PlannerRegion, type PlannerSettings, round } from '../settings.js';

/** A region's situation at one instant: what the rules made of it. */
export interface RegionView {
  down: boolean;
  /** The gateway should refuse new streams (an obligation to take nothing is in force). */
  refuse: boolean;
  /** Why it refuses (the first reason a rule gave: refuseNew), when it does. */
  refuseWhy?: string;
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

/**
 * A region's records routed to the rules that read them, once per region (not per instant:
 * records.ts). `byKind` holds, for every kind a rule or a derivation declares, the region's
 * records of that kind in record order (an empty array where it has none); a kind nothing
 * declares is not routed. The derivations are made once from their kinds' records.
 */
export interface RegionRecords {
  readonly byKind: { readonly [K in SignalKind]: readonly SignalRecord[] };
  /** The grid records read through gridPolicy, with their drain curves (from grid.alert, grid.event and power.budget: records.ts DERIVATIONS). */
  readonly facts: GridFact[];
  /** The health tally, laid out once for every instant (from health.probe: see tallyHealth). */
  readonly tally: HealthScratch;
}

/** What a rule may declare it reads besides its kinds' records. */
export type Derivation = 'facts' | 'tally';

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
  /** gridPolicy's share before and after the safety limits and the freeze (the automation limits). */
  gridRaw: number;
  grid: number;
  lossRaw: number;
  goawayBy: number | undefined;
  /** Refuse new streams, and why (refuseNew): an obligation no switch lifts (an operator's drain, a maintenance window, a trusted physical loss). */
  refuseWhy: string | undefined;
  /** Refuse new streams on automation's word, and why (refuseNew with `automation`): lifted by a freeze above 0 or a safety floor. */
  autoRefuseWhy: string | undefined;
  /** A freeze above 0 or a safety floor holds gridPolicy's share up: automation's refusal does not hold (the automation limits). */
  autoLifted: boolean;
  ttlCap: number | undefined;
  /** A grid event's import limit in force, W (Infinity: none), and whose: read by the power rule. */
  eventLimitW: number;
  eventLimitWhy: string;
  /** The region takes no spill (noSpill). */
  noSpill: boolean;
  /**
   * gridPolicy's discretionary share so far (automationCap): every automation obligation —
   * grid facts, tariff windows, practice runs — lowers it; the automation limits then apply the
   * safety floor and the freeze to it and cap the region by what is left.
   */
  auto: number;
  /** The same without the soft holds (a drain curve's hold and restore after its end). */
  autoFirm: number;
  /** From this step automation's obligations to take nothing want GOAWAY sent (Infinity: none). */
  autoGoaway: number;
  /** Trusted physical losses' share (the grid rule, from the loss pass's verdicts): no switch lifts it. */
  loss: number;
  lossFirm: number;
  lossGoaway: number;
  /** The sources of the trusted losses acting, in words (for the reason when a limit would hold them). */
  lossSources: string;
}

/** What a rule's `instants` sees: the region's routed records, its overrides and the plan's context. */
export interface InstantsInput {
  readonly region: PlannerRegion;
  readonly rr: RegionRecords;
  readonly ovs: readonly Override[];
  readonly s: PlannerSettings;
  readonly ctx: ViewContext;
}

/** A rule of the view: what it is, for the precedence table (docs/architecture.md), what it reads, and what it does. */
export interface ViewRule {
  /** Short name, as the precedence table lists it. */
  readonly name: string;
  /** The module that holds it, relative to gslb/policy/. */
  readonly module: string;
  /** The signal kinds whose records it reads (records.ts routes exactly these; a test fails on a read of any other). */
  readonly kinds: readonly SignalKind[];
  /** The derivations of records it reads (RegionRecords.facts, .tally), if any. */
  readonly derived?: readonly Derivation[];
  /** What it reads, in words. */
  readonly reads: string;
  /** The instants at which what it sets can change, in words (its `instants` finds them). */
  readonly changesAt: string;
  /** What it sets. */
  readonly sets: string;
  /**
   * The instants at which what it sets can change, each with why (ANY_CHANGE, or VOTES_ONLY
   * where only health votes change: the planner may skip an instant whose votes decide as the
   * one before). Absent: the rule changes only where its records expire or turn stale (the
   * planner adds those for every routed record).
   */
  instants?(x: InstantsInput, at: (t: number, why?: number) => void): void;
  apply(a: ViewAcc): void;
}

/** A plan-wide pass (after every region's schedule is made): described for the same table. */
export interface PlanPass {
  readonly name: string;
  readonly module: string;
  /** The signal kinds whose records it reads (routed like a view rule's). */
  readonly kinds: readonly SignalKind[];
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

/** Marks the region down with the reason's words. */
export function markDown(a: ViewAcc, text: string): void {
  a.down = true;
  a.reasons.push(text);
}

/**
 * The gateway is to refuse new streams, with why. `automation`: on automation's word (a grid
 * fact's obligation to take nothing, a tariff window or practice run to 0), which a freeze
 * above 0 or a safety floor lifts; otherwise nothing lifts it. The view decides once every
 * rule has run (planner/view.ts), so no refusal depends on which rule runs first. The first
 * reason given is kept.
 */
export function refuseNew(a: ViewAcc, why: string, automation = false): void {
  if (automation) a.autoRefuseWhy ??= why;
  else a.refuseWhy ??= why;
}

/** Whether the view refuses new streams, and why (once every rule has run). */
export function refusal(a: ViewAcc): string | undefined {
  return a.refuseWhy ?? (a.autoLifted ? undefined : a.autoRefuseWhy);
}

/** Lowers gridPolicy's discretionary share (ViewAcc.auto) with the reason's words; soft: a hold the spill pass may give back (RegionView.firm). */
export function automationCap(a: ViewAcc, c: number, text: string, soft = false): void {
  if (c < a.auto) a.auto = c;
  if (!soft && c < a.autoFirm) a.autoFirm = c;
  a.reasons.push(text);
}

/** TTLs of at most `s` seconds, with the reason's words. */
export function capTtl(a: ViewAcc, s: number, text: string): void {
  a.ttlCap = Math.min(a.ttlCap ?? Infinity, s);
  a.reasons.push(text);
}

/** The region takes no spill (its own clients still come), with the reason's words. */
export function noSpill(a: ViewAcc, text: string): void {
  a.noSpill = true;
  a.reasons.push(text);
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
