/**
 * prometheus — scrapes the Prometheus endpoints of model servers (vLLM, SGLang,
 * TensorRT-LLM's trtllm-serve, TGI) and of NVIDIA's DCGM exporter, and emits per target one
 * `load.metrics` fact (queue, running requests, KV-cache use, GPU memory use, share of GPUs
 * at the throttle temperature), plus a `capacity` fact once XID bursts make GPUs unusable.
 * A poller: it runs on one node at a time, under the store's lease.
 *
 * Contract:
 * - Every `intervalMs` (first round at once) each target is fetched with GET, at most
 *   `timeoutMs` (capped at `intervalMs`) for connect, headers and body together, at most
 *   8 MiB of (decoded) body and 100 000 sample lines; a round still running when the next is
 *   due makes that next round skipped, never doubled.
 * - A failed scrape (refused, timed out, HTTP status ≥ 300 after redirects, body too large or
 *   not exposition text, none of the known metrics) emits nothing for the target: its last
 *   facts expire on their own (`expiresAt` = observedAt + 3 × intervalMs). It is logged once
 *   per change of state (ok → failing: warn; failing → ok: info) and counted in the
 *   instance's counters (`prometheusCounters`).
 * - Nothing throws out of the timer; stop() clears it, aborts requests in flight and
 *   resolves once the round in progress has ended. No fact is emitted after stop().
 */
import { DurationSetting } from '../../gslb/model/domains.js';
import { Type, type Static } from '@sinclair/typebox';
import { boundedRequest, FetchError } from '../kit/http.js';
import { defineErrors } from '../kit/errors.js';
import { countersFor, defineCounters } from '../kit/counters.js';
import type { Collector, CollectorContext, Signal } from '../types.js';
import { MAX_COUNT } from '../../gslb/model/domains.js';
import { ExpositionError, parseExposition, seriesId, type Sample } from './parse.js';

const strict = { additionalProperties: false } as const;

export const PrometheusTargetSchema = Type.Object(
  {
    region: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'the region whose load this target reports (a regions/<id>.yaml)' }),
    url: Type.String({ pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^@/]+(/|$)', maxLength: 2048, description: 'the metrics URL, http: or https: without user:password@, e.g. http://10.0.0.5:8000/metrics' }),
    key: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'tells apart the facts of targets of one region (default: the url)' })),
    kind: Type.Optional(
      Type.Union([Type.Literal('model-server'), Type.Literal('dcgm')], {
        description: 'read only model-server or only DCGM-exporter metrics (default: whichever the target exposes)',
      }),
    ),
    headers: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z0-9-]+$' }), Type.String({ maxLength: 8192 }), { additionalProperties: false, description: 'extra request headers, e.g. authorization' })),
  },
  { ...strict, description: 'one Prometheus endpoint' },
);

export const PrometheusConfigSchema = Type.Object(
  {
    intervalMs: DurationSetting('time between scrape rounds, ms', 10000, 1000),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 60000, default: 3000, description: 'time one scrape may take (connect, headers and body), ms; at most intervalMs is used' }),
    targets: Type.Array(PrometheusTargetSchema, { minItems: 1, maxItems: 1000, description: 'the endpoints to scrape' }),
    saturation: Type.Object(
      {
        queueWaiting: Type.Number({ minimum: 0, default: 5, description: 'more requests waiting than this is saturated (logged)' }),
        kvCacheUse: Type.Number({ minimum: 0, maximum: 1, default: 0.8, description: 'a KV-cache use above this is saturated (logged)' }),
      },
      { ...strict, default: {}, description: 'the inference extension endpoint picker\'s thresholds; crossing them is logged, the planner applies policy.saturation' },
    ),
    throttleTempC: Type.Number({ minimum: 0, maximum: 200, default: 87, description: 'DCGM: a GPU at or above this temperature (°C) counts as throttled' }),
    xidBurst: Type.Integer({ minimum: 1, default: 3, description: 'DCGM: a GPU whose XID error total grew by this many since the previous scrape counts as unusable' }),
  },
  { ...strict, description: 'scrapes model servers and DCGM exporters; emits load.metrics and capacity' },
);

