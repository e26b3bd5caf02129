/**
 * The answering processes: DNS in the primary (`workers: 0`) or in forked workers
 * (node:cluster, gslb/serve/worker.ts), each handed what to serve and every later version of
 * it. A worker that dies is replaced after 500 ms; one that exits before binding fails the
 * start. The primary asks workers for their metrics and demand counts over IPC and never
 * waits more than 2 s for one.
 *
 * Who may call: gslb/main.ts, once per process. It never reads the config or the store.
 */
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { Responder } from '../dns/respond.js';
import { reservePorts, startDnsServer, type DnsServer, type ListenAddress, type TcpLimits } from '../dns/server.js';
import type { DnsStats } from '../dns/stats.js';
import type { GeoTable } from '../geo/table.js';
import type { DemandCounts } from '../model/snapshot.js';
import type { MetricsJson } from './metrics.js';
import { servingState, type Prepared } from './serving.js';
import type { FromWorker, ToWorker } from './worker.js';

export interface DnsProcessesOptions {
  /** 0 = answer in this process. */
  workers: number;
  listen: ListenAddress[];
  tcp: TcpLimits;
  log: Logger;
  /** What to serve now: the prepared config and state, and the geo table in force (null before the first). */
  current(): { prepared: Prepared; table: GeoTable | null };
}

/** One line of /readyz about the answering processes (the API's ReadinessCheck shape). */
export interface DnsCheck {
  name: string;
  ok: boolean;
  detail: string;
}

interface WorkerSlot {
  worker: Worker;
  bound: boolean;
  acked: string;
  /** A state message is being written to the worker's channel (its send callback has not run). */
  sending: boolean;
  /** A newer state was published meanwhile: sent, as current() has it then, once the write is done. */
  stale: boolean;
}

export class DnsProcesses {
  private local: { responder: Responder; server: DnsServer } | undefined;
  private readonly slots = new Map<number, WorkerSlot>();
  private closing = false;
  private seq = 0;
  private readonly pendingMetrics = new Map<number, (data: MetricsJson) => void>();
  private readonly pendingDemand = new Map<number, (data: DemandCounts) => void>();
  /** `udp://host:port` and `tcp://host:port` per DNS address, once started. */
  addresses: string[] = [];

  constructor(private readonly o: DnsProcessesOptions) {}

  /** Listens (in this process or in the workers); resolves with the addresses once bound. */
  async start(): Promise<string[]> {
    if (this.o.workers === 0) {
      const queryLog = this.o.log.child({ module: 'querylog' });
      const { prepared, table } = this.o.current();
      const rrlLog = this.o.log.child({ module: 'ratelimit' });
      const responder = new Responder(servingState(prepared.state, prepared.zones, table), {
        queryLog: (e) => queryLog.info(e, 'query'),
        rateLimitLog: (e) => rrlLog.warn(e, e.mode === 'log' ? 'dns: client prefix over its rate (log only)' : 'dns: client prefix rate limited'),
        processes: 1,
      });
      const server = await startDnsServer(this.o.listen, responder, this.o.tcp, this.o.log);
      this.local = { responder, server };
      this.addresses = server.addresses;
    } else {
      const listen = await reservePorts(this.o.listen);
      cluster.setupPrimary({ exec: fileURLToPath(new URL('./worker.js', import.meta.url)), args: [], silent: false });
      const results = await Promise.all(Array.from({ length: this.o.workers }, () => this.forkOne(listen)));
      this.addresses = results[0]!;
    }
    return this.addresses;
  }

  /** Hands what `current()` returns now to every answering process. */
  publish(): void {
    const { prepared, table } = this.o.current();
    if (this.local) this.local.responder.swap(servingState(prepared.state, prepared.zones, table));
    for (const w of this.slots.values()) if (w.bound) this.sendState(w);
  }

  /**
   * Sends the state in force to one worker, at most one message in its channel at a time: a
   * plan published while the last is still being written is sent once that write is done, and
   * only the newest (plans published meanwhile are skipped, not queued). Without this a write
   * storm (a plan every 100 ms, each of thousands of steps) queued every plan in the primary's
   * memory faster than a worker read them: 7 GB in 4 minutes in the ingest campaign, and the
   * kernel killed the node.
   */
  private sendState(w: WorkerSlot): void {
    if (w.sending) {
      w.stale = true;
      return;
    }
    w.sending = true;
    w.stale = false;
    const ok = w.worker.send({ t: 'state', state: this.o.current().prepared.state } satisfies ToWorker, undefined, {}, () => {
      w.sending = false;
      if (w.stale && w.bound && this.slots.has(w.worker.id)) this.sendState(w);
    });
    if (!ok && !w.worker.isConnected()) w.sending = false;
  }

