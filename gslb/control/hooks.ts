/**
 * Drain hooks (docs/design.md "The drain curve"): DNS cannot move a client that keeps one HTTP/2
 * connection for hours, so a region may name a webhook — usually its API gateway — that is
 * told at each step of the region's plan that changes its state what share of connections to
 * shed (send GOAWAY, close idle keep-alive connections) and whether to refuse new streams, so
 * that long-lived connections follow the DNS ramp. docs/drain-hooks.md is the gateway's side
 * of the contract.
 *
 * Contract:
 * - `dueDrainHookCall` (pure) says which call, if any, is due for a region at `now`: one
 *   whenever the region's (share, refuse, down) in force differs from what it was last told.
 *   The payload is a function of (plan, region, the step that began the state in force) only,
 *   so every node holding one plan sends byte-identical payloads for one `id`.
 * - `DrainHookRunner` calls the hooks of one node: one unref'd timer for the next step instant
 *   of any hooked region (plus, with `active`, a check of leadership every `activeCheckMs`);
 *   never a busy loop. A call is a POST with the timeout, retried with exponential backoff on
 *   a network error, a timeout or a status other than 2xx, up to `retries` times; a newer
 *   state of the region abandons it. When the runner starts calling (start, or `active()`
 *   turning true) it first tells every hooked region its state in force, full ones included,
 *   since it cannot know what an earlier leader delivered.
 * - Failures are logged, counted and shown by status(); nothing is thrown to the caller, and
 *   no call ever delays the plan, DNS or another region's call.
 *
 * Its config (DrainHookSchema) is declared in gslb/config/drain-hook.ts.
 */
import client, { type Registry } from 'prom-client';
import type { Logger } from 'pino';
import { boundedRequest, FetchError, fetchReason, showUrl } from '../../collectors/kit/http.js';
import type { Plan, RegionId, RegionStep } from '../model/types.js';
import type { DrainHookConfig } from '../config/drain-hook.js';


/** The defaults of DrainHookSchema (also applied by the runner to a config not defaulted). */
export const DRAIN_HOOK_DEFAULTS = { timeoutMs: 2000, retries: 3, retryBaseMs: 500 } as const;

/** Headers the runner sets itself; the same names in `headers` are ignored (lowercase). */
export const RESERVED_HEADERS: readonly string[] = ['authorization', 'content-type', 'content-length', 'host', 'idempotency-key', 'transfer-encoding', 'connection'];

/** Longest wait before one retry, ms. */
export const MAX_RETRY_DELAY_MS = 300_000;

/**
 * Problems with one region's hook that the schema cannot see, in words starting with
 * `hooks:` (for config validation and the runner's start): a reserved header, a tokenEnv
 * variable that is not set. Empty when none.
 */
export function drainHookProblems(region: RegionId, hook: DrainHookConfig, env: Readonly<Record<string, string | undefined>>): string[] {
  const out: string[] = [];
  for (const name of Object.keys(hook.headers ?? {})) {
    if (RESERVED_HEADERS.includes(name.toLowerCase())) out.push(`hooks: ${region}: drainHook.headers.${name} is set by GridSteer and ignored; remove it${name.toLowerCase() === 'authorization' ? ' and put the token in the variable named by tokenEnv' : ''}`);
  }
  if (hook.tokenEnv !== undefined) {
    const t = bearerToken(env, hook.tokenEnv);
    if (t.error !== undefined) out.push(`hooks: ${region}: ${t.error}: the hook will not be called until it is set and the process restarted`);
  }
  return out;
}

/**
 * The bearer token in environment variable `name`, trimmed; or why there is none. The
 * message never contains the variable's value.
 */
export function bearerToken(env: Readonly<Record<string, string | undefined>>, name: string): { token: string; error?: undefined } | { error: string } {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return { error: `the environment variable ${name} (drainHook.tokenEnv) is not set or empty` };
  const token = raw.trim();
  // RFC 6750 b64token and the usual opaque tokens are visible ASCII; anything else would be refused by fetch, value and all.
  if (!/^[\x21-\x7e]+$/.test(token)) return { error: `the environment variable ${name} (drainHook.tokenEnv) holds characters other than visible ASCII, which cannot go in an Authorization header` };
  return { token };
}

