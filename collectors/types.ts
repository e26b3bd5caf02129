/**
 * The collector contract (CONVENTIONS.md habit 2: observers write facts, deciders read them).
 * A collector learns facts about regions from a system operators already run and hands them
 * to `ctx.emit`; it never touches the store or the plan and never decides what a fact means
 * for traffic (config's gridPolicy does).
 */
import type { Logger } from 'pino';
import type { TSchema } from '@sinclair/typebox';
import type { Signal } from '../gslb/model/types.js';

export type { Signal, SignalKind } from '../gslb/model/types.js';

/** A region as collectors see it. */
export interface FleetRegion {
  id: string;
  /** The addresses DNS answers for the region (IPv4 and IPv6). */
  endpoints: string[];
}

/** What a running collector is given. */
export interface CollectorContext<C = unknown> {
  /** This collector's validated, frozen config section. */
  config: C;
  /** `log.child({ module: 'collectors/<name>' })`. */
  log: Logger;
  /** Hands one fact to the state layer. Never throws; a rejected signal is logged and counted. */
  emit(signal: Signal): void;
  /** Current time in ms epoch (injected so tests control it). */
  now(): number;
  /** This node's id (unique in the fleet): a prober's vantage point, e.g. in `source`. */
  node: string;
  /** The fleet as configured now: each region's id and the addresses it is answered with. */
  fleet(): FleetRegion[];
  /** Aborted when the collector must stop. */
  signal: AbortSignal;
}

/**
 * A collector: one folder under collectors/ (index.ts, README.md with Name, Signals,
 * Config and Example sections, tests, fixtures/) and one line in collectors/index.ts.
 * `start` resolves once running and returns the function that stops it.
 * A collector's failure (peer down, garbage payload) is logged once per state change and
 * counted; it must never throw out of its timers or handlers.
 */
export interface Collector<C = unknown> {
  /** The registry name: the folder's name. */
  name: string;
  /** Schema of its config section (TypeBox; unknown keys are errors). */
  configSchema: TSchema;
  /** `poller` runs on one node under the store's lease; `receiver` runs on every node. */
  mode: 'poller' | 'receiver';
  start(ctx: CollectorContext<C>): Promise<() => Promise<void>>;
  /**
   * The collector's own counters since the process started (polls, failures by code,
   * payloads refused …): numbers, possibly in nested objects. /metrics exports every numeric
   * leaf as gridsteer_collector_events_total{collector, event="a.b"}.
   */
  stats?: () => unknown;
}
