/**
 * What the rules derive from a region's records and share with one another and with the
 * planner: the grid facts (the grid rule reads them, the power, health and loss rules and the
 * practice pass too), the loss pass's verdicts, the health tally (the health and slow-start
 * rules, the planner's vote-only skip) and a region's window occurrences. Types only, and it
 * imports no rule: rule.ts and every rule import them from here, so no rule imports another
 * for a type and no re-export brings an import circle back (docs/architecture.md "The rule
 * contract"). Pure: no clock reads, no I/O.
 */
import type { RegionId } from '../../model/types.js';
import type { GridRule } from '../../model/policy.js';
import type { WindowOccurrence } from '../../model/windows.js';
import type { DrainCurve } from '../drain.js';

/**
 * One grid fact read through gridPolicy: a grid record's current content, or — while it
 * restores — the content it had before it changed or was cancelled (GridFold.last).
 */
export interface GridFact {
  rule: GridRule;
  /** In words, e.g. "grid event e1 from openadr3/vtn: load-shed, 2026-…–2026-…". */
  what: string;
  /** The window [start, end) in which it is in force (end already cut at a change). */
  start: number;
  end: number;
  /** In force from here: the start, or when it was learned if later (nothing acts on what was not yet known). */
  from: number;
  /** The cap its rule asks for (1 = none), after the source's trust. */
  cap: number;
  limitW?: number;
  note: string;
  effect: string;
  shadow: boolean;
  previous: boolean;
  /** A grid alert past its expiresAt is kept (until its stale policy ends it): said so from here. */
  keptFrom?: number;
  priority?: number;
  priorityKey: string;
  curve?: DrainCurve;
  /**
   * A claim of physical loss (its rule has `loss`: a drain, or an import limit leaving less
   * than the region's minServingW): whether it is trusted is the loss pass's (rules/loss.ts).
   */
  loss?: LossClaim;
}

/** What a fact of physical loss says, for the loss pass: who says it, and the drain curve to 0 it asks for. */
export interface LossClaim {
  source: string;
  /** Who wrote it (model/principal.ts principalOf): the loss bounds count principals, not sources (ADR 0021). */
  principal: string;
  /** Written under a grant (model/principal.ts grantedRecord): a claim without one is never trusted and never corroborates. */
  granted: boolean;
  /** The record now says the event is cancelled (this claim is what it said before). */
  cancelled: boolean;
  /** The event id at its source (grid.event), or the record key (grid.alert). */
  eventId: string;
  observedAt: number;
  learnedAt: number;
  /** The drain curve to 0 (the fact's own for a drain; for an import limit, to 0 instead of the share it leaves). */
  curve: DrainCurve;
}

/**
 * What the loss pass made of one claim of physical loss:
 * - trusted: planned as a fact (out of every answer, hook-drained before T) whatever the safety limits and the freeze say;
 * - waiting: trusted on its source's word alone would exceed that source's bound: it waits for a second source or an operator's drain, and counts as any cap meanwhile;
 * - untrusted: counts as any cap (the safety limits apply), with the reason.
 */
export interface LossVerdict {
  status: 'trusted' | 'waiting' | 'untrusted';
  why: string;
  region: RegionId;
  /** Untrusted because an operator distrusts its source or principal. */
  distrusted?: true;
}

/**
 * A region's endpoints (health.probe keys, in the order healthAt lists them) and, per health
 * record, its endpoint's index (−1: not a health fold); arrays viewAt's tally reuses at each
 * instant instead of making new ones.
 */
export interface HealthScratch {
  keys: string[];
  keyOf: Int32Array;
  ups: Int32Array;
  downs: Int32Array;
  /** Latest turn up of the vantages voting up; NaN: one of them never turned (healthAt's undefined). */
  since: Float64Array;
  /** Down votes, at the last tally, from probes made at or after its `fresh` instant (tallyHealth). */
  lateDowns: number;
}

/** One acting occurrence as one region sees it: with its drain curve (the region's TTL0). */
export interface RegionWindow {
  occ: WindowOccurrence;
  curve: DrainCurve;
  /** "maintenance window w (reason), start–end" */
  words: string;
}