/** A step with the field the planner adds (ADR 0006 follow-up): refuse new streams from `at`. */
type HookStep = RegionStep & { refuse?: boolean };

/** What a gateway is told about a region: its admission share (0 when down), refuse, down. */
export interface DrainHookState {
  /** Admission share in force, [0, 1]; 0 when the region is down. */
  share: number;
  refuse: boolean;
  down: boolean;
  /** GOAWAY to every connection, progressively, so that all have it by this ms epoch (null: no). */
  goawayBy?: number | null;
}

/** drain: share went down; restore: share went up but is below 1; up: share 1; hold: share unchanged (refuse or down changed). */
export type DrainHookPhase = 'drain' | 'hold' | 'restore' | 'up';

/** The JSON body of a drain hook call (docs/drain-hooks.md). */
export interface DrainHookPayload {
  region: RegionId;
  /** The plan's version (its inputs' hash): nodes holding one plan send identical payloads. */
  planVersion: string;
  /** `<region>@<at in ms epoch>`: the idempotency key, also sent as the Idempotency-Key header. */
  id: string;
  /** ISO 8601 instant from which this state holds. */
  at: string;
  /** Admission share now in force, [0, 1] (0 when down). */
  share: number;
  /** 1 − share: the share of connections to shed. */
  shed: number;
  /** From `at` on, refuse new connections and streams (T − S of a drain: no cached answer can still name the region). */
  refuseNewStreams: boolean;
  /**
   * ISO 8601: from `at` on, send GOAWAY (HTTP/2, HTTP/3; Connection: close on HTTP/1.1) to every
   * open connection, spread out so that each, the long-lived ones included, has received it by
   * then; refuseNewStreams follows at that instant. Absent: no GOAWAY asked.
   */
  goawayBy?: string;
  /** The plan's alerts that name this region (ADR 0014), e.g. a trusted loss planned beyond the safety limits. */
  alerts?: { kind: string; severity: string; message: string }[];
  /** The region is down or forced down (share 0). */
  down: boolean;
  phase: DrainHookPhase;
  /** Why, in words (the plan step's reasons). */
  reasons: string[];
}

/** A call that is due: the body to send and the state it tells. */
export interface DueDrainHookCall {
  payload: DrainHookPayload;
  state: DrainHookState;
  /** ms epoch of `payload.at`. */
  at: number;
}

const FULL: DrainHookState = Object.freeze({ share: 1, refuse: false, down: false });

/**
 * The share the gateway keeps: the weight of the region's own clients (homes[region], else
 * share). A saturated region takes no spill (share 0) but keeps its own clients: its gateway
 * must not be told to shed them.
 */
function stateOf(st: HookStep, region: RegionId): DrainHookState {
  return { share: st.down ? 0 : (st.homes?.[region] ?? st.share), refuse: st.refuse === true, down: st.down, ...(st.goawayBy !== undefined ? { goawayBy: st.goawayBy } : {}) };
}

function sameState(a: DrainHookState, b: DrainHookState): boolean {
  return a.share === b.share && a.refuse === b.refuse && a.down === b.down && (a.goawayBy ?? null) === (b.goawayBy ?? null);
}

/** Six decimals: 1 − 0.7 is 0.3, not 0.30000000000000004. */
const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/**
 * The state of `region` at `now` in `plan` and the instant it began: the first step of the run
 * of consecutive steps with that state that includes the step in force (the last with
 * at ≤ now), and the state before that run. Before the first step, or for a region without
 * steps, the state is full (share 1) and begins at `plan.computedAt`.
 * Pure: `now` only selects the step.
 */
