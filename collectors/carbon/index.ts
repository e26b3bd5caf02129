/**
 * carbon — polls grid carbon intensity for the zones the fleet's regions draw from, from
 * Electricity Maps (gCO2eq/kWh) and WattTime (the co2_moer percentile, 0–100), and emits one
 * `carbon` fact per provider, region and poll. A soft fact: the planner may use it to break
 * ties among healthy regions inside a latency band; it never outweighs health, drains or power
 * (that is the planner's rule, not this collector's). A poller: it runs on one node at a time,
 * under the store's lease, and only when `collectors.carbon` is configured.
 *
 * Contract:
 * - Every `pollMs` (first poll at once) each distinct Electricity Maps zone and WattTime region
 *   is fetched once with GET (at most 4 at a time per provider), each request bounded by
 *   `timeoutMs` (capped at pollMs) and 4 MiB of body, redirects not followed. A poll still
 *   running when the next is due makes that next one skipped, never doubled.
 * - Facts: source `carbon/electricitymaps` or `carbon/watttime`, key = the zone or region
 *   code, observedAt = the data's own time (`datetime`, `point_time`) when ≤ now + 5 s, else
 *   now; expiresAt = max(observedAt, now) + 3 × pollMs (three polls after the data was last
 *   read: Electricity Maps' hourly `datetime` is up to an hour old when read, and observedAt +
 *   3 × pollMs alone would emit it already expired). Data older than `maxAgeMs` is refused.
 * - WattTime: one login (`GET /login`, basic auth) gives a bearer token, kept across polls; a 401
 *   drops it, logs in again (shared by the requests in flight) and retries that request once.
 *   At most two logins per poll, none after a failed one.
 * - A failure (peer down, timeout, status ≠ 200, body too large or not JSON, fields missing,
 *   of the wrong type or out of range, refused credentials) emits nothing for that zone: its
 *   last fact expires on its own. It is logged once per change of state (ok → failing: warn;
 *   failing → ok: info), with a CARBON_ERR_* code, and counted in the instance's counters (`carbonCounters`). Credentials
 *   are never logged.
 * - A configured region that is not (or no longer) in the fleet is skipped, logged once.
 * - Nothing throws out of the timer; stop() clears it, aborts requests in flight and resolves
 *   once the poll in progress has ended. No fact is emitted after stop().
 */
import { open } from 'node:fs/promises';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Collector, CollectorContext } from '../types.js';
import { get } from './http.js';
import { CarbonError, HEADER_SAFE, parseJson, readElectricityMaps, readWattTimeIndex, readWattTimeLogin, type CarbonErrorCode, type Reading } from './parse.js';
import { countersFor, defineCounters } from '../kit/counters.js';

export { CARBON_ERRORS, CarbonError } from './parse.js';

const strict = { additionalProperties: false } as const;
const BaseUrl = (def: string, what: string) =>
  Type.String({ pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^@/?#]+(/[^?#]*)?$', maxLength: 2048, default: def, description: `${what} base URL, http: or https:, without user:password@, query or fragment` });

export const CarbonRegionSchema = Type.Object(
  {
    region: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'the region (a regions/<id>.yaml) whose grid the codes below describe' }),
    electricityMapsZone: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'the Electricity Maps zone, e.g. DE, US-MIDA-PJM, US-CAL-CISO' })),
    wattTimeRegion: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$', description: 'the WattTime region (balancing authority), e.g. CAISO_NORTH, PJM_DC' })),
  },
  { ...strict, description: 'one region and the grid codes it draws from (at least one)' },
);

