/**
 * The primary's state service: it owns the store, validates what arrives (signals from the
 * push API and collectors, operator overrides), and re-plans on every store revision
 * (debounced), handing each new plan to `onPlan`. Plans are never computed on the query
 * path.
 *
 * Fail static: when the store cannot be read the last plan stays in force (its schedule
 * keeps running in decide), `status().stale` is true, and planning resumes with a full
 * snapshot as soon as the store answers again. Writes through an unreachable store reject
 * with StoreError `unavailable` (the API answers 503); nothing is dropped silently.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { FLEET, type Override, type OverrideAction, type Plan, type Signal } from '../model/types.js';
import { gridSharesAt, operatorShareAt, plan, type PlanInput, type PlannerSettings } from '../policy/planner/index.js';
import { SignalError, validateSignal, type ValidateOptions } from '../state/signals.js';
import type { SignalRecord, AuditEntry, QuarantineEntry, StoreSnapshot } from '../model/snapshot.js';
import { fingerprintOf, plannable, quarantineOf } from '../policy/quarantine.js';
import { errorWords, findPoison } from './quarantine.js';
import { StoreError, type StateStore, type StoreLoss, type StoreStatus } from '../state/store.js';
import { HORIZON_MS } from '../policy/rules/windows.js';
import { QuotaBuckets, type IngestQuota, type Ingester } from './ingest-grants.js';
import { signalId } from '../state/signals.js';
import { realTimers, type Timers } from '../platform/clock.js';

/** Largest clock difference between this node and the store before the node is not ready. */
export const MAX_CLOCK_SKEW_MS = 250;

/** An override as an operator asks for it (the API body); actor comes from the token. */
export interface OverrideRequest {
  region: string;
  action: OverrideAction;
  value?: number;
  ramp?: number;
  /** drain: the deadline (ms epoch). */
  by?: number;
  reason: string;
  start?: number;
  end?: number;
}

/** A refused override request: `field` names the body field. */
export class OverrideError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field} ${problem}`);
    this.name = 'OverrideError';
  }
}

/**
 * The override POST /v1/overrides (and the region routes: drain, force) stores for `req`
 * made at `now`, or an OverrideError naming the body field; pure, so the property test of
 * the core (test/core-total.test.ts) generates overrides through the API's own checks.
 */
export function overrideOf(req: OverrideRequest, actor: string, regions: ReadonlySet<string>, now: number): Omit<Override, 'id'> {
  if (!regions.has(req.region)) throw new OverrideError('body.region', `"${req.region}" is not a region of this fleet (known: ${[...regions].sort().join(', ')})`);
  if (req.reason.trim() === '') throw new OverrideError('body.reason', 'must say why, in words');
  if (req.action === 'freeze') throw new OverrideError('body.action', 'freeze acts on the whole fleet: use POST /v1/automation/freeze');
  if (req.action === 'distrust') throw new OverrideError('body.action', 'distrust names a grid source, not a region: use POST /v1/grid/distrust');
  const start = req.start ?? now;
  if (req.by !== undefined) {
    if (req.action !== 'drain') throw new OverrideError('body.by', `is a drain's deadline; it does not apply to ${req.action}`);
    if (req.by <= start) throw new OverrideError('body.by', `must be after the start (${new Date(start).toISOString()}): the deadline by which the region is drained`);
    if (req.end !== undefined && req.end <= req.by) throw new OverrideError('body.end', `must be after the deadline by (${new Date(req.by).toISOString()})`);
  }
  if (req.end !== undefined && req.end <= start) throw new OverrideError('body.end', `must be after start (${new Date(start).toISOString()})`);
  if (req.end !== undefined && req.end <= now) throw new OverrideError('body.end', 'is in the past');
  if (req.action === 'force-up' && req.end === undefined) throw new OverrideError('body.end', 'is required for force-up (a forgotten force-up keeps a dead region in service)');
  if (req.action === 'weight' && req.value === undefined) throw new OverrideError('body.value', 'is required for weight: the admission weight in [0, 1]');
  if ((req.action === 'force-up' || req.action === 'force-down' || req.action === 'undrain') && req.value !== undefined) {
    throw new OverrideError('body.value', `does not apply to ${req.action}; leave it out`);
  }
  return {
    region: req.region,
    action: req.action,
    ...(req.action === 'drain' ? { value: req.value ?? 0 } : req.value !== undefined ? { value: req.value } : {}),
    ramp: req.ramp ?? 0,
    ...(req.by !== undefined ? { by: req.by } : {}),
    actor,
    reason: req.reason,
    start,
    ...(req.end !== undefined ? { end: req.end } : {}),
  };
}

/** The checks a freeze and a distrust share: a reason in words, an end not past. */
function checkEnd(reason: string, until: number | undefined, now: number): void {
  if (reason.trim() === '') throw new OverrideError('body.reason', 'must say why, in words');
  if (until !== undefined && until <= now) throw new OverrideError('body.until', 'is in the past');
}

/** The fleet override POST /v1/automation/freeze stores (holding gridPolicy's shares `hold`), or an OverrideError. Pure. */
export function freezeOf(hold: Record<string, number>, reason: string, actor: string, now: number, until?: number): Omit<Override, 'id'> {
  checkEnd(reason, until, now);
  return { region: FLEET, action: 'freeze', ramp: 0, hold, actor, reason, start: now, ...(until !== undefined ? { end: until } : {}) };
}