export function drainHookStateAt(plan: Plan, region: RegionId, now: number): { state: DrainHookState; at: number; before: DrainHookState; reasons: string[] } {
  const steps = (plan.regions[region] ?? []) as readonly HookStep[];
  let i = -1;
  for (let k = 0; k < steps.length; k++) {
    if (steps[k]!.at <= now) i = k;
    else break;
  }
  if (i < 0) return { state: FULL, at: plan.computedAt, before: FULL, reasons: [] };
  const state = stateOf(steps[i]!, region);
  while (i > 0 && sameState(stateOf(steps[i - 1]!, region), state)) i--;
  const start = steps[i]!;
  return { state, at: start.at, before: i > 0 ? stateOf(steps[i - 1]!, region) : FULL, reasons: [...start.reasons] };
}

/** up at share 1 (not refusing); otherwise the direction of the share against the state before. */
export function drainHookPhase(state: DrainHookState, before: DrainHookState): DrainHookPhase {
  if (state.share >= 1 && !state.refuse && !state.down) return 'up';
  if (state.share < before.share) return 'drain';
  if (state.share > before.share) return 'restore';
  return 'hold';
}

/**
 * The call due for `region` at `now`, or null: due when the region's state in force (share,
 * refuse, down) differs from `last`, the state of the last call made (null: nothing known
 * to be told, e.g. at start or after a change of leader: the state in force is always due).
 * Pure: no I/O, no clock.
 */
export function dueDrainHookCall(plan: Plan, region: RegionId, last: DrainHookState | null, now: number): DueDrainHookCall | null {
  const s = drainHookStateAt(plan, region, now);
  if (last !== null && sameState(last, s.state)) return null;
  const share = round6(s.state.share);
  return {
    at: s.at,
    state: s.state,
    payload: {
      region,
      planVersion: plan.version,
      id: `${region}@${s.at}`,
      at: new Date(s.at).toISOString(),
      share,
      shed: round6(1 - share),
      refuseNewStreams: s.state.refuse,
      ...(s.state.goawayBy != null ? { goawayBy: new Date(s.state.goawayBy).toISOString() } : {}),
      down: s.state.down,
      phase: drainHookPhase(s.state, s.before),
      reasons: s.reasons,
      ...alertsFor(plan, region),
    },
  };
}

/** The plan's alerts naming `region`, for a hook call's body (absent when none). */
function alertsFor(plan: Plan, region: RegionId): { alerts?: { kind: string; severity: string; message: string }[] } {
  const a = (plan.alerts ?? []).filter((x) => x.regions.includes(region)).map((x) => ({ kind: x.kind, severity: x.severity, message: x.message }));
  return a.length > 0 ? { alerts: a } : {};
}

/** ms epoch of the first step after `now` of any of `regions`, or Infinity. */
export function nextDrainHookInstant(plan: Plan, regions: Iterable<RegionId>, now: number): number {
  let next = Infinity;
  for (const r of regions) {
    for (const st of plan.regions[r] ?? []) {
      if (st.at > now) {
        next = Math.min(next, st.at);
        break;
      }
    }
  }
  return next;
}

export type DrainHookOutcome = 'ok' | 'error' | 'timeout' | 'abandoned';

/** The last call made to one region's hook. */
export interface DrainHookCallStatus {
  id: string;
  phase: DrainHookPhase;
  share: number;
  refuseNewStreams: boolean;
  /** `pending` while an attempt runs or a retry waits. */
  outcome: DrainHookOutcome | 'pending';
  /** ms epoch (runner clock) of the last change of this record: an attempt's start or end. */
  at: number;
  /** The HTTP status of the last attempt, or null (no answer). */
  httpStatus: number | null;
  /** Why the last attempt failed, in words; null when it succeeded or none has ended. */
  error: string | null;
  /** Attempts made so far (1 + retries at most). */
  attempts: number;
}

export interface DrainHookRegionStatus {
  /** Host and path of the hook (no query: it may carry a key). */
  url: string;
  lastCall: DrainHookCallStatus | null;
  /** ms epoch (runner clock) of the last successful call, or null. */
  lastSuccessAt: number | null;
}

