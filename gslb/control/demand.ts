/**
 * Measured demand: every 10 seconds (on the wall-clock 10 s boundary) the primary collects
 * the steered queries each answering process counted — by name and by the client's home
 * region — and adds them to the store's bucket for the 10 seconds just ended. Every node
 * does the same, so a bucket sums the whole fleet; the planner reads only closed buckets
 * (ADR 0005).
 *
 * Demand is a measurement, not state anyone acted on: a bucket that cannot be written (the
 * store is unreachable) is counted in `lost` and logged once per outage, not retried.
 */
import type { DemandCounts, DemandBucket } from '../model/snapshot.js';
import type { StateStore } from '../state/store.js';

export const BUCKET_MS = 10_000;

/** Sums per-process counts into the store's bucket rows for `bucket` (ms epoch). */
export function bucketRows(bucket: number, parts: DemandCounts[]): DemandBucket[] {
  const sum = new Map<string, DemandBucket>();
  for (const part of parts) {
    for (const [name, homes] of Object.entries(part)) {
      for (const [home, queries] of Object.entries(homes)) {
        if (!(queries > 0)) continue;
        const k = `${home}|${name}`;
        const row = sum.get(k);
        if (row) row.queries += queries;
        else sum.set(k, { bucket, home, name, queries });
      }
    }
  }
  return [...sum.values()].sort((a, b) => (a.home + a.name < b.home + b.name ? -1 : 1));
}

export class DemandFlusher {
  private timer: NodeJS.Timeout | null = null;
  private failing = false;
  /** Buckets' rows that could not be written. */
  lost = 0;
  /** Queries written to the store since start. */
  written = 0;

  constructor(
    private readonly store: StateStore,
    private readonly collect: () => Promise<DemandCounts[]>,
    private readonly warn: (msg: string) => void,
    private readonly clock: () => number = Date.now,
    /** Real ms a span of the clock takes (GRIDSTEER_TEST_CLOCK runs `rate` times as fast: platform/clock.ts realMs). */
    private readonly realMs: (ms: number) => number = (ms) => ms,
  ) {}

  start(): void {
    const schedule = () => {
      const now = this.clock();
      // Just after the next boundary, so the bucket just ended is complete here.
      const wait = BUCKET_MS - (now % BUCKET_MS) + 50;
      this.timer = setTimeout(() => {
        void this.flush(Math.floor((this.clock() - 50) / BUCKET_MS) * BUCKET_MS - BUCKET_MS).finally(() => {
          if (this.timer) schedule();
        });
      }, this.realMs(wait));
      this.timer.unref?.();
    };
    schedule();
  }

  /** Collects and writes the counts as bucket `bucket`. */
  async flush(bucket: number): Promise<void> {
    let rows: DemandBucket[] = [];
    try {
      rows = bucketRows(bucket, await this.collect());
      if (rows.length === 0) return;
      await this.store.addDemand(rows);
      this.written += rows.reduce((n, r) => n + r.queries, 0);
      this.failing = false;
    } catch (e) {
      this.lost += rows.length;
      if (!this.failing) this.warn(`state: demand for ${new Date(bucket).toISOString()} not recorded (${(e as Error).message}); counting continues`);
      this.failing = true;
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