export type PrometheusConfig = Static<typeof PrometheusConfigSchema>;
export type PrometheusTarget = Static<typeof PrometheusTargetSchema>;

/** Most body bytes read from one target (after content decoding). */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;
/** Most sample lines accepted from one target. */
export const MAX_SERIES = 100_000;
/** Targets scraped at once. */
const CONCURRENCY = 8;
const ACCEPT = 'text/plain;version=0.0.4;q=1,*/*;q=0.1';

/**
 * Counters of one running instance (monotonic, like Prometheus counters): scrape attempts,
 * failed scrapes and signals emitted. A scrape cut short by stop() counts in none of them.
 */
export const prometheusCounters = defineCounters({ scrapes: 0, failures: 0, signals: 0, rejectedSamples: 0 });
/** Sums over every instance in this process (collectors/kit/counters.ts): tests and diagnostics only. */
export const prometheusTotals = prometheusCounters.total;

// Model-server metric names (the inference extension's model-server protocol; TGI's own).
export const QUEUE_METRICS = ['vllm:num_requests_waiting', 'sglang:num_queue_reqs', 'trtllm_num_requests_waiting', 'tgi_queue_size'] as const;
export const RUNNING_METRICS = ['vllm:num_requests_running', 'sglang:num_running_reqs', 'trtllm_num_requests_running', 'tgi_batch_current_size'] as const;
export const KV_METRICS = ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc', 'sglang:token_usage', 'trtllm_kv_cache_utilization'] as const;

// DCGM exporter metric names (dcgm-exporter's counter CSVs).
export const DCGM = {
  util: 'DCGM_FI_DEV_GPU_UTIL',
  fbUsed: 'DCGM_FI_DEV_FB_USED',
  fbFree: 'DCGM_FI_DEV_FB_FREE',
  power: 'DCGM_FI_DEV_POWER_USAGE',
  temp: 'DCGM_FI_DEV_GPU_TEMP',
  /** A gauge holding the code of the last XID error: read for the log only, it cannot count bursts. */
  xidLast: 'DCGM_FI_DEV_XID_ERRORS',
  /** The exporter's cumulative XID counter, one series per GPU and `xid` code (opt-in in its CSV). */
  xidTotal: 'DCGM_EXP_XID_ERRORS_TOTAL',
} as const;

const MODEL_SERVER_NAMES: ReadonlySet<string> = new Set<string>([...QUEUE_METRICS, ...RUNNING_METRICS, ...KV_METRICS]);
const DCGM_NAMES: ReadonlySet<string> = new Set<string>(Object.values(DCGM));

/** The payload of a load.metrics fact (gslb/state/signals.ts LoadMetricsValue). */
export interface LoadValue {
  queueDepth?: number;
  runningRequests?: number;
  kvCacheUse?: number;
  gpuMemoryUse?: number;
  throttledShare?: number;
}

/** What one scrape of one target says. */
export interface TargetReading {
  /** Which families were read: model-server metrics, DCGM metrics, or both. */
  found: { modelServer: boolean; dcgm: boolean };
  load: LoadValue;
  /** DCGM: GPUs seen in this scrape (by UUID, else host and index). */
  gpus: number;
  /** DCGM: GPUs whose XID total grew by ≥ xidBurst since `prevXid`. */
  unusable: string[];
  /** DCGM: the XID total per GPU seen now, 0 without a series (the next scrape's `prevXid`). */
  xid: Map<string, number>;
  /**
   * Samples of a known metric whose value is outside the field's domain (gslb/model/domains.ts:
   * NaN, ±Inf, negative, a count above MAX_COUNT, a share above 1), each in words naming the
   * metric and the field; the field is then left out (never clamped). The collectors count and
   * log them.
   */
  rejected: string[];
  /** How many were rejected (`rejected` describes at most MAX_REJECTED of them). */
  rejectedCount: number;
  /** DCGM, for the log only (LoadMetricsValue has no field for them): mean GPU utilisation %, total power W, last XID codes ≠ 0. */
  gpuUtilPct?: number;
  powerW?: number;
  lastXid?: Record<string, number>;
}