export interface DrainHookStatus {
  /** Whether this node calls hooks now (it leads, or runs without a lease). */
  active: boolean;
  /** ms epoch of the runner's next wake-up, or null when none is set. */
  nextWakeAt: number | null;
  regions: Record<RegionId, DrainHookRegionStatus>;
}

export interface DrainHookRunnerOptions {
  /** Region → its hook (validated config; missing defaults are filled from DRAIN_HOOK_DEFAULTS). */
  hooks: ReadonlyMap<RegionId, DrainHookConfig>;
  /** The plan in force; read at start() and until the first onPlan(). */
  plan: () => Plan;
  /** ms epoch; the plan's time base. */
  clock: () => number;
  log: Logger;
  /** Metrics are registered here (reused when already there, so a runner may be replaced). */
  registry: Registry;
  /** Where tokenEnv is looked up; default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** When given, hooks are called only while it returns true (e.g. a LeaseRunner's leadership). */
  active?: () => boolean;
  /** With `active`: how often leadership is checked between step instants, ms (default 1000). */
  activeCheckMs?: number;
  /** Real ms a span of the runner's clock takes (gslb/platform/clock.ts realMs; identity by default). */
  realMs?: (ms: number) => number;
}

/** Longest single timer (re-armed on wake-up): well below setTimeout's 2^31 − 1 ms limit. */
const MAX_TIMER_MS = 6 * 3600_000;
const CALLS = 'gridsteer_drain_hook_calls_total';
const LAST_OK = 'gridsteer_drain_hook_last_success_timestamp_seconds';

interface InFlight {
  call: DueDrainHookCall;
  abort: AbortController;
  done: Promise<void>;
  status: DrainHookCallStatus;
  /** Set once the call has an outcome other than pending. */
  settled: boolean;
}

export type Attempt =
  | { outcome: 'ok'; status: number }
  | { outcome: 'error'; status: number | null; error: string }
  | { outcome: 'timeout'; error: string }
  | { outcome: 'stopped' };

/**
 * Calls the drain hooks of the regions in `hooks` as the plan's steps come into force.
 * Who may call what: main wiring calls start(), onPlan() for every new plan, status() for
 * the API and close() at shutdown; none of them throws or waits on a hook.
 */
export class DrainHookRunner {
  private readonly log: Logger;
  private readonly env: Readonly<Record<string, string | undefined>>;
  private readonly calls: client.Counter<'region' | 'outcome'>;
  private readonly lastOk: client.Gauge<'region'>;
  private current: Plan | null = null;
  private timer: NodeJS.Timeout | null = null;
  private wakeAt: number | null = null;
  private started = false;
  private closed = false;
  private wasActive = false;
  /** Per region: the state of the last call made while active (cleared when not active). */
  private readonly told = new Map<RegionId, DrainHookState>();
  private readonly inflight = new Map<RegionId, InFlight>();
  private readonly lastCall = new Map<RegionId, DrainHookCallStatus>();
  private readonly lastSuccess = new Map<RegionId, number>();
  private activeFailed = false;

  constructor(private readonly o: DrainHookRunnerOptions) {
    this.log = o.log.child({ module: 'hooks' });
    this.env = o.env ?? process.env;
    this.calls =
      (o.registry.getSingleMetric(CALLS) as client.Counter<'region' | 'outcome'> | undefined) ??
      new client.Counter({
        name: CALLS,
        help: 'drain hook HTTP attempts by region and outcome (ok: 2xx; error: refused, network error or status not 2xx; timeout), and calls abandoned before an outcome because a newer step superseded them, the node stopped leading or the runner closed',
        labelNames: ['region', 'outcome'],
        registers: [o.registry],
      });
    this.lastOk =
      (o.registry.getSingleMetric(LAST_OK) as client.Gauge<'region'> | undefined) ??
      new client.Gauge({
        name: LAST_OK,
        help: "when a region's drain hook last answered 2xx, seconds since the Unix epoch",
        labelNames: ['region'],
        registers: [o.registry],
      });
    for (const region of o.hooks.keys()) for (const outcome of ['ok', 'error', 'timeout', 'abandoned']) this.calls.inc({ region, outcome }, 0);
  }