export const CarbonConfigSchema = Type.Object(
  {
    pollMs: Type.Integer({ minimum: 1000, maximum: 86400000, default: 300000, description: 'time between polls, ms (1 s to 1 day)' }),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 60000, default: 10000, description: 'time one request may take (connect, headers and body), ms; at most pollMs is used' }),
    maxAgeMs: Type.Integer({ minimum: 60000, maximum: 604800000, default: 10800000, description: 'data whose own time is older than this is refused as stale, ms' }),
    electricityMaps: Type.Optional(
      Type.Object(
        {
          url: BaseUrl('https://api.electricitymap.org', 'the Electricity Maps API'),
          token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'the API token (auth-token header); or tokenFile' })),
          tokenFile: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'a file holding the API token (read at every poll, so it may be rotated); or token' })),
        },
        { ...strict, description: 'Electricity Maps: carbon-intensity/latest per zone → gPerKWh. Give token or tokenFile.' },
      ),
    ),
    wattTime: Type.Optional(
      Type.Object(
        {
          url: BaseUrl('https://api.watttime.org', 'the WattTime API'),
          username: Type.String({ minLength: 1, maxLength: 256, pattern: '^[^:]+$', description: 'the WattTime user name' }),
          password: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'the WattTime password; or passwordFile' })),
          passwordFile: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'a file holding the password (read at every login); or password' })),
        },
        { ...strict, description: 'WattTime v3: signal-index co2_moer per region → percentile. Give password or passwordFile.' },
      ),
    ),
    regions: Type.Array(CarbonRegionSchema, { minItems: 1, maxItems: 1000, description: 'which grid codes each region draws from' }),
  },
  { ...strict, description: 'grid carbon intensity from Electricity Maps and/or WattTime; emits carbon facts (a tie-breaker only)' },
);

export type CarbonConfig = Static<typeof CarbonConfigSchema>;
export type CarbonRegion = Static<typeof CarbonRegionSchema>;

export const SOURCE_ELECTRICITY_MAPS = 'carbon/electricitymaps';
export const SOURCE_WATTTIME = 'carbon/watttime';

/** Requests sent at once per provider. */
const CONCURRENCY = 4;
/** Largest token or password file read, bytes. */
const MAX_SECRET_BYTES = 64 * 1024;

/**
 * Counters of one running instance (monotonic, never reset). `requests` are zone
 * or region fetches, `failures` those that gave no fact (whatever the cause, a failed login
 * included), `signals` the facts emitted (one per region mapped to a zone), `byCode` the
 * failures by CARBON_ERR_* code. A request cut short by stop() counts in none of them.
 */
export const carbonCounters = defineCounters({
  polls: 0,
  electricityMaps: { requests: 0, failures: 0, signals: 0 },
  wattTime: { requests: 0, failures: 0, signals: 0, logins: 0, loginFailures: 0 },
  byCode: {} as Partial<Record<CarbonErrorCode, number>>,
});
/** Sums over every instance in this process (collectors/kit/counters.ts): tests and diagnostics only. */
export const carbonTotals = carbonCounters.total;

/**
 * Reads a secret file: at most 64 KiB, surrounding white space trimmed, not empty; with
 * `header`, visible ASCII only. Throws CarbonError CARBON_ERR_SECRET naming `what`, never the secret.
 */
