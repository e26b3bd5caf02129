/**
 * Runs a poller of an outside system (an OpenADR VTN, an ISO feed, a scrape) on one node
 * of the fleet at a time, under a store lease with a fencing token
 * (docs/design.md "Many nodes"). Every node runs a LeaseRunner for each poller; the one holding the lease runs
 * the poller, renewing every `ttlMs / 3`; the others try to take it each renewal period.
 *
 * - A leader that cannot renew (store unreachable, or the lease taken after it expired)
 *   stops its poller at once; its writes would be refused anyway: the poller writes with
 *   the `fence` it was started with, and the store refuses a token that is not current.
 * - A leader that dies is replaced once its lease has expired: within `ttlMs` plus one
 *   renewal period of its last renewal.
 * - stop() stops the poller and gives the lease up, so a clean shutdown hands over at once.
 */
import type { StateStore } from './store.js';

/** What a poller writes with: pass it to StateStore.putSignal. */
export interface Fence {
  lease: string;
  token: number;
}

/** Starts the poller for a term of leadership; resolves to a function that stops it. */
export type StartPoller = (fence: Fence) => Promise<() => Promise<void> | void> | (() => Promise<void> | void);

export interface LeaseRunnerOptions {
  store: StateStore;
  /** The lease's name, e.g. `collectors/openadr3`. */
  name: string;
  /** This node's id (unique in the fleet). */
  holder: string;
  /** Lease length, ms. */
  ttlMs: number;
  start: StartPoller;
  /** Leadership changes and errors, in words. */
  log?: (level: 'info' | 'warn', msg: string) => void;
}

export interface LeaseStatus {
  leader: boolean;
  token: number | null;
  /** ms epoch (this node's clock) of the last change of `leader`. */
  since: number;
}

export class LeaseRunner {
  private timer: NodeJS.Timeout | null = null;
  private stopPoller: (() => Promise<void> | void) | null = null;
  private token: number | null = null;
  private since = Date.now();
  private busy = false;
  private stopped = false;

  constructor(private readonly o: LeaseRunnerOptions) {}

  status(): LeaseStatus {
    return { leader: this.token !== null, token: this.token, since: this.since };
  }

  /** Starts trying for the lease now and every ttlMs / 3. */
  run(): void {
    if (this.timer || this.stopped) return;
    const period = Math.max(50, Math.floor(this.o.ttlMs / 3));
    void this.tick();
    this.timer = setInterval(() => void this.tick(), period);
  }

  private async tick(): Promise<void> {
    if (this.busy || this.stopped) return;
    this.busy = true;
    try {
      let lease = null;
      try {
        lease = await this.o.store.acquireLease(this.o.name, this.o.holder, this.o.ttlMs);
      } catch (e) {
        if (this.token !== null) this.o.log?.('warn', `lease ${this.o.name}: cannot renew (${(e as Error).message}); stopping the poller`);
      }
      if (this.stopped) return;
      if (lease && this.token === lease.token) return; // renewed
      if (this.token !== null) await this.demote();
      if (lease) await this.promote(lease.token);
    } finally {
      this.busy = false;
    }
  }

  private async promote(token: number): Promise<void> {
    this.token = token;
    this.since = Date.now();
    this.o.log?.('info', `lease ${this.o.name}: ${this.o.holder} leads with token ${token}`);
    try {
      this.stopPoller = await this.o.start({ lease: this.o.name, token });
    } catch (e) {
      this.o.log?.('warn', `lease ${this.o.name}: the poller failed to start (${(e as Error).message}); giving the lease up`);
      this.token = null;
      await this.o.store.releaseLease(this.o.name, this.o.holder, token).catch(() => undefined);
    }
  }

  private async demote(): Promise<void> {
    const stop = this.stopPoller;
    this.stopPoller = null;
    this.token = null;
    this.since = Date.now();
    this.o.log?.('info', `lease ${this.o.name}: ${this.o.holder} no longer leads`);
    await Promise.resolve(stop?.()).catch(() => undefined);
  }

  /** Stops the poller and gives the lease up (a clean handover). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const token = this.token;
    if (token !== null) {
      await this.demote();
      await this.o.store.releaseLease(this.o.name, this.o.holder, token).catch(() => undefined);
    }
  }
}