  /** Starts calling: reports config problems, then tells each hooked region its state in force. Idempotent. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    try {
      for (const [region, hook] of this.o.hooks) for (const p of drainHookProblems(region, hook, this.env)) this.log.warn({ region }, p);
      this.current ??= this.o.plan();
    } catch (e) {
      this.log.error({ err: (e as Error).message }, `hooks: could not read the plan (${(e as Error).message}); retrying at the next plan`);
    }
    this.tick();
  }

  /** A new plan: calls whatever it changes now and re-arms the timer. Never throws. */
  onPlan(plan: Plan): void {
    if (this.closed) return;
    this.current = plan;
    if (this.started) this.tick();
  }

  /** What each hooked region was last told, and whether this node calls now. */
  status(): DrainHookStatus {
    const regions: Record<RegionId, DrainHookRegionStatus> = {};
    for (const [region, hook] of this.o.hooks) {
      const c = this.lastCall.get(region);
      regions[region] = { url: showUrl(hook.url), lastCall: c ? { ...c } : null, lastSuccessAt: this.lastSuccess.get(region) ?? null };
    }
    return { active: this.wasActive, nextWakeAt: this.wakeAt, regions };
  }

  /** Stops: clears the timer, aborts calls in flight and resolves once they have ended. */
  async close(): Promise<void> {
    this.closed = true;
    this.disarm();
    const pending = [...this.inflight.values()];
    for (const f of pending) f.abort.abort();
    await Promise.all(pending.map((f) => f.done));
  }

  /** The runner's clock; Date.now() should the injected one throw. */
  private now(): number {
    try {
      return this.o.clock();
    } catch {
      return Date.now();
    }
  }

  private isActive(): boolean {
    if (!this.o.active) return true;
    try {
      const a = this.o.active();
      this.activeFailed = false;
      return a;
    } catch (e) {
      if (!this.activeFailed) this.log.warn({ err: (e as Error).message }, `hooks: active() failed (${(e as Error).message}); not calling hooks until it answers`);
      this.activeFailed = true;
      return false;
    }
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.wakeAt = null;
  }

  /** Evaluates every hooked region at now, starts the calls due and re-arms. Never throws. */
  private tick(): void {
    if (this.closed) return;
    this.disarm();
    const now = this.now();
    try {
      const active = this.isActive();
      if (!active) {
        if (this.wasActive) {
          this.log.info('hooks: this node no longer calls drain hooks (not leading); calls in progress are abandoned');
          for (const f of this.inflight.values()) f.abort.abort();
        }
        this.wasActive = false;
        this.told.clear();
      } else {
        if (!this.wasActive) {
          this.wasActive = true;
          this.told.clear();
          if (this.o.active) this.log.info('hooks: this node calls drain hooks now; telling every hooked region its state in force');
        }
        const plan = this.current;
        if (plan) {
          for (const [region, hook] of this.o.hooks) {
            const due = dueDrainHookCall(plan, region, this.told.get(region) ?? null, now);
            if (!due) continue;
            this.told.set(region, due.state);
            this.dispatch(region, hook, due);
          }
        }
      }
    } catch (e) {
      this.log.error({ err: (e as Error).message }, `hooks: evaluating the plan failed (${(e as Error).message})`);
    }
    this.arm(now);
  }

  private arm(now: number): void {
    if (this.closed) return;
    let next = Infinity;
    try {
      if (this.current && this.o.hooks.size > 0) next = nextDrainHookInstant(this.current, this.o.hooks.keys(), now);
    } catch {
      next = Infinity;
    }
    if (this.o.active && this.o.hooks.size > 0) next = Math.min(next, now + Math.max(10, this.o.activeCheckMs ?? 1000));
    if (next === Infinity) return;
    const delay = Math.min(MAX_TIMER_MS, Math.max(1, next - now));
    this.wakeAt = now + delay;
    this.timer = setTimeout(() => this.tick(), Math.max(1, Math.round(this.o.realMs ? this.o.realMs(delay) : delay)));
    this.timer.unref();
  }