const finite = (v: number): boolean => Number.isFinite(v);
/** Most rejected samples described per reading (all of them are counted). */
export const MAX_REJECTED = 100;
/** A share in [0, 1]; a rounding overshoot up to 1e-6 is clamped, anything else is not a share. */
const share = (v: number): number | null => (finite(v) && v >= 0 && v <= 1 + 1e-6 ? Math.min(v, 1) : null);

/** A GPU's identity across DCGM metrics: its UUID, else host and index, else the whole label set. */
function gpuOf(s: Sample): string {
  const l = s.labels;
  if (l.UUID) return l.UUID;
  if (l.gpu !== undefined) return `${l.Hostname ?? ''}/${l.gpu}`;
  return seriesId('', l);
}

/**
 * Maps the samples of one target to facts (pure). `kind` limits which family is read;
 * `prevXid` is the XID total per GPU of the previous successful scrape (null: none yet).
 */
export function readTarget(
  samples: readonly Sample[],
  kind: PrometheusTarget['kind'],
  prevXid: ReadonlyMap<string, number> | null,
  o: { throttleTempC: number; xidBurst: number },
): TargetReading {
  const useMs = kind !== 'dcgm';
  const useDcgm = kind !== 'model-server';
  const found = { modelServer: false, dcgm: false };
  const load: LoadValue = {};
  let queue: number | null = null;
  let running: number | null = null;
  let kv: number | null = null;
  let memUse: number | null = null;
  const gpus = new Set<string>();
  const temp = new Map<string, number>();
  const fbUsed = new Map<string, number>();
  const fbFree = new Map<string, number>();
  const xidSum = new Map<string, number>();
  const util = new Map<string, number>();
  const lastXid: Record<string, number> = {};
  let powerW: number | null = null;
  const rejected: string[] = [];
  let rejectedCount = 0;
  const note = (why: string) => {
    rejectedCount++;
    if (rejected.length < MAX_REJECTED) rejected.push(why);
  };
  const reject = (sample: Sample, field: string, domain: string) => note(`${sample.name}: ${String(sample.value)} is not ${domain} (${field})`);
  const count = (sample: Sample, field: string): boolean => {
    if (finite(sample.value) && sample.value >= 0 && sample.value <= MAX_COUNT) return true;
    reject(sample, field, `a count from 0 to ${MAX_COUNT}`);
    return false;
  };
  for (const s of samples) {
    if (useMs && MODEL_SERVER_NAMES.has(s.name)) {
      found.modelServer = true;
      if ((QUEUE_METRICS as readonly string[]).includes(s.name)) {
        if (count(s, 'queueDepth')) queue = (queue ?? 0) + s.value;
      } else if ((RUNNING_METRICS as readonly string[]).includes(s.name)) {
        if (count(s, 'runningRequests')) running = (running ?? 0) + s.value;
      } else {
        const v = share(s.value);
        if (v !== null) kv = Math.max(kv ?? 0, v);
        else reject(s, 'kvCacheUse', 'a share from 0 to 1');
      }
    } else if (useDcgm && DCGM_NAMES.has(s.name)) {
      found.dcgm = true;
      const gpu = gpuOf(s);
      gpus.add(gpu);
      if (!finite(s.value)) continue;
      switch (s.name) {
        case DCGM.temp:
          temp.set(gpu, Math.max(temp.get(gpu) ?? -Infinity, s.value));
          break;
        case DCGM.fbUsed:
          if (s.value >= 0) fbUsed.set(seriesId('', s.labels), s.value);
          break;
        case DCGM.fbFree:
          if (s.value >= 0) fbFree.set(seriesId('', s.labels), s.value);
          break;
        case DCGM.xidTotal:
          if (s.value >= 0) xidSum.set(gpu, (xidSum.get(gpu) ?? 0) + s.value);
          break;
        case DCGM.util:
          util.set(gpu, s.value);
          break;
        case DCGM.power:
          if (s.value >= 0) powerW = (powerW ?? 0) + s.value;
          break;
        case DCGM.xidLast:
          if (s.value !== 0) lastXid[gpu] = s.value;
          break;
      }
    }
  }
  // FB_USED and FB_FREE of the same series (GPU or MIG instance): used / (used + free).
  for (const [id, used] of fbUsed) {
    const free = fbFree.get(id);
    if (free === undefined || used + free <= 0) continue;
    const v = share(used / (used + free));
    if (v !== null) memUse = Math.max(memUse ?? 0, v);
    else note(`${DCGM.fbUsed} / (${DCGM.fbUsed} + ${DCGM.fbFree}): ${used} / (${used} + ${free}) is not a share from 0 to 1 (gpuMemoryUse)`);
  }
  // A sum of several series (pods behind one target) may leave the domain though each is in it.
  const sum = (v: number | null, field: string, names: readonly string[]): number | null => {
    if (v === null || v <= MAX_COUNT) return v;
    note(`${names.join(' + ')}: the sum ${v} is not a count from 0 to ${MAX_COUNT} (${field})`);
    return null;
  };
  queue = sum(queue, 'queueDepth', QUEUE_METRICS);
  running = sum(running, 'runningRequests', RUNNING_METRICS);
  if (queue !== null) load.queueDepth = queue;
  if (running !== null) load.runningRequests = running;
  if (kv !== null) load.kvCacheUse = kv;
  if (memUse !== null) load.gpuMemoryUse = memUse;
  if (temp.size > 0) {
    let hot = 0;
    for (const t of temp.values()) if (t >= o.throttleTempC) hot++;
    load.throttledShare = hot / temp.size;
  }
  // Every GPU seen has a total: 0 until its first XID series appears (the exporter writes one
  // per code only once that code was seen), so a GPU's first burst counts too.
  const xid = new Map<string, number>();
  for (const gpu of gpus) xid.set(gpu, xidSum.get(gpu) ?? 0);
  const unusable: string[] = [];
  if (prevXid) {
    for (const [gpu, total] of xid) {
      const before = prevXid.get(gpu);
      // A GPU not seen in the previous scrape, or a total that went down (exporter restart), is a new baseline.
      if (before !== undefined && total - before >= o.xidBurst) unusable.push(gpu);
    }
  }
  const r: TargetReading = { found, load, gpus: gpus.size, unusable: unusable.sort(), xid, rejected, rejectedCount };
  if (util.size > 0) r.gpuUtilPct = [...util.values()].reduce((a, b) => a + b, 0) / util.size;
  if (powerW !== null) r.powerW = powerW;
  if (Object.keys(lastXid).length > 0) r.lastXid = lastXid;
  return r;
}