  /** The in-process responder's counters (undefined with workers: theirs come over IPC). */
  stats(): DnsStats | undefined {
    return this.local?.responder.stats;
  }

  /** Whether every answering process serves version `want`. */
  check(want: string): DnsCheck {
    if (this.local) return { name: 'dns', ok: this.local.responder.version === want, detail: `answering in the primary on ${this.addresses.join(' ')}` };
    const s = [...this.slots.values()];
    const behind = s.filter((w) => !w.bound || w.acked !== want);
    const n = this.o.workers;
    return {
      name: 'dns-workers',
      ok: s.length === n && behind.length === 0,
      detail:
        behind.length === 0 && s.length === n
          ? `${s.length} workers serve version ${want}`
          : `${s.length}/${n} workers up; behind: ${behind.map((w) => `#${w.worker.id} at ${w.acked || 'nothing'}`).join(', ') || 'none'}`,
    };
  }

  /** Every process's demand counts since the last call (a worker that does not answer within 2 s is left out). */
  async takeDemand(): Promise<DemandCounts[]> {
    return [...(this.local ? [this.local.responder.takeDemand()] : []), ...(await this.ask('demand', this.pendingDemand))];
  }

  /** The workers' metrics (the primary's own registry is the caller's). */
  workerMetrics(): Promise<MetricsJson[]> {
    return this.ask('metrics', this.pendingMetrics);
  }

  /** Stops at once, without waiting (a start that failed after DNS was bound). */
  async abort(): Promise<void> {
    this.closing = true;
    await this.local?.server.close();
    for (const w of this.slots.values()) w.worker.kill();
  }

  /** Closes the in-process server, then disconnects every worker (SIGKILL after 3 s). */
  async close(): Promise<void> {
    this.closing = true;
    await this.local?.server.close();
    await Promise.all(
      [...this.slots.values()].map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.worker.isDead()) return resolve();
            const t = setTimeout(() => {
              w.worker.kill('SIGKILL');
              resolve();
            }, 3000);
            w.worker.once('exit', () => {
              clearTimeout(t);
              resolve();
            });
            w.worker.disconnect();
          }),
      ),
    );
  }

  private forkOne(listen: ListenAddress[]): Promise<string[]> {
    const worker = cluster.fork();
    const slot: WorkerSlot = { worker, bound: false, acked: '', sending: false, stale: false };
    this.slots.set(worker.id, slot);
    const log = this.o.log;
    return new Promise((resolve, reject) => {
      worker.on('message', (m: FromWorker) => {
        switch (m.t) {
          case 'hello': {
            const msg: ToWorker = { t: 'serve', state: this.o.current().prepared.state, listen, tcp: this.o.tcp, logLevel: log.level, processes: this.o.workers };
            worker.send(msg);
            break;
          }
          case 'bound':
            slot.bound = true;
            slot.acked = m.version;
            resolve(m.addresses);
            break;
          case 'ack':
            slot.acked = m.version;
            break;
          case 'metrics':
            this.pendingMetrics.get(m.id)?.(m.data as MetricsJson);
            break;
          case 'demand':
            this.pendingDemand.get(m.id)?.(m.data);
            break;
          case 'fatal':
            log.error({ worker: worker.id, err: m.message }, 'dns worker failed');
            reject(new Error(`dns worker: ${m.message}`));
            break;
        }
      });
      worker.on('exit', (code, signal) => {
        this.slots.delete(worker.id);
        reject(new Error(`dns worker exited (${signal ?? code}) before binding`));
        if (this.closing) return;
        log.error({ worker: worker.id, code, signal }, 'dns worker exited; starting another');
        setTimeout(() => {
          if (!this.closing) this.forkOne(listen).catch((e) => log.error({ err: (e as Error).message }, 'dns worker restart failed'));
        }, 500);
      });
    });
  }

  /**
   * Asks every bound worker one question over IPC ({t, id}) and collects the answers that
   * arrive within 2 s (a worker that does not answer is left out, never waited for).
   */
  private ask<T>(t: 'metrics' | 'demand', pending: Map<number, (data: T) => void>): Promise<T[]> {
    return Promise.all(
      [...this.slots.values()]
        .filter((w) => w.bound)
        .map(
          (w) =>
            new Promise<T | null>((resolve) => {
              const id = ++this.seq;
              const timer = setTimeout(() => {
                pending.delete(id);
                resolve(null);
              }, 2000);
              pending.set(id, (data) => {
                clearTimeout(timer);
                pending.delete(id);
                resolve(data);
              });
              w.worker.send({ t, id } satisfies ToWorker);
            }),
        ),
    ).then((xs) => xs.filter((x): x is Awaited<T> => x !== null) as T[]);
  }
}