  /** Abandons the region's call in progress, if any, and starts `due`. */
  private dispatch(region: RegionId, hook: DrainHookConfig, due: DueDrainHookCall): void {
    this.inflight.get(region)?.abort.abort();
    const status: DrainHookCallStatus = {
      id: due.payload.id,
      phase: due.payload.phase,
      share: due.payload.share,
      refuseNewStreams: due.payload.refuseNewStreams,
      outcome: 'pending',
      at: this.now(),
      httpStatus: null,
      error: null,
      attempts: 0,
    };
    this.lastCall.set(region, status);
    const f: InFlight = { call: due, abort: new AbortController(), done: Promise.resolve(), status, settled: false };
    this.inflight.set(region, f);
    f.done = this.run(region, hook, f)
      .catch((e: unknown) => {
        this.log.error({ region, err: (e as Error)?.message }, `hooks: ${region}: the call ${due.payload.id} failed unexpectedly (${(e as Error)?.message})`);
        if (!f.settled) this.settle(region, f, 'error', { error: String((e as Error)?.message ?? e) });
      })
      .finally(() => {
        if (this.inflight.get(region) === f) this.inflight.delete(region);
      });
  }

  private settle(region: RegionId, f: InFlight, outcome: DrainHookOutcome, o: { status?: number | null; error?: string | null } = {}): void {
    f.settled = true;
    f.status.outcome = outcome;
    f.status.at = this.now();
    if (o.status !== undefined) f.status.httpStatus = o.status;
    if (o.error !== undefined) f.status.error = o.error;
    if (outcome === 'abandoned') this.calls.inc({ region, outcome: 'abandoned' });
  }

  private async run(region: RegionId, hook: DrainHookConfig, f: InFlight): Promise<void> {
    const { payload } = f.call;
    const retries = hook.retries ?? DRAIN_HOOK_DEFAULTS.retries;
    const base = hook.retryBaseMs ?? DRAIN_HOOK_DEFAULTS.retryBaseMs;
    const timeoutMs = hook.timeoutMs ?? DRAIN_HOOK_DEFAULTS.timeoutMs;
    const what = `${region} ${payload.phase} share ${payload.share}${payload.refuseNewStreams ? ', refuse new streams' : ''} (${payload.id})`;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(hook.headers ?? {})) if (!RESERVED_HEADERS.includes(k.toLowerCase())) headers[k] = v;
    headers['content-type'] = 'application/json';
    headers['idempotency-key'] = payload.id;
    if (!Object.keys(headers).some((k) => k.toLowerCase() === 'user-agent')) headers['user-agent'] = 'gridsteer-drain-hook';
    if (hook.tokenEnv !== undefined) {
      const token = bearerToken(this.env, hook.tokenEnv);
      if (token.error !== undefined) {
        const error = `hooks: ${region}: ${token.error}; not calling ${showUrl(hook.url)} without its token`;
        f.status.attempts = 0;
        this.calls.inc({ region, outcome: 'error' });
        this.settle(region, f, 'error', { status: null, error });
        this.log.error({ region, id: payload.id }, error);
        return;
      }
      headers.authorization = `Bearer ${token.token}`;
    }
    const body = JSON.stringify(payload);
    for (let attempt = 1; ; attempt++) {
      if (f.abort.signal.aborted || !this.isActive()) {
        this.settle(region, f, 'abandoned');
        this.log.info({ region, id: payload.id }, `hooks: ${what}: abandoned (a newer step superseded it, the node stopped leading, or the runner closed)`);
        return;
      }
      f.status.attempts = attempt;
      f.status.at = this.now();
      const r = await postOnce(hook.url, headers, body, timeoutMs, f.abort.signal);
      if (r.outcome === 'stopped') {
        this.settle(region, f, 'abandoned');
        this.log.info({ region, id: payload.id }, `hooks: ${what}: abandoned during attempt ${attempt}`);
        return;
      }
      this.calls.inc({ region, outcome: r.outcome });
      if (r.outcome === 'ok') {
        const now = this.now();
        this.lastSuccess.set(region, now);
        this.lastOk.set({ region }, now / 1000);
        this.settle(region, f, 'ok', { status: r.status, error: null });
        this.log.info({ region, id: payload.id, attempts: attempt, status: r.status }, `hooks: ${what}: delivered (HTTP ${r.status}${attempt > 1 ? `, attempt ${attempt}` : ''})`);
        return;
      }
      const status = r.outcome === 'error' ? r.status : null;
      const error = `${showUrl(hook.url)}: ${r.error}`;
      f.status.httpStatus = status;
      f.status.error = error;
      if (attempt > retries) {
        this.settle(region, f, r.outcome, { status, error });
        this.log.warn({ region, id: payload.id, attempts: attempt, status }, `hooks: ${what}: gave up after ${attempt} attempt${attempt === 1 ? '' : 's'} (${error}); the plan goes on without it`);
        return;
      }
      const delay = Math.min(MAX_RETRY_DELAY_MS, base * 2 ** (attempt - 1));
      this.log.warn({ region, id: payload.id, attempt, status }, `hooks: ${what}: attempt ${attempt} failed (${error}); retrying in ${delay} ms`);
      f.status.at = this.now();
      await sleep(delay, f.abort.signal);
    }
  }
}

