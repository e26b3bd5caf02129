/**
 * The region states and their words: the one table the API (`state` in GET /v1/status and
 * GET /v1/regions), the CLI (`gridsteer status`), the metrics (`gridsteer_region_state`) and
 * the web dashboard (its chips, map colours and legend, from the API's `state`) all use.
 * Pure: a region's state from the plan's step in force and its next change.
 */
import { Type } from '@sinclair/typebox';

/** Every state, in the order a legend lists them, with what it means in words. */
export const REGION_STATE_TABLE = [
  { state: 'up', meaning: 'takes all its clients' },
  { state: 'draining', meaning: 'takes part of its clients: capped, or ramping down' },
  { state: 'drained', meaning: 'takes none of its clients (share 0), but is not down' },
  { state: 'restoring', meaning: 'ramping back: takes part of its clients, its next step takes more' },
  { state: 'refusing', meaning: 'its gateway is told to refuse new streams' },
  { state: 'down', meaning: 'answers no one: down by its health probes or by a force' },
] as const;

export type RegionState = (typeof REGION_STATE_TABLE)[number]['state'];
export const REGION_STATES: readonly RegionState[] = REGION_STATE_TABLE.map((s) => s.state);

/** The state as an API schema (an enum of the table's words). */
export const RegionStateSchema = Type.Union(
  REGION_STATE_TABLE.map((s) => Type.Literal(s.state)),
  { description: `the region's state: ${REGION_STATE_TABLE.map((s) => `${s.state} (${s.meaning})`).join('; ')}` },
);

/** What a region does at one instant, as far as its state is concerned. */
export interface StateStep {
  down: boolean;
  share: number;
  refuse?: boolean;
}

/**
 * The state of a region whose step in force is `now` and whose next change (one that changes
 * its share or down, see `visiblyDiffers`) is `next`: down; refusing; restoring (taking part of
 * its clients, and the next step takes more); drained (share 0 — also when a restore is
 * scheduled: a region drained ahead of a grid event has its way back planned before the event
 * has even begun); draining (share below 1); else up.
 */
export function regionStateOf(now: StateStep, next?: StateStep): RegionState {
  if (now.down) return 'down';
  if (now.refuse === true) return 'refusing';
  if (now.share < 1) {
    if (now.share > 0 && next && !next.down && next.share > now.share) return 'restoring';
    return now.share <= 0 ? 'drained' : 'draining';
  }
  return 'up';
}

/** Whether a next step changes what the state and "next change" show: down, or the share (0 when down). */
export function visiblyDiffers(a: StateStep, b: StateStep): boolean {
  return a.down !== b.down || (a.down ? 0 : a.share) !== (b.down ? 0 : b.share);
}
