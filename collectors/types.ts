/**
 * The collector contract (docs/conventions.md "Observers write facts, deciders read them").
 * A collector learns facts about regions from a system operators already run and hands them
 * to `ctx.emit`; it never touches the store or the plan and never decides what a fact means
 * for traffic (config's gridPolicy does).
 */
import type { Logger } from 'pino';
import type { TSchema } from '@sinclair/typebox';
import type { Signal } from '../gslb/model/types.js';
import type { CounterFamily } from './kit/counters.js';
import type { ErrorSpec } from './kit/errors.js';

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
  /**
   * This running instance's own counters: a fresh copy of `family`'s template, which the host
   * keeps and exports in /metrics (see collectors/kit/counters.ts). Collectors call it through
   * `countersFor(ctx, family)`, once per instance. Optional: a test's context may leave it out.
   */
  counters?<T extends object>(family: CounterFamily<T>): T;
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
  /**
   * The source prefix every fact it emits starts with: its namespace (ADR 0021). Its section is
   * the principal of those facts on every node; no ingest token may be granted a prefix that
   * overlaps it while it is configured, and the host refuses a fact outside it.
   */
  sources: string;
  /**
   * What it emits, in a short Markdown phrase (the kinds, from what): the "facts" cell of the
   * collector table in collectors/README.md, rendered by collectorTable() (collectors/index.ts).
   */
  summary: string;
  /**
   * What check-config and a start should warn about in a valid section (e.g. a receiver
   * listening beyond loopback without a token), one sentence each naming the key. Optional.
   */
  warnings?(config: C): string[];
  start(ctx: CollectorContext<C>): Promise<() => Promise<void>>;
  /**
   * The collector's counters (polls, failures by code, payloads refused …): numbers, possibly
   * in nested objects, one copy per running instance. /metrics exports every numeric leaf of the
   * sum over this node's instances as gridsteer_collector_events_total{collector, event="a.b"},
   * zeros before the first instance starts.
   */
  counters?: CounterFamily<object>;
  /**
   * The collector's error classes (collectors/kit/errors.ts): every code of their tables is
   * listed in the README's Errors section, and no other (collectors/index.test.ts).
   */
  errors?: ReadonlyArray<{ readonly codes: Readonly<Record<string, Readonly<ErrorSpec>>> }>;
}