/** The fleet override POST /v1/grid/distrust stores for a source prefix or a principal, or an OverrideError. Pure. */
export function distrustOf(target: { source?: string; principal?: string }, reason: string, actor: string, now: number, until?: number): Omit<Override, 'id'> {
  if ((target.source === undefined) === (target.principal === undefined)) throw new OverrideError('body.source', 'give exactly one of source (a source prefix) and principal (token:<name> or collector:<name>)');
  if (target.principal !== undefined && !/^(token|collector):[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/.test(target.principal)) {
    throw new OverrideError('body.principal', `must be token:<name> or collector:<name> (as GET /v1/grid-events shows it); got ${JSON.stringify(target.principal.slice(0, 80))}`);
  }
  checkEnd(reason, until, now);
  return { region: FLEET, action: 'distrust', ...(target.source !== undefined ? { source: target.source } : { principal: target.principal! }), ramp: 0, actor, reason, start: now, ...(until !== undefined ? { end: until } : {}) };
}

export interface IngestResult {
  revision: number;
  results: { stored: boolean; reason?: string }[];
}

/** A signal its writer may not speak for (ADR 0021): `field` is `signals[i].source`; nothing of the batch was stored. */
export class GrantError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
    readonly principal: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'GrantError';
  }
}

/** A batch over its principal's quota: nothing of it was stored; `retryAfter` s (0 = not before records expire). */
export class QuotaError extends Error {
  constructor(
    readonly principal: string,
    readonly quota: 'perMinute' | 'liveRecords',
    readonly problem: string,
    readonly retryAfter: number,
  ) {
    super(problem);
    this.name = 'QuotaError';
  }
}

/** Options of ingest: validation's, who writes (absent = unattributed: tooling and tests) and with what quota. */
export interface IngestOptions extends ValidateOptions {
  by?: Ingester;
}

export interface StateServiceOptions {
  /** Per-principal ingest quotas, read at each ingest (the configuration's `ingest:`; absent = none). */
  quota?: () => IngestQuota;
  store: StateStore;
  log: Logger;
  configHash: string;
  settings: PlannerSettings;
  debounceMs: number;
  /**
   * Under a burst of writes, a plan a write asks for starts at least this long after the
   * previous plan ended (state.planMinIntervalMs): writes meanwhile are coalesced into that
   * one plan. Plans due to the clock (the horizon epoch), the configuration, the store
   * answering again, or an operator's action on this node are not held by it. Default 0.
   */
  minIntervalMs?: number;
  /** Real-time timers for the debounce and the interval (default realTimers; tests pass their own). */
  timers?: Timers;
  onPlan(plan: Plan): void;
  /** ms epoch (tests pass their own). */
  clock?: () => number;
  /** This node's name in quarantine entries and their audit (default: the host name). */
  nodeId?: string;
  /** The planner (tests pass one that fails on purpose; default the real one). */
  planner?: (input: PlanInput) => Plan;
}

/** What the quarantine looks like from this node (status, /readyz, metrics, the CLI). */
export interface QuarantineView {
  /** Entries that hold a record out of planning now. */
  held: QuarantineEntry[];
  /** Entries whose record is gone or was written again since (released by the next successful plan). */
  idle: number;
  /** The last plan attempt threw and no record could be blamed (the last good plan stays in force): the error. */
  planError: string | null;
}

export class StateService {
  private current: Plan | null = null;
  /** The last snapshot read, kept to re-plan frozen while the store is unreachable. */
  private lastSnapshot: StoreSnapshot | null = null;
  private frozen = false;
  private watch: NodeJS.Timeout | null = null;
  private snapshotRev = -1;
  /** The pending plan's timer, when it is due (timers.now()) and whether it is urgent (schedule). */
  private timer: unknown = null;
  private timerDue = 0;
  private timerUrgent = false;
  private planning: Promise<void> | null = null;
  /** A write arrived during a plan: one more plan after it, spaced by minIntervalMs. */
  private again = false;
  /** An urgent request arrived during a plan: one more plan right after it. */
  private againNow = false;
  /** When the last plan run ended (timers.now()); -Infinity before the first. */
  private lastRunEnd = -Infinity;
  private readonly timers: Timers;
  private readonly minIntervalMs: number;
  /** Plan runs (a snapshot read, planned unless unchanged) and planner calls made by this node, for tests and the bench. */
  readonly planCounts = { runs: 0, planned: 0 };
  private lastError: string | null = null;
  private unsubscribe: (() => void) | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  private started = false;
  private readonly clock: () => number;
  private configHash: string;
  private settings: PlannerSettings;
  /** The horizon epoch of the plan in force (recurring windows are expanded over it). */
  private plannedEpoch = NaN;
  private readonly planner: (input: PlanInput) => Plan;
  private readonly nodeId: string;
  /** The quarantine as of the last snapshot read. */
  private quarantineView: QuarantineView = { held: [], idle: 0, planError: null };
  /** A quarantine search or write is under way (one at a time). */
  private quarantining = false;
  /** The store revision last searched (a revision is searched once; the next write searches again). */
  private searchedRevision = -1;

  constructor(private readonly o: StateServiceOptions) {
    this.clock = o.clock ?? Date.now;
    this.configHash = o.configHash;
    this.settings = o.settings;
    this.planner = o.planner ?? plan;
    this.nodeId = o.nodeId ?? hostname();
    this.timers = o.timers ?? realTimers;
    this.minIntervalMs = o.minIntervalMs ?? 0;
  }

  get store(): StateStore {
    return this.o.store;
  }

  /** The plan in force (null before the first successful plan). */
  get plan(): Plan | null {
    return this.current;
  }

