/**
 * Housekeeping jobs run by node-cron (issue 21, docs/schedules.md "Housekeeping jobs"): each
 * job's slot is started **at most once fleet-wide** — node-cron's `distributed` mode with a
 * run coordinator on the store (storeRunCoordinator: the lease `job-<name>`, held by
 * `<node>@<slot>`, renewed while the run lasts and kept after it, so a node that comes late
 * for the slot, or after the runner died, does not start it again); `noOverlap` on each node,
 * and the lease makes it fleet-wide (a slot that comes while the last run still holds the
 * lease is skipped, and said so). Every job is idempotent.
 *
 * A run that changes shared state says so (JobContext.changing) before it does: its start and
 * finish are then audit entries (`job.start`, `job.finish`, target `job:<name>@<slot ISO>`),
 * so every node reports the fleet's runs that changed something; a start without a finish is
 * `running` until a later slot of the job starts, then `incomplete` (its node died or lost the
 * store mid-run). A run that found nothing to do leaves no audit entry (the audit log is for
 * changes): the node that ran it keeps it, and GET /v1/jobs on that node lists it.
 *
 * Jobs run on node-cron's timers, which read the real clock. Under GRIDSTEER_TEST_CLOCK
 * (JobRunnerOptions.testRate; gslb/platform/clock.ts) the runner walks the test clock's seconds
 * itself instead and asks node-cron's match() of each job's task which are slots; the run
 * coordinator, noOverlap and missed-slot counting are the same, and a slot's lease lasts half
 * the job's interval in real time (JobRunner.leaseFor).
 */