/**
 * Counts a reading's rejected samples in `stats.rejectedSamples` and logs them: at warn when
 * what is rejected changes for that target or source (`state.rejected` remembers it), else at
 * debug, each line naming the metrics and the fields. Shared with prometheus-remote-write.
 */
export function noteRejected(log: CollectorContext['log'], stats: { rejectedSamples: number }, state: { rejected: string }, who: string, fields: Record<string, unknown>, reading: TargetReading): void {
  stats.rejectedSamples += reading.rejectedCount;
  const what = reading.rejected.join('; ');
  if (what === state.rejected) {
    if (what !== '') log.debug({ ...fields, rejected: reading.rejectedCount }, `${who}: samples refused again: ${what.slice(0, 500)}`);
    return;
  }
  state.rejected = what;
  if (what === '') log.info(fields, `${who}: no sample refused any more`);
  else log.warn({ ...fields, rejected: reading.rejectedCount }, `${who}: ${reading.rejectedCount} samples refused, their fields left out of the facts: ${what.slice(0, 1000)}`);
}

/** Why a scrape gave no fact (docs/conventions.md "Errors carry codes"); the README's Errors section lists them. */
export const PROMETHEUS_ERRORS = {
  PROM_ERR_FETCH: 'the target could not be reached, did not answer within timeoutMs, or cut its answer short',
  PROM_ERR_TOO_LARGE: 'the body is larger than the cap (4 MiB, declared, read or decompressed)',
  PROM_ERR_STATUS: 'the target answered an HTTP status other than 2xx (after redirects)',
  PROM_ERR_FORMAT: 'the body is not Prometheus text format',
  PROM_ERR_NO_METRICS: 'none of the known model-server or DCGM metrics, or none with a usable value',
  PROM_ERR_INTERNAL: 'a scrape failed for a reason none of the other codes names (a bug: please report it with the log line)',
} as const;
export type PrometheusErrorCode = keyof typeof PROMETHEUS_ERRORS;