export async function readSecret(file: string, what: string, header: boolean): Promise<string> {
  let text: string;
  try {
    const fh = await open(file, 'r');
    try {
      const buf = Buffer.alloc(MAX_SECRET_BYTES + 1);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      if (bytesRead > MAX_SECRET_BYTES) throw new CarbonError('CARBON_ERR_SECRET', `${what} ${file} is larger than ${MAX_SECRET_BYTES} bytes`);
      text = buf.subarray(0, bytesRead).toString('utf8').trim();
    } finally {
      await fh.close();
    }
  } catch (e) {
    if (e instanceof CarbonError) throw e;
    throw new CarbonError('CARBON_ERR_SECRET', `${what} ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  if (text === '') throw new CarbonError('CARBON_ERR_SECRET', `${what} ${file} is empty`);
  if (header && !HEADER_SAFE.test(text)) throw new CarbonError('CARBON_ERR_SECRET', `${what} ${file} holds characters a header cannot carry (spaces, controls or non-ASCII)`);
  return text;
}

/** What a configuration resolves to: per provider, each code and the regions it is emitted for. */
export interface CarbonPlan {
  zones: Map<string, string[]>;
  bas: Map<string, string[]>;
  /** Warnings to log at start (e.g. credentials over plain http to a non-loopback host). */
  warnings: string[];
}

function baseUrl(raw: string, where: string, warnings: string[]): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new CarbonError('CARBON_ERR_CONFIG', `collectors/carbon: ${where}: ${JSON.stringify(raw)} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new CarbonError('CARBON_ERR_CONFIG', `collectors/carbon: ${where}: only http: and https: are used; got ${u.protocol}`);
  if (u.username || u.password) throw new CarbonError('CARBON_ERR_CONFIG', `collectors/carbon: ${where}: remove user:password@ from the URL; credentials have their own settings`);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (u.protocol === 'http:' && !(host === 'localhost' || host === '::1' || /^127\./.test(host))) {
    warnings.push(`collectors/carbon: ${where} is plain http to ${u.host}: the credentials travel unencrypted`);
  }
  return u;
}

/**
 * Checks what the schema cannot express and resolves the regions per code. Throws CarbonError
 * CARBON_ERR_CONFIG (`collectors/carbon: <path>: <problem and fix>`) when it cannot be run.
 */
export function planConfig(cfg: CarbonConfig): CarbonPlan {
  const warnings: string[] = [];
  const fail = (msg: string) => {
    throw new CarbonError('CARBON_ERR_CONFIG', `collectors/carbon: ${msg}`);
  };
  const em = cfg.electricityMaps;
  const wt = cfg.wattTime;
  if (em) {
    baseUrl(em.url, 'electricityMaps.url', warnings);
    if ((em.token === undefined) === (em.tokenFile === undefined)) fail('electricityMaps: give exactly one of token and tokenFile');
    if (em.token !== undefined && !HEADER_SAFE.test(em.token)) fail('electricityMaps.token holds characters a header cannot carry (spaces, controls or non-ASCII)');
  }
  if (wt) {
    baseUrl(wt.url, 'wattTime.url', warnings);
    if ((wt.password === undefined) === (wt.passwordFile === undefined)) fail('wattTime: give exactly one of password and passwordFile');
    if (wt.username.includes(':')) fail('wattTime.username: a user name cannot hold ":" (HTTP basic auth)');
  }
  const zones = new Map<string, string[]>();
  const bas = new Map<string, string[]>();
  const seen = new Set<string>();
  cfg.regions.forEach((r, i) => {
    if (seen.has(r.region)) fail(`regions[${i}]: ${r.region} is listed twice; give each region one entry with both codes`);
    seen.add(r.region);
    if (r.electricityMapsZone === undefined && r.wattTimeRegion === undefined) fail(`regions[${i}] (${r.region}): give electricityMapsZone, wattTimeRegion or both`);
    if (r.electricityMapsZone !== undefined) {
      if (!em) fail(`regions[${i}] (${r.region}) has electricityMapsZone but there is no electricityMaps section (its token)`);
      zones.set(r.electricityMapsZone, [...(zones.get(r.electricityMapsZone) ?? []), r.region]);
    }
    if (r.wattTimeRegion !== undefined) {
      if (!wt) fail(`regions[${i}] (${r.region}) has wattTimeRegion but there is no wattTime section (its credentials)`);
      bas.set(r.wattTimeRegion, [...(bas.get(r.wattTimeRegion) ?? []), r.region]);
    }
  });
  if (em && zones.size === 0) warnings.push('collectors/carbon: electricityMaps is configured but no region has an electricityMapsZone; it is not polled');
  if (wt && bas.size === 0) warnings.push('collectors/carbon: wattTime is configured but no region has a wattTimeRegion; it is not polled');
  return { zones, bas, warnings };
}

/** `url` (a base, maybe with a path prefix) joined with `path`. */
function under(base: string, path: string): URL {
  return new URL(base.replace(/\/+$/, '') + path);
}

/** What a non-200 status means. */
function statusError(status: number, what: string): CarbonError {
  if (status === 401) return new CarbonError('CARBON_ERR_AUTH', `${what}: HTTP 401 (the credentials were refused)`);
  if (status === 403) return new CarbonError('CARBON_ERR_AUTH', `${what}: HTTP 403 (forbidden: the account's plan may not cover this zone or region)`);
  if (status === 429) return new CarbonError('CARBON_ERR_RATE_LIMITED', `${what}: HTTP 429 (rate limited)`);
  if (status >= 300 && status < 400) return new CarbonError('CARBON_ERR_HTTP', `${what}: HTTP ${status} (a redirect; redirects are not followed — point the url at the final address)`);
  return new CarbonError('CARBON_ERR_HTTP', `${what}: HTTP ${status}`);
}

const asCarbonError = (e: unknown): CarbonError => (e instanceof CarbonError ? e : new CarbonError('CARBON_ERR_PAYLOAD', (e as Error)?.message ?? String(e)));

/** Runs `fn` over `items`, at most `n` at a time. */
async function pool<T>(items: readonly T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
}

/**
 * One collector run: start() calls poll() on a timer; tests call it directly. poll() never rejects.
 */
export class CarbonPoller {
  private readonly abort = new AbortController();
  private stopped = false;
  private running: Promise<void> | null = null;
  /** ok / failing per thing that can fail (`electricitymaps DE`, `watttime login`, …), to log changes once. */
  private readonly state = new Map<string, 'ok' | 'failing'>();
  /** Configured regions found missing from the fleet (logged once until they are back). */
  private readonly missing = new Set<string>();
  /** WattTime: the bearer token kept across polls, the login in flight, and this poll's login budget. */
  private token: string | null = null;
  private loginP: Promise<string> | null = null;
  private loginsThisPoll = 0;
  private loginFailure: CarbonError | null = null;
  /** Errors that came from a login (logged under `watttime login`, not per region). */
  private readonly fromLogin = new WeakSet<CarbonError>();
  /** This instance's counters (from ctx.counters: the host exports them). */
  readonly stats: ReturnType<typeof carbonCounters.create>;

  constructor(
    private readonly ctx: CollectorContext<CarbonConfig>,
    private readonly cfg: CarbonConfig,
    private readonly plan: CarbonPlan,
  ) {
    this.stats = countersFor(ctx, carbonCounters);
    const known = new Set(ctx.fleet().map((r) => r.id));
    const unknown = cfg.regions.map((r) => r.region).filter((r) => !known.has(r));
    for (const r of unknown) this.missing.add(r);
    if (unknown.length > 0) ctx.log.warn({ regions: unknown }, `collectors/carbon: regions not in the fleet (their facts are skipped until they are): ${unknown.join(', ')}`);
  }

  private get timeoutMs(): number {
    return Math.min(this.cfg.timeoutMs, this.cfg.pollMs);
  }

  /** Polls every zone and region once and emits what they say. Skipped while one is running. */
  async poll(): Promise<void> {
    if (this.stopped || this.running) return;
    this.running = (async () => {
      this.stats.polls++;
      try {
        await Promise.all([this.pollElectricityMaps(), this.pollWattTime()]);
      } catch (e) {
        // Not expected (each request handles its own failure); never let it out of the timer.
        this.ctx.log.error({ err: (e as Error)?.message }, 'collectors/carbon: internal error while polling');
      }
    })();
    try {
      await this.running;
    } finally {
      this.running = null;
    }
  }

  /** Aborts requests in flight and resolves once the poll in progress has ended; nothing is emitted afterwards. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.running?.catch(() => undefined);
  }

  private ok(what: string, msg: string, fields: Record<string, unknown> = {}): void {
    if (this.state.get(what) === 'ok') return;
    this.state.set(what, 'ok');
    this.ctx.log.info(fields, `collectors/carbon: ${msg}`);
  }

  private failed(what: string, e: CarbonError, fields: Record<string, unknown> = {}): void {
    this.stats.byCode[e.code] = (this.stats.byCode[e.code] ?? 0) + 1;
    if (this.state.get(what) === 'failing') return;
    this.state.set(what, 'failing');
    this.ctx.log.warn({ ...fields, code: e.code }, `collectors/carbon: ${what} fails: ${e.message} [${e.code}]`);
  }

  /** Emits `value` for every region mapped to the code, skipping regions not in the fleet; returns how many. */
  private emit(source: string, key: string, regions: readonly string[], value: { gPerKWh: number } | { percentile: number }, r: Reading, now: number): number {
    if (this.stopped) return 0;
    const fleet = new Set(this.ctx.fleet().map((f) => f.id));
    const expiresAt = Math.max(r.observedAt, now) + 3 * this.cfg.pollMs;
    let n = 0;
    for (const region of regions) {
      if (!fleet.has(region)) {
        if (!this.missing.has(region)) {
          this.missing.add(region);
          this.ctx.log.warn({ region }, `collectors/carbon: region ${region} is configured but not in the fleet; its carbon facts are skipped`);
        }
        continue;
      }
      if (this.missing.delete(region)) this.ctx.log.info({ region }, `collectors/carbon: region ${region} is in the fleet again`);
      this.ctx.emit({ region, kind: 'carbon', source, key, observedAt: r.observedAt, expiresAt, value: { ...value } });
      n++;
    }
    return n;
  }

  // --- Electricity Maps ---

  private async pollElectricityMaps(): Promise<void> {
    const em = this.cfg.electricityMaps;
    if (!em || this.plan.zones.size === 0) return;
    let token: string;
    try {
      if (em.token !== undefined) token = em.token;
      else {
        token = await readSecret(em.tokenFile!, 'electricityMaps.tokenFile', true);
        this.ok('electricitymaps token', 'electricitymaps: the token file reads', { file: em.tokenFile });
      }
    } catch (e) {
      const err = asCarbonError(e);
      const n = this.plan.zones.size;
      this.stats.electricityMaps.requests += n;
      this.stats.electricityMaps.failures += n;
      this.failed('electricitymaps token', err);
      return;
    }
    await pool([...this.plan.zones], CONCURRENCY, ([zone, regions]) => this.electricityMapsZone(em.url, token, zone, regions));
  }

  private async electricityMapsZone(base: string, token: string, zone: string, regions: readonly string[]): Promise<void> {
    if (this.stopped) return;
    const what = `electricitymaps ${zone}`;
    try {
      const url = under(base, '/v3/carbon-intensity/latest');
      url.searchParams.set('zone', zone);
      const a = await get(url, { 'auth-token': token }, this.timeoutMs, this.abort.signal);
      if (this.stopped) return;
      if (a.status !== 200) throw statusError(a.status, 'carbon-intensity/latest');
      const now = this.ctx.now();
      const r = readElectricityMaps(parseJson(a.text), zone, now, this.cfg.maxAgeMs);
      this.stats.electricityMaps.requests++;
      this.stats.electricityMaps.signals += this.emit(SOURCE_ELECTRICITY_MAPS, zone, regions, { gPerKWh: r.value }, r, now);
      this.ok(what, `${what}: ${r.value} gCO2eq/kWh for ${r.dataTime}${r.estimated ? ' (estimated)' : ''}`, { zone, gPerKWh: r.value, datetime: r.dataTime, clamped: r.clamped });
    } catch (e) {
      if (this.stopped) return;
      this.stats.electricityMaps.requests++;
      this.stats.electricityMaps.failures++;
      this.failed(what, asCarbonError(e), { zone });
    }
  }

  // --- WattTime ---

  private async pollWattTime(): Promise<void> {
    if (!this.cfg.wattTime || this.plan.bas.size === 0) return;
    this.loginsThisPoll = 0;
    this.loginFailure = null;
    await pool([...this.plan.bas], CONCURRENCY, ([ba, regions]) => this.wattTimeRegion(ba, regions));
  }

  /** The bearer token: the kept one, the login in flight, or a new login (at most two a poll, none after a failed one). */
  private wattTimeToken(): Promise<string> {
    if (this.token !== null) return Promise.resolve(this.token);
    if (this.loginP) return this.loginP;
    if (this.loginFailure) return Promise.reject(this.loginFailure);
    if (this.loginsThisPoll >= 2) {
      const e = new CarbonError('CARBON_ERR_AUTH', 'a fresh token was refused as well; no more logins this poll');
      this.fromLogin.add(e);
      return Promise.reject(e);
    }
    this.loginsThisPoll++;
    this.loginP = this.login().then(
      (t) => {
        this.token = t;
        this.ok('watttime login', 'watttime: logged in');
        return t;
      },
      (e: unknown) => {
        const err = asCarbonError(e);
        this.fromLogin.add(err);
        if (!this.stopped) {
          this.loginFailure = err;
          this.stats.wattTime.loginFailures++;
          this.failed('watttime login', err);
        }
        throw err;
      },
    );
    const p = this.loginP;
    void p.finally(() => {
      if (this.loginP === p) this.loginP = null;
    }).catch(() => undefined);
    return p;
  }

  private async login(): Promise<string> {
    const wt = this.cfg.wattTime!;
    const password = wt.password ?? (await readSecret(wt.passwordFile!, 'wattTime.passwordFile', false));
    const basic = Buffer.from(`${wt.username}:${password}`, 'utf8').toString('base64');
    const a = await get(under(wt.url, '/login'), { authorization: `Basic ${basic}` }, this.timeoutMs, this.abort.signal);
    if (!this.stopped) this.stats.wattTime.logins++;
    if (a.status !== 200) throw statusError(a.status, 'login');
    return readWattTimeLogin(parseJson(a.text));
  }

  private async wattTimeRegion(ba: string, regions: readonly string[]): Promise<void> {
    if (this.stopped) return;
    const what = `watttime ${ba}`;
    const url = under(this.cfg.wattTime!.url, '/v3/signal-index');
    url.searchParams.set('region', ba);
    url.searchParams.set('signal_type', 'co2_moer');
    try {
      let token = await this.wattTimeToken();
      let a = await get(url, { authorization: `Bearer ${token}` }, this.timeoutMs, this.abort.signal);
      if (a.status === 401 && !this.stopped) {
        // The token expired (WattTime's last 30 minutes) or was revoked: log in again, retry once.
        if (this.token === token) this.token = null;
        token = await this.wattTimeToken();
        a = await get(url, { authorization: `Bearer ${token}` }, this.timeoutMs, this.abort.signal);
        if (a.status === 401) throw new CarbonError('CARBON_ERR_AUTH', 'signal-index: HTTP 401 again after a fresh login');
      }
      if (this.stopped) return;
      if (a.status !== 200) throw statusError(a.status, 'signal-index');
      const now = this.ctx.now();
      const r = readWattTimeIndex(parseJson(a.text), ba, now, this.cfg.maxAgeMs);
      this.stats.wattTime.requests++;
      this.stats.wattTime.signals += this.emit(SOURCE_WATTTIME, ba, regions, { percentile: r.value }, r, now);
      this.ok(what, `${what}: co2_moer percentile ${r.value} for ${r.dataTime}`, { ba, percentile: r.value, pointTime: r.dataTime, clamped: r.clamped });
    } catch (e) {
      if (this.stopped) return;
      const err = asCarbonError(e);
      this.stats.wattTime.requests++;
      this.stats.wattTime.failures++;
      // A failed login is logged once under `watttime login`, not once per region.
      if (this.fromLogin.has(err)) this.stats.byCode[err.code] = (this.stats.byCode[err.code] ?? 0) + 1;
      else this.failed(what, err, { ba });
    }
  }
}

export const carbon: Collector<CarbonConfig> = {
  counters: carbonCounters,
  errors: [CarbonError],
  name: 'carbon',
  configSchema: CarbonConfigSchema,
  mode: 'poller',
  sources: 'carbon/',
  /** What it emits, for the collector table of collectors/README.md. */
  summary: '`carbon` from Electricity Maps and WattTime (a soft fact, a tie-breaker only)',
  async start(ctx: CollectorContext<CarbonConfig>) {
    // The loader applied the defaults already; applying them again on a copy keeps a bare config (tests, embedding) safe.
    const cfg = Value.Default(CarbonConfigSchema, structuredClone(ctx.config)) as CarbonConfig;
    const plan = planConfig(cfg);
    // Secret files must exist now: a typo is a start error, not a silent poll failure.
    if (cfg.electricityMaps?.tokenFile !== undefined && plan.zones.size > 0) await readSecret(cfg.electricityMaps.tokenFile, 'collectors/carbon: electricityMaps.tokenFile', true);
    if (cfg.wattTime?.passwordFile !== undefined && plan.bas.size > 0) await readSecret(cfg.wattTime.passwordFile, 'collectors/carbon: wattTime.passwordFile', false);
    for (const w of plan.warnings) ctx.log.warn(w);
    const poller = new CarbonPoller(ctx, cfg, plan);
    const onAbort = () => void poller.stop();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    void poller.poll();
    const timer = setInterval(() => void poller.poll(), cfg.pollMs);
    return async () => {
      clearInterval(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      await poller.stop();
    };
  },
};