  /**
   * Opens the store and plans once. When the store cannot be opened the node still starts
   * (answering from the configuration's plan, reported stale and not ready) and retries.
   */
  async start(): Promise<void> {
    try {
      await this.o.store.start();
      await this.opened();
    } catch (e) {
      // A store this build must not touch (a newer store format, another program's prefix, a
      // bad URL) needs an operator: starting anyway would hide it. Stored data never stops a
      // start: records that cannot be read or planned are quarantined (ADR 0020).
      if (e instanceof StoreError && e.code === 'invalid') throw e;
      this.lastError = (e as Error).message;
      this.o.log.error({ module: 'state', err: this.lastError }, 'state: cannot open the store; answering from the configuration until it can be');
      this.retryStart(1000);
    }
  }

  /** The store is open: follow its revisions, watch its health, and plan. */
  private async opened(): Promise<void> {
    this.started = true;
    this.unsubscribe = this.o.store.onRevision((revision) => {
      if (revision > this.seenRevision) this.seenRevision = revision;
      this.schedule();
    });
    this.watchStore();
    await this.replan();
  }

  private retryStart(delay: number): void {
    if (this.closed) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.o.store
        .start()
        .then(async () => {
          this.o.log.info({ module: 'state' }, 'state: store open');
          await this.opened();
        })
        .catch((e: Error) => {
          this.lastError = e.message;
          this.retryStart(Math.min(delay * 2, 10000));
        });
    }, delay);
    this.retry.unref?.();
  }

  /**
   * Fail static: every second, if the store has gone stale, re-plan from the last snapshot
   * with signal expiry frozen (nothing can be refreshed meanwhile); once it answers again,
   * plan from a full snapshot.
   */
  private watchStore(): void {
    if (this.watch) return;
    let ticks = 0;
    this.watch = setInterval(() => {
      // Nothing in a tick may stop the node: a failure is logged and the next tick runs.
      try {
        this.tick(++ticks);
      } catch (e) {
        this.o.log.error({ module: 'state', err: errorWords(e) }, 'state: the store watch failed; the plan in force stays');
      }
    }, 1000);
    this.watch.unref?.();
  }

  /** One second of the store watch (watchStore). */
  private tick(ticks: number): void {
    const stale = this.o.store.status().stale || this.lastError !== null;
    // Measured demand lands in the store every 10 s without a revision: plan again with it.
    if (ticks % 10 === 0 && !stale) {
      this.snapshotRev = -1;
      this.schedule();
    }
    if (stale && !this.frozen && this.lastSnapshot) {
      this.frozen = true;
      const loss = this.o.store.status().loss;
      if (loss) this.o.log.error({ module: 'state', loss }, 'state: the store lost data: answering from the last plan until an operator confirms');
      else this.o.log.warn({ module: 'state' }, 'state: the store is unreachable: answering from the last plan with signal expiry frozen');
      this.planAndAdopt(this.lastSnapshot, true);
    } else if (this.started && !Number.isNaN(this.plannedEpoch) && this.epoch() !== this.plannedEpoch) {
      // The horizon epoch advanced: recurring windows are expanded over the next one.
      if (this.frozen && this.lastSnapshot) this.planAndAdopt(this.lastSnapshot, true);
      else {
        this.snapshotRev = -1;
        this.schedule(0, true);
      }
    } else if (!stale && this.frozen) {
      this.snapshotRev = -1;
      this.schedule(0, true);
    }
  }

  /**
   * Plans `snap` and adopts the plan. Planning never stops the node (ADR 0020): when it throws,
   * the plan in force stays, the failure is logged, and the records that make it throw are
   * searched for and quarantined in the store (every node then plans without them). Returns
   * whether a plan was adopted.
   */
  private planAndAdopt(snap: StoreSnapshot, frozen: boolean): boolean {
    const q = quarantineOf(snap);
    let p: Plan;
    this.planCounts.planned++;
    try {
      p = this.planner({ configHash: this.configHash, snapshot: snap, settings: this.settings, ...(frozen ? { frozen: true } : {}), horizonEpoch: this.epoch() });
    } catch (e) {
      const why = errorWords(e);
      if (this.quarantineView.planError !== why) this.o.log.error({ module: 'state', revision: snap.revision, err: why }, 'state: planning failed; the plan in force stays while the records that cause it are found');
      this.quarantineView = { held: q.held, idle: q.idle.length, planError: why };
      this.searchAndQuarantine(snap, frozen);
      return false;
    }
    this.quarantineView = { held: q.held, idle: q.idle.length, planError: null };
    this.adopt(p, snap.revision);
    this.tidyQuarantine(snap);
    return true;
  }

  /** Finds the records that make planning `snap` throw and stores them as quarantined (one search at a time). */
  private searchAndQuarantine(snap: StoreSnapshot, frozen: boolean): void {
    if (this.quarantining || this.closed || snap.revision === this.searchedRevision) return;
    this.searchedRevision = snap.revision;
    this.quarantining = true;
    const planWith = (s: StoreSnapshot) => this.planner({ configHash: this.configHash, snapshot: s, settings: this.settings, ...(frozen ? { frozen: true } : {}), horizonEpoch: this.epoch() });
    let result: ReturnType<typeof findPoison>;
    try {
      result = findPoison(snap, planWith);
    } catch (e) {
      this.quarantining = false;
      this.o.log.error({ module: 'state', err: errorWords(e) }, 'state: the quarantine search failed; the plan in force stays');
      return;
    }
    if (result.found.length === 0) {
      this.quarantining = false;
      this.o.log.error(
        { module: 'state', plans: result.plans, err: result.baseError },
        result.baseError ? 'state: planning fails even without any stored record (the configuration or a defect): the plan in force stays; GET /readyz says so' : 'state: no stored record was found to cause the planning failure; the plan in force stays',
      );
      return;
    }
    const at = this.clock();
    const entries: QuarantineEntry[] = result.found.map((f) => ({ target: f.target, fingerprint: f.fingerprint, why: `planning with it failed: ${f.why}`, at, by: this.nodeId }));
    this.o.log.error({ module: 'state', plans: result.plans, quarantined: entries.map((e) => ({ target: e.target, why: e.why })) }, 'state: records that make planning fail are quarantined: every node plans without them');
    this.writeQuarantine(entries);
  }

  /** Stores quarantine entries; a failure is logged and the next failing plan tries again. */
  private writeQuarantine(entries: QuarantineEntry[]): void {
    this.quarantining = true;
    this.o.store
      .quarantine(entries)
      .then((r) => {
        if (r.added === 0) this.schedule(0, true);
      })
      .catch((e: unknown) => this.o.log.error({ module: 'state', err: errorWords(e) }, 'state: cannot store the quarantine; the plan in force stays and the next plan tries again'))
      .finally(() => {
        this.quarantining = false;
      });
  }

  /**
   * After a plan: records the store could not read are quarantined (so that every node and
   * the operator see them), and entries that hold nothing any more are released.
   */
  private tidyQuarantine(snap: StoreSnapshot): void {
    if (this.quarantining || this.closed || this.frozen) return;
    const q = quarantineOf(snap);
    const at = this.clock();
    const unread = (snap.unreadable ?? []).filter((u) => !q.targets.has(u.target)).map((u): QuarantineEntry => ({ target: u.target, fingerprint: fingerprintOf(u.raw), why: `could not be read: ${u.why}`, at, by: this.nodeId }));
    if (unread.length > 0) {
      this.o.log.error({ module: 'state', quarantined: unread.map((e) => ({ target: e.target, why: e.why })) }, 'state: stored records this build cannot read are quarantined');
      this.writeQuarantine(unread);
      return;
    }
    if (q.idle.length === 0) return;
    this.quarantining = true;
    void (async () => {
      for (const e of q.idle) {
        await this.o.store.releaseQuarantine(e.target, this.nodeId, 'the record is gone or was written again since: it is planned as it is now', at).catch((err: unknown) => {
          if (!(err instanceof StoreError && err.code === 'not_found')) this.o.log.warn({ module: 'state', target: e.target, err: errorWords(err) }, 'state: cannot release an idle quarantine entry');
        });
      }
    })().finally(() => {
      this.quarantining = false;
    });
  }

  /** The quarantine as this node last read it. */
  quarantine(): QuarantineView {
    return this.quarantineView;
  }

  /** The horizon epoch now: E = floor(now / HORIZON_MS), the plan input recurring windows are expanded over (rules/windows.ts). */
  epoch(): number {
    return Math.floor(this.clock() / HORIZON_MS);
  }

  /** The newest store revision this node has been told of (onRevision): ahead of snapshotRev while a plan is being made. */
  private seenRevision = -1;

  private adopt(p: Plan, revision: number): void {
    this.snapshotRev = revision;
    this.plannedEpoch = this.epoch();
    if (this.current && this.current.version === p.version) return;
    this.current = p;
    this.o.log.info({ module: 'state', revision, version: p.version, frozen: this.frozen, steps: Object.values(p.regions).reduce((n, xs) => n + xs.length, 0) }, 'state: new plan');
    this.o.onPlan(p);
  }

  /** The planner settings in force (what a region's answer TTL is made of: fleet.ts ttlBasisOf). */
  currentSettings(): PlannerSettings {
    return this.settings;
  }

  /** New configuration: plan again with it. */
  reconfigure(configHash: string, settings: PlannerSettings): void {
    this.configHash = configHash;
    this.settings = settings;
    this.snapshotRev = -1;
    this.schedule(0, true);
  }

  /**
   * Re-plans after `delay` (default debounceMs: coalescing bursts of revisions). Unless
   * `urgent`, not before minIntervalMs after the last plan ended, so a write storm costs one
   * plan per interval, not one per write; the first write after a quiet spell waits only the
   * debounce. An urgent request (the clock, the configuration, an operator's action) is
   * never held by the interval: it brings a pending plan forward.
   */
  schedule(delay = this.o.debounceMs, urgent = false): void {
    if (this.closed) return;
    const now = this.timers.now();
    const wait = urgent ? delay : Math.max(delay, this.lastRunEnd + this.minIntervalMs - now);
    if (this.timer !== null) {
      if (now + wait >= this.timerDue) {
        this.timerUrgent ||= urgent;
        return;
      }
      this.timers.clear(this.timer);
    }
    this.timerDue = now + wait;
    this.timerUrgent = urgent;
    this.timer = this.timers.set(() => {
      this.timer = null;
      const asUrgent = this.timerUrgent;
      // A plan ended since this timer was set: a write's plan keeps its interval from that one.
      if (!asUrgent && !this.planning && this.timers.now() < this.lastRunEnd + this.minIntervalMs) return this.schedule();
      // A replan never rejects on purpose; if it ever does, it is logged, never left to stop the process.
      this.run(asUrgent).catch((e: unknown) => this.o.log.error({ module: 'state', err: errorWords(e) }, 'state: a replan failed; the plan in force stays'));
    }, wait);
  }

  /** An operator's change on this node: plan it now, not after the burst interval (the store's revision alone would wait for it). */
  planSoon(): void {
    this.schedule(0, true);
  }

  /** Reads a full snapshot and plans from it (one at a time; a request during a run runs again right after it). */
  async replan(): Promise<void> {
    return this.run(true);
  }

  /** One plan run; during a run, an urgent request runs again right after it, a write's once its interval has passed. */
  private async run(urgent: boolean): Promise<void> {
    if (this.closed || !this.started) return;
    if (this.planning) {
      if (urgent) this.againNow = true;
      else this.again = true;
      return this.planning;
    }
    this.planCounts.runs++;
    this.planning = (async () => {
      if (this.o.store.status().loss) {
        // A data loss held for an operator: the last plan stays (frozen, as when failing static), never the emptied store's.
        if (this.lastSnapshot && !this.frozen) {
          this.frozen = true;
          this.o.log.error({ module: 'state', loss: this.o.store.status().loss }, 'state: the store lost data: answering from the last plan until an operator confirms');
          this.planAndAdopt(this.lastSnapshot, true);
        }
        return;
      }
      let snap: StoreSnapshot;
      // Revisions told of from here on are newer than this read only if above its revision:
      // the high-water mark starts again (a store that lost data, confirmed, counts anew).
      const seenBefore = this.seenRevision;
      this.seenRevision = -1;
      try {
        snap = await this.o.store.snapshot();
      } catch (e) {
        this.seenRevision = Math.max(this.seenRevision, seenBefore);
        const msg = (e as Error).message;
        if (this.lastError !== msg) this.o.log.warn({ module: 'state', err: msg }, 'state: cannot read the store; the last plan stays in force');
        this.lastError = msg;
        return;
      }
      this.seenRevision = Math.max(this.seenRevision, snap.revision);
      this.lastError = null;
      if (snap.revision === this.snapshotRev && this.current && !this.frozen && this.quarantineView.planError === null) return;
      const wasFrozen = this.frozen;
      if (this.frozen) this.o.log.info({ module: 'state', revision: snap.revision }, 'state: the store answers again: planning from a full snapshot');
      this.frozen = false;
      if (this.planAndAdopt(snap, false)) this.lastSnapshot = snap;
      else this.frozen = wasFrozen;
    })();
    try {
      await this.planning;
    } finally {
      this.planning = null;
      this.lastRunEnd = this.timers.now();
    }
    if (this.closed) return;
    if (this.againNow) {
      this.againNow = false;
      this.again = false;
      await this.run(true);
    } else if (this.again) {
      this.again = false;
      this.schedule();
    }
  }

  /**
   * Store status plus this service's view: stale when the last read failed; `failingStatic`
   * when the store was read once and now is not (the node answers from its last plan:
   * docs/design.md "Many nodes", fail static); `ready` when it is read and this node's clock
   * agrees with it.
   */
  status(): StoreStatus & { planRevision: number; seenRevision: number; lastError: string | null; ready: boolean; failingStatic: boolean; skewBad: boolean; why: string; quarantine: QuarantineView } {
    const st = this.o.store.status();
    const stale = st.stale || this.lastError !== null || !this.started;
    const skewBad = Math.abs(st.clockSkewMs) > MAX_CLOCK_SKEW_MS;
    let why = st.detail;
    if (!this.started) why = `store not open: ${this.lastError ?? 'starting'}`;
    else if (st.loss) why = st.detail;
    else if (this.lastError) why = `stale: ${this.lastError}; answering from plan ${this.current?.version ?? '(configuration)'}`;
    else if (skewBad) why = `this node's clock differs from the store's by ${st.clockSkewMs} ms (at most ${MAX_CLOCK_SKEW_MS} ms): fix NTP`;
    const q = this.quarantineView;
    if (q.planError) why = `${why}; planning fails (${q.planError}): answering from plan ${this.current?.version ?? '(configuration)'} while the records that cause it are found and quarantined`;
    if (q.held.length > 0) why = `${why}; ${q.held.length} record${q.held.length === 1 ? '' : 's'} quarantined, planned without (${q.held.slice(0, 3).map((e) => e.target).join(', ')}${q.held.length > 3 ? ', …' : ''}; gridsteer quarantine lists them)`;
    return { ...st, stale, planRevision: this.snapshotRev, seenRevision: this.seenRevision, lastError: this.lastError, ready: !stale && !skewBad, failingStatic: this.started && stale, skewBad, why, quarantine: q };
  }

  /**
   * Validates every signal first; if any is invalid nothing is stored and a SignalError is
   * thrown with `field` prefixed by its index (`signals[2].value.level`). Then stores them in
   * one batch (StateStore.putSignals: latest wins, an older one is reported `stale`, not an
   * error; `revision` is the newest revision of the answers). `opts.refuseEnded`: a
   * grid.event whose end has passed is refused (the API's path; collectors may replay history).
   */
  async ingest(input: unknown[], regions: ReadonlySet<string>, fence?: { lease: string; token: number }, opts: IngestOptions = {}): Promise<IngestResult> {
    const now = this.clock();
    const valid: Signal[] = input.map((s, i) => {
      try {
        return validateSignal(s, now, regions, opts);
      } catch (e) {
        if (e instanceof SignalError) throw new SignalError(`signals[${i}].${e.field}`.replace(/\.\(signal\)$/, ''), e.message.slice(e.field.length + 2));
        throw e;
      }
    });
    const by = opts.by;
    const grants: (string | undefined)[] = [];
    if (by) {
      valid.forEach((s, i) => {
        const a = by.authorize(s);
        if ('refused' in a) {
          this.countRefused(by.principal, 'forbidden');
          throw new GrantError(`signals[${i}].source`, a.refused, by.principal);
        }
        grants.push(a.grant);
      });
      this.checkQuota(by.principal, valid, now);
    }
    const results: IngestResult['results'] = [];
    let revision = 0;
    // One batched write (StateStore.putSignals: the answers of a loop over putSignal, in far fewer round trips).
    const items = valid.map((s, i) => (by ? { signal: s, by: { principal: by.principal, ...(grants[i] !== undefined ? { grant: grants[i] } : {}), ...(by.operator ? { operator: true as const } : {}) } } : { signal: s }));
    const put = items.length > 0 ? await this.o.store.putSignals(items, fence) : [];
    for (const r of put) {
      revision = Math.max(revision, r.revision);
      if (r.stored && by && this.o.quota) this.notePending(by.principal, r.record.id, r.revision);
      results.push(r.stored ? { stored: true } : r.reason === 'held' ? { stored: false, reason: `held: the record is ${r.holder}'s until it expires` } : { stored: false, reason: r.reason });
    }
    return { revision, results };
  }

  /** Refused ingest by principal and why (forbidden: outside its grants; quota: over a quota), for /metrics. */
  readonly ingestRefused = new Map<string, { forbidden: number; quota: number }>();
  private readonly quotaBuckets = new QuotaBuckets();
  /** Per principal, the ids of its live records in the last snapshot read (rebuilt once per snapshot). */
  private liveIds: { snap: StoreSnapshot; ids: Map<string, Set<string>> } | null = null;

  /** Per principal, ids this node stored that the last snapshot read may not hold yet (id → the write's revision). */
  private readonly pending = new Map<string, Map<string, number>>();

  private notePending(principal: string, id: string, revision: number): void {
    let m = this.pending.get(principal);
    if (!m) {
      if (this.pending.size >= 10_000) return;
      this.pending.set(principal, (m = new Map()));
    }
    m.set(id, revision);
  }

  private countRefused(principal: string, why: 'forbidden' | 'quota'): void {
    const c = this.ingestRefused.get(principal) ?? { forbidden: 0, quota: 0 };
    c[why]++;
    if (!this.ingestRefused.has(principal) && this.ingestRefused.size >= 10_000) return;
    this.ingestRefused.set(principal, c);
  }

  /**
   * The principal's quotas (IngestQuota): live records it would hold past liveRecords (counted
   * on the last snapshot this node read, plus the new ids of the batch), or signals past
   * perMinute on this node: QuotaError, nothing stored.
   */
  private checkQuota(principal: string, batch: readonly Signal[], now: number): void {
    const q = this.o.quota?.();
    if (!q) return;
    if (q.liveRecords > 0 && this.lastSnapshot) {
      if (!this.liveIds || this.liveIds.snap !== this.lastSnapshot) {
        const ids = new Map<string, Set<string>>();
        for (const r of this.lastSnapshot.records) {
          if (r.principal === undefined || r.signal.expiresAt <= now) continue;
          let set = ids.get(r.principal);
          if (!set) ids.set(r.principal, (set = new Set()));
          set.add(r.id);
        }
        this.liveIds = { snap: this.lastSnapshot, ids };
      }
      const snapRev = this.lastSnapshot.revision;
      const held = new Set(this.liveIds.ids.get(principal));
      // Writes of this node newer than the snapshot count too; those it holds already are forgotten.
      const pend = this.pending.get(principal);
      if (pend) {
        for (const [id, rev] of pend) {
          if (rev <= snapRev) pend.delete(id);
          else held.add(id);
        }
        if (pend.size === 0) this.pending.delete(principal);
      }
      const fresh = new Set(batch.map(signalId).filter((id) => !held.has(id))).size;
      const live = held.size;
      if (fresh > 0 && live + fresh > q.liveRecords) {
        this.countRefused(principal, 'quota');
        throw new QuotaError(principal, 'liveRecords', `${principal} holds ${live} live records and this batch adds ${fresh}; at most ${q.liveRecords} per principal (ingest.liveRecords): let records expire, or raise it`, 60);
      }
    }
    const wait = this.quotaBuckets.take(principal, batch.length, q.perMinute, now);
    if (wait > 0) {
      this.countRefused(principal, 'quota');
      throw new QuotaError(principal, 'perMinute', `${principal} sent more than ${q.perMinute} signals in a minute (ingest.perMinute, per node)`, wait);
    }
  }

  /** Checks and stores an operator override; `actor` is the token's name. */
  async createOverride(req: OverrideRequest, actor: string, regions: ReadonlySet<string>): Promise<Override> {
    const now = this.clock();
    const o = overrideOf(req, actor, regions, now);
    const { override } = await this.o.store.createOverride(o, now);
    this.planSoon();
    this.o.log.info({ module: 'state', actor, override }, 'state: override created');
    return override;
  }

  async endOverride(id: string, actor: string, reason: string): Promise<Override> {
    const { override } = await this.o.store.endOverride(id, actor, reason, this.clock());
    this.planSoon();
    this.o.log.info({ module: 'state', actor, id, reason }, 'state: override ended');
    return override;
  }

  /**
   * Undrain (DELETE /v1/regions/{id}/drain): ends every live drain of the region and ramps it
   * back from the level the drains had brought it to, over `restoreMs` (slow start), with an
   * `undrain` override that ends when the ramp is done. Returns what was ended and created.
   */
  async undrain(region: string, actor: string, reason: string, restoreMs: number): Promise<{ ended: Override[]; undrain: Override | null }> {
    if (reason.trim() === '') throw new OverrideError('query.reason', 'must say why, in words');
    const now = this.clock();
    const live = (await this.snapshot()).overrides.filter((o) => o.region === region);
    const from = operatorShareAt(this.settings, region, live, now);
    const drains = live.filter((o) => o.action === 'drain' || o.action === 'undrain');
    if (drains.filter((o) => o.action === 'drain').length === 0) throw new OverrideError('params.id', `region ${region} has no operator drain to end (GET /v1/overrides lists them)`);
    const ended: Override[] = [];
    let undrain: Override | null = null;
    // The undrain goes in first, so no plan ever sees the drains gone without the ramp.
    if (from < 1 && restoreMs > 0) {
      undrain = (await this.o.store.createOverride({ region, action: 'undrain', value: from, ramp: restoreMs, actor, reason, start: now, end: now + restoreMs }, now)).override;
    }
    for (const o of drains) ended.push((await this.o.store.endOverride(o.id, actor, reason, now)).override);
    this.planSoon();
    this.o.log.info({ module: 'state', actor, region, from, restoreMs }, 'state: region undrained');
    return { ended, undrain };
  }

  /**
   * Force a region up or down (POST /v1/regions/{id}/force) until `until`: ends the region's
   * earlier forces (a new force replaces them) and stores the new one.
   */
  async force(region: string, state: 'up' | 'down', until: number | undefined, reason: string, actor: string, regions: ReadonlySet<string>): Promise<{ ended: Override[]; force: Override }> {
    const req: OverrideRequest = { region, action: state === 'up' ? 'force-up' : 'force-down', reason, ...(until !== undefined ? { end: until } : {}) };
    const field = (e: unknown) => {
      if (e instanceof OverrideError && e.field === 'body.end') return new OverrideError('body.until', e.problem);
      return e;
    };
    // Validate before ending anything.
    try {
      this.checkOverride(req, regions);
    } catch (e) {
      throw field(e);
    }
    const now = this.clock();
    const old = (await this.snapshot()).overrides.filter((o) => o.region === region && (o.action === 'force-up' || o.action === 'force-down'));
    const force = await this.createOverride(req, actor, regions).catch((e: unknown) => {
      throw field(e);
    });
    const ended: Override[] = [];
    for (const o of old) ended.push((await this.o.store.endOverride(o.id, actor, `replaced by ${force.id}: ${reason}`, now)).override);
    this.planSoon();
    return { ended, force };
  }

  /**
   * End every force of a region (DELETE /v1/regions/{id}/force): its health decides again.
   * Audited like every end; 400 naming params.id when the region has no force in force.
   */
  async unforce(region: string, reason: string, actor: string): Promise<{ ended: Override[] }> {
    if (reason.trim() === '') throw new OverrideError('query.reason', 'must say why, in words');
    const now = this.clock();
    const forces = (await this.snapshot()).overrides.filter((o) => o.region === region && (o.action === 'force-up' || o.action === 'force-down') && (o.end === undefined || o.end > now));
    if (forces.length === 0) throw new OverrideError('params.id', `region ${region} has no force to end (GET /v1/overrides lists them)`);
    const ended: Override[] = [];
    for (const o of forces) ended.push((await this.o.store.endOverride(o.id, actor, reason, now)).override);
    this.planSoon();
    this.o.log.info({ module: 'state', actor, region, ended: ended.map((o) => o.id) }, 'state: force ended');
    return { ended };
  }

  /** Only the checks of createOverride (no write). */
  checkOverride(req: OverrideRequest, regions: ReadonlySet<string>): void {
    const now = this.clock();
    if (!regions.has(req.region)) throw new OverrideError('body.region', `"${req.region}" is not a region of this fleet (known: ${[...regions].sort().join(', ')})`);
    if (req.end !== undefined && req.end <= now) throw new OverrideError('body.end', 'is in the past');
    if (req.action === 'force-up' && req.end === undefined) throw new OverrideError('body.end', 'is required for force-up (a forgotten force-up keeps a dead region in service)');
  }

  /**
   * The operator's switch for automation (POST /v1/automation/freeze): on, it stores a fleet
   * override `freeze` holding gridPolicy's share of every region as the plan has it now
   * (until `until`, or until switched off); off, it ends every live freeze. Audited.
   */
  async freeze(on: boolean, reason: string, actor: string, until?: number): Promise<{ frozen: Override | null; ended: Override[] }> {
    const now = this.clock();
    checkEnd(reason, until, now);
    const snap = await this.snapshot();
    const live = snap.overrides.filter((o) => o.action === 'freeze');
    if (!on) {
      const ended: Override[] = [];
      for (const o of live) ended.push((await this.o.store.endOverride(o.id, actor, reason, now)).override);
      this.planSoon();
      this.o.log.info({ module: 'state', actor, ended: ended.length }, 'state: automation unfrozen');
      return { frozen: null, ended };
    }
    if (live.length > 0) throw new OverrideError('body.frozen', `automation is already frozen by ${live[0]!.actor} (${live[0]!.reason}) [${live[0]!.id}]; switch it off first`);
    const hold = gridSharesAt({ configHash: this.configHash, snapshot: snap, settings: this.settings, horizonEpoch: this.epoch() }, now);
    const { override } = await this.o.store.createOverride(freezeOf(hold, reason, actor, now, until), now);
    this.planSoon();
    this.o.log.info({ module: 'state', actor, hold }, 'state: automation frozen');
    return { frozen: override, ended: [] };
  }

  /**
   * Distrusts a grid source (ADR 0014): its claims of physical loss are no longer trusted (the
   * safety limits and the freeze apply to them as to any cap) until `until` or until trusted
   * again (`on` false ends every distrust of that exact source). Audited by the store.
   */
  /**
   * Distrusts (or trusts again) a grid source prefix or a principal (`token:<name>`,
   * `collector:<name>`; ADR 0021): exactly one of `target.source`, `target.principal`.
   */
  async distrust(on: boolean, target: { source?: string; principal?: string }, reason: string, actor: string, until?: number): Promise<{ distrusted: Override | null; ended: Override[] }> {
    const now = this.clock();
    const field = target.principal !== undefined ? 'body.principal' : 'body.source';
    const distrust = distrustOf(target, reason, actor, now, until);
    const what = target.source ?? target.principal!;
    const snap = await this.snapshot();
    const live = snap.overrides.filter(
      (o) => o.action === 'distrust' && (target.source !== undefined ? o.source === target.source : o.principal === target.principal) && (o.end === undefined || o.end > now),
    );
    if (!on) {
      if (live.length === 0) throw new OverrideError(field, `no distrust of "${what}" is in force (GET /v1/overrides lists them)`);
      const ended: Override[] = [];
      for (const o of live) ended.push((await this.o.store.endOverride(o.id, actor, reason, now)).override);
      this.planSoon();
      this.o.log.info({ module: 'state', actor, ...target, ended: ended.length }, 'state: grid source trusted again');
      return { distrusted: null, ended };
    }
    if (live.length > 0) throw new OverrideError(field, `"${what}" is already distrusted by ${live[0]!.actor} (${live[0]!.reason}) [${live[0]!.id}]`);
    const { override } = await this.o.store.createOverride(distrust, now);
    this.planSoon();
    this.o.log.warn({ module: 'state', actor, ...target }, 'state: grid source distrusted: its claims of physical loss no longer bypass the safety limits');
    return { distrusted: override, ended: [] };
  }

  /** The live snapshot (for previews and operator actions), without the records its quarantine holds out. */
  async snapshot(): Promise<StoreSnapshot> {
    return plannable(await this.o.store.snapshot());
  }

  /**
   * The signal records the plan in force was computed from (the last snapshot read; null
   * before the first), and whether it was planned frozen (the store unreachable: no expiry).
   */
  planRecords(): { records: SignalRecord[]; frozen: boolean } | null {
    return this.lastSnapshot ? { records: plannable(this.lastSnapshot).records, frozen: this.frozen } : null;
  }

  /** The snapshot the plan in force was computed from, while the store is read (null before the first, or while failing static). */
  planSnapshot(): StoreSnapshot | null {
    return this.status().failingStatic || !this.lastSnapshot ? null : plannable(this.lastSnapshot);
  }

  /** The planner's settings and config hash in force. */
  planInputs(): { configHash: string; settings: PlannerSettings; horizonEpoch: number } {
    return { configHash: this.configHash, settings: this.settings, horizonEpoch: this.epoch() };
  }

  async overrides(): Promise<Override[]> {
    return (await this.snapshot()).overrides;
  }

  /** Confirms the store's data loss (POST /v1/store/confirm-loss); audited in the store. */
  async confirmLoss(actor: string, reason: string): Promise<{ loss: StoreLoss; revision: number }> {
    if (reason.trim() === '') throw new OverrideError('body.reason', 'must say why, in words');
    const r = await this.o.store.confirmLoss(actor, reason, this.clock());
    this.o.log.warn({ module: 'state', actor, reason, loss: r.loss, revision: r.revision }, 'state: data loss confirmed by an operator: planning from the store as it is now');
    this.snapshotRev = -1;
    this.schedule(0, true);
    return r;
  }

  /** Releases a quarantined record (it is planned again) or drops it (deleted); audited in the store. */
  async endQuarantine(how: 'release' | 'drop', target: string, actor: string, reason: string): Promise<{ entry: QuarantineEntry; revision: number }> {
    if (reason.trim() === '') throw new OverrideError('body.reason', 'must say why, in words');
    try {
      const r = how === 'release' ? await this.o.store.releaseQuarantine(target, actor, reason, this.clock()) : await this.o.store.dropQuarantined(target, actor, reason, this.clock());
      this.planSoon();
      this.o.log.warn({ module: 'state', actor, target, reason }, how === 'release' ? 'state: quarantined record released: it is planned again' : 'state: quarantined record dropped from the store');
      // A released record that still fails is searched for again.
      this.searchedRevision = -1;
      return r;
    } catch (e) {
      if (e instanceof StoreError && e.code === 'not_found') {
        const held = this.quarantineView.held.map((x) => x.target);
        throw new OverrideError('body.target', `nothing is quarantined as ${JSON.stringify(target)}${held.length > 0 ? ` (quarantined: ${held.join(', ')})` : ' (nothing is quarantined)'}`);
      }
      throw e;
    }
  }

  async audit(limit: number): Promise<AuditEntry[]> {
    return this.o.store.audit(limit);
  }

  /** Appends an audit entry of an operator action the store does not audit by itself (a correction of another principal's fact). */
  async appendAudit(e: Omit<AuditEntry, 'seq'>): Promise<AuditEntry> {
    return this.o.store.appendAudit(e);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) this.timers.clear(this.timer);
    if (this.retry) clearTimeout(this.retry);
    if (this.watch) clearInterval(this.watch);
    this.unsubscribe?.();
    await this.planning?.catch(() => undefined);
    await this.o.store.close();
  }
}