import cron, { type RunCoordinator, type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import type { AuditEntry } from '../model/snapshot.js';
import type { StateStore } from '../state/store.js';

export type JobOutcome = 'ok' | 'failed';

export interface JobDef {
  /** [a-z0-9-]: the lease, the audit target and the metric label. */
  name: string;
  /** When: a cron expression in UTC (node-cron syntax; a seconds field allowed). */
  cron: string;
  /** What it does, in words. */
  what: string;
  /**
   * Does the work; idempotent. A throw counts as `failed` with its message. Calls
   * `ctx.changing()` right before its first side effect on shared state: only such runs are
   * audited (`job.start` then, `job.finish` after), so a run that found nothing to do leaves no
   * trace in the audit log (it is kept by the node that ran it), and a run that died after
   * `changing()` is reported incomplete.
   */
  run(ctx: JobContext): Promise<{ outcome: JobOutcome; detail: string }>;
  /**
   * A job about this node's own files (the GeoIP database): runs on every node, without the
   * coordinator; its runs are kept by the node (not audited) and listed as this node's.
   */
  perNode?: boolean;
}

/** What a job's run is handed. */
export interface JobContext {
  /** Records (audits) that the run starts changing shared state; idempotent within a run. */
  changing(): Promise<void>;
}

export interface JobRunView {
  slot: number;
  node: string;
  startedAt: number;
  finishedAt?: number;
  outcome: 'running' | 'ok' | 'failed' | 'incomplete';
  detail: string;
}

export interface JobView {
  name: string;
  cron: string;
  what: string;
  /** ms epoch of the next slot (this node's schedule), or null when stopped. */
  nextRun: number | null;
  lastRun: JobRunView | null;
  /** Earlier runs, newest first (at most 10). */
  earlier: JobRunView[];
  /** This node since it started: runs it started, slots another node took (or the last run still held), slots missed (the event loop was blocked past node-cron's tolerance), runs skipped by noOverlap. */
  thisNode: { started: number; ok: number; failed: number; notElected: number; coordinatorError: number; missed: number; overlap: number };
}

/** The lease per job name: `job-<name>`. */
export const jobLease = (name: string) => `job-${name}`;

/**
 * node-cron's run coordinator on the store: shouldRun takes the job's lease for
 * `<node>@<slot>` (node-cron's key is `<task name>:<slot ISO>`); nothing releases it — it
 * expires `ttlMs` after the last renewal, before the job's next slot.
 */
export function storeRunCoordinator(store: StateStore, node: string, held: (key: string, token: number) => void): RunCoordinator {
  return {
    async shouldRun(key: string, ttlMs: number): Promise<boolean> {
      const i = key.indexOf(':');
      const name = key.slice(0, i).replace(/^gridsteer-/, '');
      const slot = key.slice(i + 1);
      const lease = await store.acquireLease(jobLease(name), `${node}@${slot}`, ttlMs);
      if (lease) held(key, lease.token);
      return lease !== null;
    },
  };
}

interface Counts {
  started: number;
  ok: number;
  failed: number;
  notElected: number;
  coordinatorError: number;
  missed: number;
  overlap: number;
}

export interface JobRunnerOptions {
  store: StateStore;
  /** This node's name (GRIDSTEER_NODE or host-pid). */
  node: string;
  log: Logger;
  jobs: JobDef[];
  /** How long a slot's lease lasts after its last renewal, ms: shorter than every job's interval (default 60 s). */
  leaseMs?: number;
  /** ms epoch for the audit entries (the process clock). */
  clock: () => number;
  /**
   * Tests only: GRIDSTEER_TEST_CLOCK's rate. The slots follow `clock` (the test clock) instead of
   * node-cron's real-clock timers, and a slot's lease is half the job's interval in real time.
   */
  testRate?: number;
}

/**
 * What node-cron logs as an error. A slot skipped because the run coordinator (the store) did
 * not answer is an outage the store already reports (fail static), counted as the slot's
 * `coordinator_error` outcome (metrics, /v1/jobs): a warning naming the job, not an error.
 * Anything else stays an error.
 */
export function nodeCronError(log: Pick<Logger, 'warn' | 'error'>, job: string, m: unknown): void {
  const text = m instanceof Error ? m.message : String(m);
  if (/run coordinator failed/i.test(text)) log.warn({ job }, `jobs: ${job}: the store did not answer the run coordinator, so this node skipped the slot (fail-closed; counted as coordinator_error)`);
  else log.error({ err: text, job }, 'jobs: node-cron');
}

export class JobRunner {
  private readonly tasks = new Map<string, ScheduledTask>();
  private readonly counts = new Map<string, Counts>();
  /** Per job: how long a slot's lease lasts after its last renewal, real ms. */
  private readonly leases = new Map<string, number>();
  private readonly heartbeats = new Set<NodeJS.Timeout>();
  /** The test-clock walkers (testRate set), one per job. */
  private readonly walkers = new Set<NodeJS.Timeout>();
  /** Per-node jobs' runs on this node, newest first (at most 11). */
  private readonly local = new Map<string, JobRunView[]>();
  private closed = false;

  constructor(private readonly o: JobRunnerOptions) {
    for (const j of o.jobs) this.counts.set(j.name, { started: 0, ok: 0, failed: 0, notElected: 0, coordinatorError: 0, missed: 0, overlap: 0 });
  }

  get jobs(): readonly JobDef[] {
    return this.o.jobs;
  }

  /** This node's counts per job (metrics). */
  countsOf(name: string): Counts | undefined {
    return this.counts.get(name);
  }

  start(): void {
    const log = this.o.log.child({ module: 'jobs' });
    for (const def of this.o.jobs) {
      const c = this.counts.get(def.name)!;
      const coordinator = storeRunCoordinator(this.o.store, this.o.node, () => undefined);
      const task = cron.createTask(def.cron, (ctx) => (def.perNode ? this.runLocal(def, ctx.date, c, log) : this.runSlot(def, ctx.date, c, log)), {
        name: `gridsteer-${def.name}`,
        timezone: 'UTC',
        noOverlap: true,
        // node-cron's own lease (real clock); under the test clock its timers do not run (walkTestClock).
        ...(def.perNode ? {} : { distributed: true, runCoordinator: coordinator, distributedLease: this.o.leaseMs ?? 60_000 }),
        unref: true,
        logger: { info: () => undefined, warn: (m) => log.warn(m), error: (m) => nodeCronError(log, def.name, m), debug: () => undefined },
      });
      task.on('execution:skipped', (ctx) => {
        if (ctx.reason === 'coordinator-error') c.coordinatorError++;
        else c.notElected++;
      });
      task.on('execution:missed', (ctx) => {
        c.missed++;
        log.warn({ job: def.name, slot: ctx.date.toISOString() }, `jobs: ${def.name} missed its slot at ${ctx.date.toISOString()} (this node's event loop was blocked)`);
      });
      task.on('execution:overlap', () => void c.overlap++);
      this.tasks.set(def.name, task);
      this.leases.set(def.name, this.leaseFor(def, task));
      if (this.o.testRate === undefined) void task.start();
      else this.walkTestClock(def, task, coordinator, c, log, this.o.testRate);
    }
  }

  /**
   * Tests only (testRate): every ~1 s of the test clock, the seconds since the last look that
   * node-cron's match() takes for a slot; the newest is run as node-cron would (noOverlap, the run
   * coordinator), older ones in the same look are counted missed. Bounded: one look walks
   * at most the seconds the test clock moved since the last.
   */
  private walkTestClock(def: JobDef, task: ScheduledTask, coordinator: RunCoordinator, c: Counts, log: Logger, rate: number): void {
    let last = Math.floor(this.o.clock() / 1000) * 1000;
    let running = false;
    const look = () => {
      const now = Math.floor(this.o.clock() / 1000) * 1000;
      let due: number | null = null;
      for (let s = last + 1000; s <= now; s += 1000) {
        if (!task.match(new Date(s))) continue;
        if (due !== null) c.missed++;
        due = s;
      }
      last = Math.max(last, now);
      if (due === null || this.closed) return;
      if (running) {
        c.overlap++;
        return;
      }
      running = true;
      const slot = new Date(due);
      void (async () => {
        if (def.perNode) return this.runLocal(def, slot, c, log);
        let elected: boolean;
        try {
          elected = await coordinator.shouldRun(`gridsteer-${def.name}:${slot.toISOString()}`, this.leases.get(def.name)!);
        } catch {
          c.coordinatorError++;
          return;
        }
        if (!elected) c.notElected++;
        else await this.runSlot(def, slot, c, log);
      })()
        .catch((e) => log.error({ err: String(e), job: def.name }, 'jobs: a test-clock slot failed'))
        .finally(() => (running = false));
    };
    const timer = setInterval(look, Math.max(5, Math.round(1000 / rate)));
    timer.unref?.();
    this.walkers.add(timer);
  }

  /**
   * A slot's lease, real ms: JobRunnerOptions.leaseMs, else 60 s (shorter than every job's
   * interval). Under the test clock, half the job's interval in real time (at most 60 s, at
   * least 20 ms): long enough that a node coming late for a slot whose runner died does not
   * start it again, short enough to free the next slot.
   */
  private leaseFor(def: JobDef, task: ScheduledTask): number {
    if (this.o.leaseMs !== undefined) return this.o.leaseMs;
    const rate = this.o.testRate;
    if (rate === undefined) return 60_000;
    const a = this.nextSlot(def, task);
    const b = a === null ? null : this.nextSlot(def, task, a);
    return b === null ? Math.max(20, Math.round(60_000 / rate)) : Math.min(60_000, Math.max(20, Math.round((b - a!) / 2 / rate)));
  }

  /** The next slot of a job after `from` on this runner's clock (test clock: node-cron's getNextRun reads the real one), or null. */
  private nextSlot(def: JobDef, task: ScheduledTask, from = this.o.clock()): number | null {
    if (this.o.testRate === undefined) return task.getNextRun()?.getTime() ?? null;
    // Second by second for a seconds field, else minute by minute: at most 3,000 steps (a seconds job within 50 min, others within 2 days).
    const step = def.cron.trim().split(/\s+/).length === 6 ? 1000 : 60_000;
    for (let t = Math.floor(from / step) * step + step, i = 0; i < 3000; i++, t += step) if (task.match(new Date(t))) return t;
    return null;
  }

  /** This node's run of a job, newest first (at most 11 kept). */
  private keepLocal(name: string, run: JobRunView): void {
    const list = this.local.get(name) ?? [];
    list.unshift(run);
    this.local.set(name, list.slice(0, 11));
  }

  /** One slot of a job, on the node elected for it: heartbeat on the lease; audited start and finish when it changes something. */
  private async runSlot(def: JobDef, slotDate: Date, c: Counts, log: Logger): Promise<void> {
    if (this.closed) return;
    const slot = slotDate.toISOString();
    const target = `job:${def.name}@${slot}`;
    const holder = `${this.o.node}@${slot}`;
    c.started++;
    const startedAt = this.o.clock();
    const local: JobRunView = { slot: slotDate.getTime(), node: this.o.node, startedAt, outcome: 'running', detail: 'running' };
    this.keepLocal(def.name, local);
    let audited = false;
    const ctx: JobContext = {
      changing: async () => {
        if (audited) return;
        audited = true;
        await this.o.store.appendAudit({ at: this.o.clock(), actor: this.o.node, action: 'job.start', target, reason: def.what, before: null, after: { job: def.name, slot: slotDate.getTime(), node: this.o.node } });
      },
    };
    // Renew the lease while the run lasts: no other node takes the next slot meanwhile.
    const leaseMs = this.leases.get(def.name)!;
    const hb = setInterval(() => void this.o.store.acquireLease(jobLease(def.name), holder, leaseMs).catch(() => undefined), Math.max(20, Math.floor(leaseMs / 3)));
    hb.unref?.();
    this.heartbeats.add(hb);
    let result: { outcome: JobOutcome; detail: string };
    try {
      result = await def.run(ctx);
    } catch (e) {
      result = { outcome: 'failed', detail: (e as Error).message };
    } finally {
      clearInterval(hb);
      this.heartbeats.delete(hb);
    }
    if (this.closed) return;
    c[result.outcome]++;
    const finishedAt = this.o.clock();
    Object.assign(local, { finishedAt, outcome: result.outcome, detail: result.detail });
    if (!audited) {
      if (result.outcome !== 'ok') log.warn({ job: def.name, slot, detail: result.detail }, `jobs: ${def.name} failed: ${result.detail}`);
      return;
    }
    await this.o.store.appendAudit({ at: finishedAt, actor: this.o.node, action: 'job.finish', target, reason: `${result.outcome}: ${result.detail}`, before: null, after: { job: def.name, slot: slotDate.getTime(), node: this.o.node, outcome: result.outcome, detail: result.detail, ms: finishedAt - startedAt } });
    (result.outcome === 'ok' ? log.info.bind(log) : log.warn.bind(log))({ job: def.name, slot, outcome: result.outcome, detail: result.detail }, `jobs: ${def.name} ${result.outcome}: ${result.detail}`);
  }

  /** One slot of a per-node job: run here, kept here. */
  private async runLocal(def: JobDef, slotDate: Date, c: Counts, log: Logger): Promise<void> {
    if (this.closed) return;
    c.started++;
    const run: JobRunView = { slot: slotDate.getTime(), node: this.o.node, startedAt: this.o.clock(), outcome: 'running', detail: 'running' };
    this.keepLocal(def.name, run);
    let result: { outcome: JobOutcome; detail: string };
    try {
      result = await def.run({ changing: async () => undefined });
    } catch (e) {
      result = { outcome: 'failed', detail: (e as Error).message };
    }
    c[result.outcome]++;
    Object.assign(run, { finishedAt: this.o.clock(), outcome: result.outcome, detail: result.detail });
    if (result.outcome !== 'ok') log.warn({ job: def.name, detail: result.detail }, `jobs: ${def.name} failed: ${result.detail}`);
  }

  /** Every job with the fleet's last runs (from the audit log's newest `scan` entries) and this node's counts. */
  async status(scan = 2000): Promise<JobView[]> {
    const runs = jobRuns(await this.o.store.audit(scan));
    return this.o.jobs.map((def) => {
      // The fleet's audited runs and this node's own (those that changed nothing are kept here only).
      const here = (this.local.get(def.name) ?? []).map((r) => ({ ...r }));
      const fleet = def.perNode ? [] : (runs.get(def.name) ?? []);
      const seen = new Set(fleet.map((r) => `${r.slot}@${r.node}`));
      const mine = [...fleet, ...here.filter((r) => !seen.has(`${r.slot}@${r.node}`))].sort((a, b) => b.slot - a.slot);
      const task = this.tasks.get(def.name);
      return { name: def.name, cron: def.cron, what: def.what, nextRun: task ? this.nextSlot(def, task) : null, lastRun: mine[0] ?? null, earlier: mine.slice(1, 11), thisNode: { ...this.counts.get(def.name)! } };
    });
  }

  /**
   * Stops scheduling; a run in progress is left to end (its finish is not recorded after close).
   * `abandon` (tests: a node that dies mid-run) also stops renewing the leases of runs in progress.
   */
  async close(abandon = false): Promise<void> {
    this.closed = true;
    for (const w of this.walkers) clearInterval(w);
    this.walkers.clear();
    for (const t of this.tasks.values()) await t.destroy();
    this.tasks.clear();
    if (abandon) {
      for (const h of this.heartbeats) clearInterval(h);
      this.heartbeats.clear();
    }
  }
}

/** Per job, its runs from audit entries (newest first): a start without a finish is `running` until a later slot starts, then `incomplete`. */
export function jobRuns(entries: readonly AuditEntry[]): Map<string, JobRunView[]> {
  const bySlot = new Map<string, JobRunView & { job: string }>();
  for (const e of [...entries].sort((a, b) => a.seq - b.seq)) {
    if (e.action !== 'job.start' && e.action !== 'job.finish') continue;
    const a = e.after as { job?: string; slot?: number; node?: string; outcome?: JobOutcome; detail?: string } | null;
    if (!a?.job || a.slot === undefined) continue;
    const key = `${a.job}@${a.slot}`;
    if (e.action === 'job.start') bySlot.set(key, { job: a.job, slot: a.slot, node: a.node ?? e.actor, startedAt: e.at, outcome: 'running', detail: 'no finish recorded yet' });
    else {
      const r = bySlot.get(key);
      if (r) Object.assign(r, { finishedAt: e.at, outcome: a.outcome ?? 'failed', detail: a.detail ?? e.reason });
    }
  }
  const grouped = new Map<string, (JobRunView & { job: string })[]>();
  for (const r of bySlot.values()) (grouped.get(r.job) ?? grouped.set(r.job, []).get(r.job)!).push(r);
  const out = new Map<string, JobRunView[]>();
  for (const [job, xs] of grouped) {
    xs.sort((a, b) => b.slot - a.slot);
    xs.forEach((r, i) => {
      if (r.outcome === 'running' && i > 0) Object.assign(r, { outcome: 'incomplete', detail: `no finish recorded: ${r.node} stopped or lost the store during the run; the slot was not run again` });
    });
    out.set(
      job,
      xs.map(({ job: _j, ...r }) => r),
    );
  }
  return out;
}
