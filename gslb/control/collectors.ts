/**
 * Runs the collectors configured under `collectors:` (one section per registry name). A
 * receiver starts on every node; a poller runs on one node at a time under the store lease
 * `collectors/<name>` (LeaseRunner), writing with its fence so a deposed leader's late facts
 * are refused. What a collector emits goes through the same validation and store as
 * `POST /v1/signals`; a refused or failed fact is logged once per change of outcome and
 * counted, never thrown back into the collector.
 */
import { now as clockNow } from '../platform/clock.js';
import type { Logger } from 'pino';
import type { Collector, CollectorContext, FleetRegion } from '../../collectors/types.js';
import type { Signal } from '../model/types.js';
import { LeaseRunner, type Fence } from '../state/lease.js';
import { GrantError, QuotaError, type StateService } from './service.js';
import { collectorIngester } from './ingest-grants.js';
import { SignalError } from '../state/signals.js';
import type { StateStore } from '../state/store.js';
import { sumCounters } from '../../collectors/kit/counters.js';

/** Per collector, what became of what it emitted. */
export interface CollectorCounts {
  stored: number;
  stale: number;
  rejected: number;
  failed: number;
}

export interface CollectorHostOptions {
  registry: readonly Collector[];
  /** The `collectors` config section: registry name → that collector's (validated) config. */
  sections: Record<string, unknown>;
  svc: StateService;
  store: StateStore;
  log: Logger;
  node: string;
  fleet(): FleetRegion[];
  /** Lease length for pollers, ms. */
  leaseMs: number;
  /** Per collector section, the regions it is granted (the configuration's ingest.collectors; absent = every region). */
  grants?: Readonly<Record<string, { readonly regions: readonly string[] }>>;
}

interface Running {
  name: string;
  stop(): Promise<void>;
  lease?: LeaseRunner;
}

export class CollectorHost {
  readonly counts = new Map<string, CollectorCounts>();
  /** Per collector, when a signal it emitted was last stored (ms epoch, the process clock). */
  readonly lastStored = new Map<string, number>();
  private running: Running[] = [];
  /** Last outcome per collector, to log only changes. */
  private lastOutcome = new Map<string, string>();
  /** Per collector, the counters of every instance this host started (ctx.counters), oldest first. */
  private readonly instanceCounters = new Map<string, object[]>();

  constructor(private readonly o: CollectorHostOptions) {}

  /** The collectors configured (and known); an unknown section was refused by the config schema. */
  private configured(): Collector[] {
    return this.o.registry.filter((c) => this.o.sections[c.name] !== undefined);
  }

  start(): void {
    for (const c of this.configured()) {
      this.counts.set(c.name, { stored: 0, stale: 0, rejected: 0, failed: 0 });
      if (c.mode === 'receiver') {
        let stop: (() => Promise<void>) | null = null;
        void this.startOne(c, undefined).then((s) => (stop = s));
        this.running.push({ name: c.name, stop: async () => stop?.() });
      } else {
        const lease = new LeaseRunner({
          store: this.o.store,
          name: `collectors/${c.name}`,
          holder: this.o.node,
          ttlMs: this.o.leaseMs,
          log: (level, msg) => this.o.log[level]({ module: `collectors/${c.name}` }, msg),
          start: async (fence) => {
            const stop = await this.startOne(c, fence);
            return stop ?? (() => undefined);
          },
        });
        lease.run();
        this.running.push({ name: c.name, lease, stop: () => lease.stop() });
      }
    }
  }

  /**
   * A collector's counters on this node: the sum over every instance this host started (so a
   * poller that lost and won its lease again keeps counting up), or its template's zeros before
   * the first. For /metrics (gridsteer_collector_events_total). Never throws.
   */
  stats(name: string): unknown {
    const c = this.o.registry.find((x) => x.name === name);
    return sumCounters(this.instanceCounters.get(name) ?? [], c?.counters?.template ?? {});
  }

  /** Which pollers this node leads now (for /readyz and tests). */
  leading(): string[] {
    return this.running.filter((r) => r.lease?.status().leader).map((r) => r.name);
  }

  private async startOne(c: Collector, fence: Fence | undefined): Promise<(() => Promise<void>) | null> {
    const log = this.o.log.child({ module: `collectors/${c.name}` });
    const abort = new AbortController();
    const counts = this.counts.get(c.name)!;
    // Its section is the principal of its facts, on every node (ADR 0021).
    const by = collectorIngester(c.name, c.sources, this.o.grants?.[c.name]?.regions);
    const ctx: CollectorContext = {
      config: this.o.sections[c.name],
      log,
      now: clockNow,
      node: this.o.node,
      fleet: this.o.fleet,
      signal: abort.signal,
      counters: (family) => {
        const made = family.create();
        const list = this.instanceCounters.get(c.name) ?? [];
        list.push(made);
        this.instanceCounters.set(c.name, list);
        return made;
      },
      // The contract collectors rely on (CollectorContext.emit): never throws; every outcome is counted.
      emit: (s: Signal) => {
        if (abort.signal.aborted) return;
        let stored: Promise<{ results: { stored: boolean }[] }>;
        try {
          stored = this.o.svc.ingest([s], new Set(this.o.fleet().map((r) => r.id)), fence, { by });
        } catch (e) {
          stored = Promise.reject(e);
        }
        stored.then(
          (r) => {
            if (r.results[0]?.stored) {
              counts.stored++;
              this.lastStored.set(c.name, clockNow());
            } else counts.stale++;
            this.outcome(c.name, log, 'ok', '');
          },
          (e: unknown) => {
            if (e instanceof SignalError || e instanceof GrantError || e instanceof QuotaError) {
              counts.rejected++;
              this.outcome(c.name, log, 'rejected', `collectors/${c.name}: a signal was refused: ${e.message}`);
            } else {
              counts.failed++;
              this.outcome(c.name, log, 'failed', `collectors/${c.name}: a signal could not be stored: ${(e as Error).message}`);
            }
          },
        );
      },
    };
    try {
      const stop = await c.start(ctx);
      log.info({ fence }, `collectors/${c.name}: started`);
      return async () => {
        abort.abort();
        await stop().catch((e: Error) => log.warn({ err: e.message }, `collectors/${c.name}: stop failed`));
      };
    } catch (e) {
      log.error({ err: (e as Error).message }, `collectors/${c.name}: could not start`);
      abort.abort();
      return null;
    }
  }

  private outcome(name: string, log: Logger, kind: string, msg: string): void {
    if (this.lastOutcome.get(name) === kind) return;
    this.lastOutcome.set(name, kind);
    if (kind === 'ok') log.info(`collectors/${name}: signals are being stored`);
    else log.warn(msg);
  }

  async stop(): Promise<void> {
    const r = this.running;
    this.running = [];
    await Promise.all(r.map((x) => x.stop().catch(() => undefined)));
  }
}