/** A scrape that failed, with its code and why in words (no module prefix: the log line adds it). */
export const ScrapeError = defineErrors('collectors/prometheus', PROMETHEUS_ERRORS, { name: 'ScrapeError', prefixMessages: false });
export type ScrapeError = InstanceType<typeof ScrapeError>;

/**
 * GETs `url` and returns its body as text. Throws ScrapeError (why, in words) on any
 * failure: timeout, status ≥ 300 after redirects, more than `maxBytes`, or `stop` aborting.
 */
export async function fetchText(url: URL, headers: Readonly<Record<string, string>>, timeoutMs: number, maxBytes: number, stop: AbortSignal): Promise<string> {
  let res: { status: number; text: string };
  try {
    res = await boundedRequest({ url, headers: { accept: ACCEPT, ...headers }, timeoutMs, maxBytes, stop, redirect: 'follow' });
  } catch (e) {
    throw new ScrapeError(e instanceof FetchError && e.kind === 'too-large' ? 'PROM_ERR_TOO_LARGE' : 'PROM_ERR_FETCH', e instanceof FetchError ? e.message : String(e));
  }
  if (res.status < 200 || res.status >= 300) throw new ScrapeError('PROM_ERR_STATUS', `HTTP ${res.status}`);
  return res.text;
}

/** One configured target, resolved, and what this run remembers of it. */
interface TargetRun {
  target: PrometheusTarget;
  url: URL;
  /** The url as shown in logs (normalised). */
  shown: string;
  key: string;
  source: string;
  /** Failing since the last state change (starts ok: the first failure is logged). */
  failing: boolean;
  saturated: boolean;
  /** XID totals per GPU at the last successful scrape; null before the first. */
  xid: Map<string, number> | null;
  /** A capacity fact was emitted: from then on every successful scrape renews it. */
  capacity: boolean;
  /** What the last scrape refused (noteRejected), to log changes once. */
  rejected: string;
}

/** `prometheus/<host[:port]>` within the signal source pattern (IPv6 brackets dropped). */
function sourceOf(url: URL): string {
  return `prometheus/${url.host.replace(/[[\]]/g, '').replace(/[^A-Za-z0-9._:/@-]/g, '_')}`;
}

/**
 * The scraping of every target, one round at a time. start() runs round() on a timer; tests
 * call it directly. round() never rejects.
 */
export class PrometheusPoller {
  private readonly runs: TargetRun[];
  private readonly abort = new AbortController();
  private readonly cfg: PrometheusConfig;
  private stopped = false;

  /** This instance's counters (from ctx.counters: the host exports them). */
  readonly stats: ReturnType<typeof prometheusCounters.create>;