/** Resolves after `ms` or as soon as `stop` aborts; the timer does not hold the process. */
function sleep(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (stop.aborted) return resolve();
    const t = setTimeout(done, ms);
    t.unref();
    function done() {
      clearTimeout(t);
      stop.removeEventListener('abort', done);
      resolve();
    }
    stop.addEventListener('abort', done, { once: true });
  });
}

/** Most bytes of an error body kept for the message. */
const ERROR_BODY_BYTES = 200;

/**
 * One POST through the collectors' bounded client (collectors/kit/http.ts): at most
 * `timeoutMs` for connect, request and response headers (and the first bytes of an error
 * body), aborted when `stop` aborts; never follows a redirect (the request carries a token).
 * A 2xx body is not read; of an error body the first ERROR_BODY_BYTES are kept.
 */
/** One POST of a hook call (bounded; the answer's body read only on an error). Also used by the verify-hooks job (housekeeping.ts). */
export async function postOnce(url: string, headers: Record<string, string>, body: string, timeoutMs: number, stop: AbortSignal): Promise<Attempt> {
  let status: number;
  let text = '';
  try {
    const a = await boundedRequest({ url, method: 'POST', headers, body, timeoutMs, maxBytes: ERROR_BODY_BYTES, stop, readBody: (s) => s < 200 || s >= 300, overflow: 'truncate' });
    status = a.status;
    text = a.text.replace(/\p{Cc}+/gu, ' ').trim();
  } catch (e) {
    const why = e instanceof FetchError ? e.kind : 'network';
    if (why === 'stopped') return { outcome: 'stopped' };
    // The answer's headers came, its error body did not: the status says enough.
    if (e instanceof FetchError && e.status !== undefined) status = e.status;
    else if (why === 'timeout') return { outcome: 'timeout', error: `no answer within ${timeoutMs} ms` };
    else return { outcome: 'error', status: null, error: e instanceof FetchError ? e.message : fetchReason(e) };
  }
  if (status >= 200 && status < 300) return { outcome: 'ok', status };
  const redirect = status >= 300 && status < 400 ? ' (a redirect; redirects are not followed: point url at the final address)' : '';
  return { outcome: 'error', status, error: `HTTP ${status}${redirect}${text ? `: ${text}` : ''}` };
}
