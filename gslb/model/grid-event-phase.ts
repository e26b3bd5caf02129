/**
 * Where a grid event or alert stands now, in words: the one table the API (`phase` in
 * GET /v1/grid-events and the stream), the CLI (`gridsteer events`) and the web dashboard (its
 * list and timeline, from the API's `phase`) all use (issue 18: an event whose end has passed
 * is history, never shown as current). Pure: from the event's times and now.
 */
import { Type } from '@sinclair/typebox';

/** Every phase, in the order a listing shows them, with what it means in words. */
export const GRID_EVENT_PHASE_TABLE = [
  { phase: 'in-force', meaning: 'started and not ended: acted on now' },
  { phase: 'announced', meaning: 'starts later: drained ahead as its notice allows' },
  { phase: 'over', meaning: 'its end has passed: history, acted on no more' },
  { phase: 'cancelled', meaning: 'cancelled by its source before its end: acted on no more' },
] as const;

export type GridEventPhase = (typeof GRID_EVENT_PHASE_TABLE)[number]['phase'];

/** The phase as an API schema (an enum of the table's words). */
export const GridEventPhaseSchema = Type.Union(
  GRID_EVENT_PHASE_TABLE.map((p) => Type.Literal(p.phase)),
  { description: `where it stands now: ${GRID_EVENT_PHASE_TABLE.map((p) => `${p.phase} (${p.meaning})`).join('; ')}` },
);

/** The times that decide a phase: absent start = in force since announced; absent end = open. */
export interface PhaseTimes {
  start?: number;
  end?: number;
  cancelled: boolean;
}

/** over (end ≤ now, cancelled or not); cancelled; announced (start > now); else in force. */
export function gridEventPhaseOf(e: PhaseTimes, now: number): GridEventPhase {
  if (e.end !== undefined && e.end <= now) return 'over';
  if (e.cancelled) return 'cancelled';
  if (e.start !== undefined && e.start > now) return 'announced';
  return 'in-force';
}

/**
 * A replay: learned when its end had already passed (a collector reading a feed's history, or
 * a late re-delivery). Stored as history; it never drove a drain.
 */
export function isReplay(e: { end?: number; learnedAt: number }): boolean {
  return e.end !== undefined && e.end <= e.learnedAt;
}

/** Whether a phase is history: the CLI lists it apart, the dashboard greys it and lists it under "history". */
export function isHistory(phase: GridEventPhase): boolean {
  return phase === 'over';
}