  /** Throws `collectors/prometheus: targets[i]…` when a target cannot be scraped as configured. */
  constructor(private readonly ctx: CollectorContext<PrometheusConfig>) {
    this.stats = countersFor(ctx, prometheusCounters);
    this.cfg = ctx.config;
    const seen = new Map<string, number>();
    this.runs = this.cfg.targets.map((t, i) => {
      let url: URL;
      try {
        url = new URL(t.url);
      } catch {
        throw new Error(`collectors/prometheus: targets[${i}].url: ${JSON.stringify(t.url)} is not a URL`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`collectors/prometheus: targets[${i}].url: only http: and https: URLs are scraped; got ${url.protocol}`);
      if (url.username || url.password) throw new Error(`collectors/prometheus: targets[${i}].url: remove user:password@ from the URL; put credentials in headers (e.g. authorization)`);
      const shown = url.href;
      const key = t.key ?? t.url;
      if (key.length > 200) throw new Error(`collectors/prometheus: targets[${i}]: the url is longer than 200 characters; give the target a key`);
      const source = sourceOf(url);
      if (source.length > 200) throw new Error(`collectors/prometheus: targets[${i}].url: the host name is too long for a signal source`);
      const id = `${t.region}\u0000${source}\u0000${key}`;
      const dup = seen.get(id);
      if (dup !== undefined) throw new Error(`collectors/prometheus: targets[${dup}] and targets[${i}] would emit the same facts (same region, host and key); give one a key`);
      seen.set(id, i);
      return { target: t, url, shown, key, source, failing: false, saturated: false, xid: null, capacity: false, rejected: '' };
    });
  }

  /** Scrapes every target once (at most CONCURRENCY at a time) and emits what they say. */
  async round(): Promise<void> {
    if (this.stopped) return;
    let next = 0;
    const worker = async () => {
      while (!this.stopped && next < this.runs.length) {
        const r = this.runs[next++]!;
        try {
          await this.scrape(r);
        } catch (e) {
          // Not expected (scrape handles its own failures); never let it out of the timer.
          this.ctx.log.error({ target: r.key, err: (e as Error).message }, 'collectors/prometheus: internal error while scraping');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, this.runs.length) }, worker));
  }

  /** Aborts requests in flight; no fact is emitted afterwards. */
  stop(): void {
    this.stopped = true;
    this.abort.abort();
  }

  private async scrape(r: TargetRun): Promise<void> {
    const cfg = this.cfg;
    let reading: TargetReading;
    let lines = 0;
    try {
      const text = await fetchText(r.url, r.target.headers ?? {}, Math.min(cfg.timeoutMs, cfg.intervalMs), MAX_BODY_BYTES, this.abort.signal);
      if (this.stopped) return;
      let parsed;
      try {
        parsed = parseExposition(text, { maxSeries: MAX_SERIES, keep: (n) => MODEL_SERVER_NAMES.has(n) || DCGM_NAMES.has(n) });
      } catch (e) {
        if (e instanceof ExpositionError) throw new ScrapeError('PROM_ERR_FORMAT', `not Prometheus text format: ${e.message}`);
        throw e;
      }
      lines = parsed.lines;
      reading = readTarget(parsed.samples, r.target.kind, r.xid, cfg);
      if (Object.keys(reading.load).length === 0 && reading.gpus === 0) {
        if (reading.found.modelServer) throw new ScrapeError('PROM_ERR_NO_METRICS', 'the model-server metrics hold no usable value (NaN, infinite, negative or a share above 1)');
        const what = r.target.kind === 'dcgm' ? 'DCGM exporter' : r.target.kind === 'model-server' ? 'model-server' : 'model-server or DCGM exporter';
        throw new ScrapeError('PROM_ERR_NO_METRICS', `none of the known ${what} metrics among ${lines} samples`);
      }
    } catch (e) {
      if (this.stopped) return;
      this.stats.scrapes++;
      this.stats.failures++;
      const why = e instanceof ScrapeError ? e.message : `unexpected: ${(e as Error).message}`;
      const code: PrometheusErrorCode = e instanceof ScrapeError ? e.code : 'PROM_ERR_INTERNAL';
      if (!r.failing) {
        r.failing = true;
        this.ctx.log.warn({ target: r.key, region: r.target.region, url: r.shown, reason: why, code }, `collectors/prometheus: scraping ${r.shown} fails (${why}); no facts from it until it recovers`);
      } else {
        this.ctx.log.debug({ target: r.key, reason: why }, 'collectors/prometheus: scrape failed again');
      }
      return;
    }
    this.stats.scrapes++;
    if (r.failing) {
      r.failing = false;
      this.ctx.log.info({ target: r.key, region: r.target.region, url: r.shown }, `collectors/prometheus: scraping ${r.shown} works again`);
    }
    r.xid = reading.xid;
    noteRejected(this.ctx.log, this.stats, r, `collectors/prometheus: ${r.shown}`, { target: r.key, region: r.target.region }, reading);
    this.noteSaturation(r, reading.load);
    const observedAt = this.ctx.now();
    const expiresAt = observedAt + 3 * cfg.intervalMs;
    const base = { region: r.target.region, source: r.source, key: r.key, observedAt, expiresAt };
    if (Object.keys(reading.load).length > 0) this.emit({ ...base, kind: 'load.metrics', value: reading.load });
    // Every successful scrape of GPUs renews the capacity fact (1 when all are usable): a fact
    // sent only after a burst would be forgotten by a new lease holder or a restart, and an
    // expired capacity fact turns "degraded" under the default stale policy.
    if (reading.gpus > 0) {
      if (reading.unusable.length > 0) {
        this.ctx.log.warn(
          { target: r.key, region: r.target.region, gpus: reading.unusable, xidBurst: cfg.xidBurst },
          `collectors/prometheus: ${reading.unusable.length} of ${reading.gpus} GPUs at ${r.shown} had at least ${cfg.xidBurst} XID errors since the last scrape; reporting them unusable`,
        );
      }
      r.capacity = true;
      const usable = Math.max(0, reading.gpus - reading.unusable.length);
      this.emit({ ...base, kind: 'capacity', value: { fraction: usable / reading.gpus } });
    }
    this.ctx.log.debug(
      { target: r.key, lines, load: reading.load, gpus: reading.gpus, gpuUtilPct: reading.gpuUtilPct, powerW: reading.powerW, lastXid: reading.lastXid },
      'collectors/prometheus: scraped',
    );
  }

  /** Logs a change of saturation (the endpoint picker's thresholds): a fact for operators, not for the plan. */
  private noteSaturation(r: TargetRun, v: LoadValue): void {
    const s = this.cfg.saturation;
    const why: string[] = [];
    if (v.queueDepth !== undefined && v.queueDepth > s.queueWaiting) why.push(`${v.queueDepth} requests waiting > ${s.queueWaiting}`);
    if (v.kvCacheUse !== undefined && v.kvCacheUse > s.kvCacheUse) why.push(`KV cache ${Math.round(v.kvCacheUse * 1000) / 10} % > ${s.kvCacheUse * 100} %`);
    const saturated = why.length > 0;
    if (saturated === r.saturated) return;
    r.saturated = saturated;
    if (saturated) this.ctx.log.info({ target: r.key, region: r.target.region, queueDepth: v.queueDepth, kvCacheUse: v.kvCacheUse }, `collectors/prometheus: ${r.shown} is saturated (${why.join(', ')})`);
    else this.ctx.log.info({ target: r.key, region: r.target.region, queueDepth: v.queueDepth, kvCacheUse: v.kvCacheUse }, `collectors/prometheus: ${r.shown} is no longer saturated`);
  }

  private emit(s: Signal): void {
    if (this.stopped) return;
    this.stats.signals++;
    this.ctx.emit(s); // never throws (CollectorContext)
  }
}

export const prometheus: Collector<PrometheusConfig> = {
  counters: prometheusCounters,
  errors: [ScrapeError],
  name: 'prometheus',
  configSchema: PrometheusConfigSchema,
  mode: 'poller',
  sources: 'prometheus/',
  /** What it emits, for the collector table of collectors/README.md. */
  summary: '`load.metrics`, `capacity` from model servers and DCGM',
  async start(ctx) {
    const poller = new PrometheusPoller(ctx);
    let running: Promise<void> | null = null;
    const tick = () => {
      if (running) {
        ctx.log.debug('collectors/prometheus: the previous round is still running; skipping this one');
        return;
      }
      running = poller.round().finally(() => {
        running = null;
      });
    };
    const timer = setInterval(tick, ctx.config.intervalMs);
    const stop = async () => {
      clearInterval(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      poller.stop();
      await running;
    };
    const onAbort = () => void stop();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    if (ctx.signal.aborted) await stop();
    else tick();
    return stop;
  },
};
