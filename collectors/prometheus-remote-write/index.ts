/**
 * prometheus-remote-write — a receiver of Prometheus remote-write 1.0, so that a site behind
 * NAT (or one whose own Prometheus, Grafana Alloy or vmagent already scrapes its model servers
 * and DCGM exporters) can push those series instead of GridSteer scraping them. It reads the
 * same metrics as the `prometheus` poller, through the poller's own mapping (`readTarget`),
 * and emits per configured source one `load.metrics` fact, plus `capacity` when DCGM GPUs are
 * present. A receiver: it runs on every node, each node listening on `listen`.
 *
 * Contract:
 * - One listener on `listen` (collectors/kit/server.ts: HTTP, or HTTPS and optional mutual
 *   TLS with `tls`), started by start() and closed (connections included) by the returned
 *   stop() or ctx.signal; no fact is emitted after stop. GET /healthz answers 200.
 * - A request is `POST <path>` with `Content-Encoding: snappy`, `Content-Type:
 *   application/x-protobuf` and a snappy-block body of a `prometheus.WriteRequest`. Answers:
 *   204 accepted; 400 malformed snappy or protobuf (a short text naming the problem); 401
 *   bearer token missing or wrong; 404 other path; 405 other method; 413 body above
 *   `maxBodyBytes`, decompressed above `maxDecodedBytes` or more than 100 000 series;
 *   415 other content type or encoding (remote-write 2.0 included).
 * - Series are grouped by the first source whose `match` labels all equal; a series matching
 *   none is ignored and counted. Per source, the latest sample of each known series is kept
 *   for `expireMs` (so that series split across requests by Prometheus's shards are read
 *   together), and every request touching the source re-reads them all and emits.
 * - Each failure kind is logged once per change of state (first failure: warn; the next
 *   accepted request: info) and counted in the instance's counters (`remoteWriteCounters`). Nothing throws out of the
 *   request handler.
 */
import { DurationSetting } from '../../gslb/model/domains.js';
import type http from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import type { Collector, CollectorContext, Signal } from '../types.js';
import { DCGM, KV_METRICS, QUEUE_METRICS, RUNNING_METRICS, noteRejected, readTarget } from '../prometheus/index.js';
import { seriesId, type Sample } from '../prometheus/parse.js';
import { defineErrors } from '../kit/errors.js';
import { countersFor, defineCounters } from '../kit/counters.js';
import { answer, BodyTooLarge, parseReceiverListen, readBody, ReceiverTlsSchema, startReceiver } from '../kit/server.js';
import { decodeWriteRequest, snappyDecode, TooLargeError, WireError, type WireSeries } from './wire.js';

const MODULE = 'collectors/prometheus-remote-write';
const strict = { additionalProperties: false } as const;
const MiB = 1024 * 1024;

export const RemoteWriteSourceSchema = Type.Object(
  {
    region: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'the region whose load these series report (a regions/<id>.yaml)' }),
    match: Type.Record(Type.String({ pattern: '^[a-zA-Z_][a-zA-Z0-9_]*$' }), Type.String({ maxLength: 1024 }), {
      minProperties: 1,
      description: 'labels a series must all carry with exactly these values, e.g. {job: vllm, cluster: va-1}',
    }),
    key: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'tells apart the facts of sources of one region (default: the match labels, name=value joined by ",")' })),
  },
  { ...strict, description: 'one group of pushed series, reported as one server or pool' },
);

export const RemoteWriteConfigSchema = Type.Object(
  {
    listen: Type.String({ pattern: '^(\\[[0-9A-Fa-f:.]+\\]|[^:\\[\\]\\s]+):[0-9]{1,5}$', description: "host:port to listen on, e.g. 0.0.0.0:9091 or [::1]:9091 (port 0: any free port)" }),
    path: Type.String({ pattern: '^/[^?#\\s]*$', default: '/api/v1/write', description: 'the URL path that accepts writes' }),
    bearerToken: Type.Optional(Type.String({ minLength: 16, maxLength: 4096, description: 'when set, a request must carry Authorization: Bearer <token>' })),
    maxBodyBytes: Type.Integer({ minimum: 1024, maximum: 64 * MiB, default: 4 * MiB, description: 'largest compressed body accepted, bytes' }),
    maxDecodedBytes: Type.Integer({ minimum: 1024, maximum: 256 * MiB, default: 32 * MiB, description: 'largest decompressed body accepted, bytes' }),
    sources: Type.Array(RemoteWriteSourceSchema, { minItems: 1, maxItems: 1000, description: 'which series report which region' }),
    expireMs: DurationSetting('how long a fact (and a pushed series) counts, ms', 60000, 1000),
    throttleTempC: Type.Number({ minimum: 0, maximum: 200, default: 87, description: 'DCGM: a GPU at or above this temperature (°C) counts as throttled' }),
    xidBurst: Type.Integer({ minimum: 1, default: 3, description: 'DCGM: a GPU whose XID error total grew by this many between two reads counts as unusable for expireMs' }),
    tls: Type.Optional(ReceiverTlsSchema),
  },
  { ...strict, description: 'receives Prometheus remote-write 1.0; emits load.metrics and capacity' },
);

export type RemoteWriteConfig = Static<typeof RemoteWriteConfigSchema>;
export type RemoteWriteSource = Static<typeof RemoteWriteSourceSchema>;

/** Most time series in one request. */
export const MAX_SERIES = 100_000;
/** Most known series kept per source (newer ones beyond it are dropped and counted). */
export const MAX_KEPT_PER_SOURCE = 10_000;
const MAX_LABELS = 256;
const MAX_SAMPLES = 100_000;
/** How far in the future a sample's timestamp may be and still be observedAt (signals.ts MAX_FUTURE_MS). */
const FUTURE_MS = 5000;

/**
 * Counters of one running instance (monotonic, never reset). `requests` counts every request;
 * each answer other than 204 counts in exactly one failure counter.
 */
export const remoteWriteCounters = defineCounters({
  requests: 0,
  accepted: 0,
  unauthorized: 0,
  unsupported: 0,
  tooLarge: 0,
  malformed: 0,
  notFound: 0,
  badMethod: 0,
  series: 0,
  unmatched: 0,
  dropped: 0,
  signals: 0,
  /** Samples of known metrics refused as outside their field's domain (NaN, ±Inf, negative, above MAX_COUNT, a share above 1). */
  rejectedSamples: 0,
  /** `host:port` the last started receiver listens on (tests with port 0 read it here). */
  listening: null as string | null,
});
/** Sums over every instance in this process (collectors/kit/counters.ts): tests and diagnostics only; `listening` is the newest instance's. */
export const remoteWriteTotals = remoteWriteCounters.total;

/** GET/HEAD here answer 200 (no token asked), unless `path` is this. */
export const HEALTH_PATH = '/healthz';

const KNOWN: ReadonlySet<string> = new Set<string>([...QUEUE_METRICS, ...RUNNING_METRICS, ...KV_METRICS, ...Object.values(DCGM)]);

/** Why a request was refused (docs/conventions.md "Errors carry codes"), with the status it is answered. */
export const REMOTE_WRITE_ERRORS = {
  REMOTE_WRITE_ERR_MALFORMED: { status: 400, meaning: 'the body is not snappy-compressed protobuf of a prometheus.WriteRequest (or the client left mid-body)' },
  REMOTE_WRITE_ERR_UNAUTHORIZED: { status: 401, meaning: 'bearerToken is set and the request carries no or another Authorization: Bearer' },
  REMOTE_WRITE_ERR_NOT_FOUND: { status: 404, meaning: 'a path other than `path`' },
  REMOTE_WRITE_ERR_METHOD: { status: 405, meaning: 'a method other than POST' },
  REMOTE_WRITE_ERR_TOO_LARGE: { status: 413, meaning: 'the body is above maxBodyBytes, decompressed above maxDecodedBytes, or holds more than 100 000 series' },
  REMOTE_WRITE_ERR_UNSUPPORTED: { status: 415, meaning: 'Content-Encoding is not snappy, Content-Type not application/x-protobuf, or the request is remote-write 2.0' },
} as const;
export type RemoteWriteErrorCode = keyof typeof REMOTE_WRITE_ERRORS;
/** A refused request; the message is the short text for the client and the log (no prefix). */
export const RemoteWriteError = defineErrors(MODULE, REMOTE_WRITE_ERRORS, { name: 'RemoteWriteError', prefixMessages: false });
export type RemoteWriteError = InstanceType<typeof RemoteWriteError>;

/** Which failure counter each code adds to. */
const COUNTER_OF: Record<RemoteWriteErrorCode, 'unauthorized' | 'unsupported' | 'tooLarge' | 'malformed' | 'notFound' | 'badMethod'> = {
  REMOTE_WRITE_ERR_MALFORMED: 'malformed',
  REMOTE_WRITE_ERR_UNAUTHORIZED: 'unauthorized',
  REMOTE_WRITE_ERR_NOT_FOUND: 'notFound',
  REMOTE_WRITE_ERR_METHOD: 'badMethod',
  REMOTE_WRITE_ERR_TOO_LARGE: 'tooLarge',
  REMOTE_WRITE_ERR_UNSUPPORTED: 'unsupported',
};

interface Kept {
  sample: Sample;
  receivedAt: number;
}

interface SourceRun {
  src: RemoteWriteSource;
  matchPairs: Array<[string, string]>;
  key: string;
  series: Map<string, Kept>;
  prevXid: Map<string, number> | null;
  /** GPU → until when it counts unusable after an XID burst. */
  burstUntil: Map<string, number>;
  /** What the last read refused (noteRejected), to log changes once. */
  rejected: string;
}

/** The default key of a source: its match labels as name=value, sorted by name, joined by ",". */
export function defaultKey(match: Readonly<Record<string, string>>): string {
  return Object.keys(match)
    .sort()
    .map((k) => `${k}=${match[k]}`)
    .join(',');
}

/** Splits `host:port` (IPv6 in brackets): the kit's receiver listen parser with this collector's message. */
export function parseListen(listen: string): { host: string; port: number } {
  return parseReceiverListen(listen, MODULE, 'listen', '0.0.0.0:9091');
}

/** The receiver behind start(): tests may drive handle() through a real server only. */
class Receiver {
  private readonly runs: SourceRun[];
  private readonly cfg: RemoteWriteConfig;
  private readonly source: string;
  private readonly token: Buffer | null;
  /** Failure kinds logged as failing since the last accepted request. */
  private readonly failing = new Set<string>();
  stopped = false;
  /** This instance's counters (from ctx.counters: the host exports them). */
  readonly stats: ReturnType<typeof remoteWriteCounters.create>;

  constructor(private readonly ctx: CollectorContext<RemoteWriteConfig>) {
    this.stats = countersFor(ctx, remoteWriteCounters);
    this.cfg = ctx.config;
    this.source = `prometheus-rw/${ctx.node}`.replace(/[^A-Za-z0-9._:/@-]/g, '_').slice(0, 200);
    this.token = this.cfg.bearerToken ? Buffer.from(`Bearer ${this.cfg.bearerToken}`) : null;
    const seen = new Map<string, number>();
    this.runs = this.cfg.sources.map((src, i) => {
      const key = src.key ?? defaultKey(src.match);
      if (key.length > 200) throw new Error(`collectors/prometheus-remote-write: sources[${i}]: the match labels make a key longer than 200 characters; give the source a key`);
      const id = `${src.region}\u0000${key}`;
      const dup = seen.get(id);
      if (dup !== undefined) throw new Error(`collectors/prometheus-remote-write: sources[${dup}] and sources[${i}] would emit the same facts (same region and key); give one a key`);
      seen.set(id, i);
      return { src, matchPairs: Object.entries(src.match), key, series: new Map(), prevXid: null, burstUntil: new Map(), rejected: '' };
    });
  }

  /** Answers one request; never rejects. */
  async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.stats.requests++;
    try {
      const status = await this.accept(req);
      if (this.stopped) {
        answer(res, 503, 'stopping\n');
        return;
      }
      this.stats.accepted++;
      for (const kind of this.failing) this.ctx.log.info({ kind }, `collectors/prometheus-remote-write: requests are accepted again (after ${kind} failures)`);
      this.failing.clear();
      answer(res, status, '');
    } catch (e) {
      const r = e instanceof RemoteWriteError ? e : new RemoteWriteError('REMOTE_WRITE_ERR_MALFORMED', `unexpected: ${(e as Error).message}`);
      const kind = COUNTER_OF[r.code];
      const status = r.status ?? 400;
      this.stats[kind]++;
      if (!this.failing.has(kind)) {
        this.failing.add(kind);
        this.ctx.log.warn({ kind, code: r.code, status, reason: r.message, remote: req.socket.remoteAddress }, `collectors/prometheus-remote-write: refusing writes (${status}: ${r.message}); no facts from them`);
      } else {
        this.ctx.log.debug({ kind, code: r.code, reason: r.message }, 'collectors/prometheus-remote-write: refused again');
      }
      const headers: Record<string, string> = { connection: 'close' };
      if (status === 401) headers['www-authenticate'] = 'Bearer';
      if (status === 405) headers.allow = 'POST';
      answer(res, status, `${r.message}\n`, headers);
      // Whatever the client still sends is read and thrown away, bounded by the server's timeouts.
      req.resume();
    }
  }

  private async accept(req: http.IncomingMessage): Promise<number> {
    const cfg = this.cfg;
    const path = (req.url ?? '').split('?')[0];
    if (path !== cfg.path) throw new RemoteWriteError('REMOTE_WRITE_ERR_NOT_FOUND', `not found; remote write goes to ${cfg.path}`);
    if (req.method !== 'POST') throw new RemoteWriteError('REMOTE_WRITE_ERR_METHOD', `method ${req.method} not allowed; use POST`);
    if (this.token) {
      const got = Buffer.from(req.headers.authorization ?? '');
      if (got.length !== this.token.length || !timingSafeEqual(got, this.token)) throw new RemoteWriteError('REMOTE_WRITE_ERR_UNAUTHORIZED', 'missing or wrong bearer token');
    }
    const enc = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
    if (enc !== 'snappy') throw new RemoteWriteError('REMOTE_WRITE_ERR_UNSUPPORTED', `Content-Encoding must be snappy; got ${JSON.stringify(enc.slice(0, 50))}`);
    const [mime, ...params] = (req.headers['content-type'] ?? '').split(';').map((p) => p.trim().toLowerCase());
    if (mime !== 'application/x-protobuf') throw new RemoteWriteError('REMOTE_WRITE_ERR_UNSUPPORTED', `Content-Type must be application/x-protobuf; got ${JSON.stringify((mime ?? '').slice(0, 80))}`);
    const proto = params.find((p) => p.startsWith('proto='));
    if (proto && proto !== 'proto=prometheus.writerequest') throw new RemoteWriteError('REMOTE_WRITE_ERR_UNSUPPORTED', `only remote-write 1.0 (prometheus.WriteRequest) is accepted; got ${proto.slice(0, 80)}`);
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (declared > cfg.maxBodyBytes) throw new RemoteWriteError('REMOTE_WRITE_ERR_TOO_LARGE', `the body is ${declared} bytes, more than ${cfg.maxBodyBytes}`);
    let body: Buffer;
    try {
      body = await readBody(req, cfg.maxBodyBytes);
    } catch (e) {
      if (e instanceof BodyTooLarge) throw new RemoteWriteError('REMOTE_WRITE_ERR_TOO_LARGE', e.message);
      throw e;
    }
    let series: WireSeries[];
    try {
      const raw = snappyDecode(body, cfg.maxDecodedBytes);
      series = decodeWriteRequest(raw, { maxSeries: MAX_SERIES, maxLabels: MAX_LABELS, maxSamples: MAX_SAMPLES });
    } catch (e) {
      if (e instanceof TooLargeError) throw new RemoteWriteError('REMOTE_WRITE_ERR_TOO_LARGE', e.message);
      if (e instanceof WireError) throw new RemoteWriteError('REMOTE_WRITE_ERR_MALFORMED', e.message);
      throw e;
    }
    if (!this.stopped) this.ingest(series);
    return 204;
  }

  /** Files the series under their sources and emits for each source touched. */
  private ingest(series: readonly WireSeries[]): void {
    const now = this.ctx.now();
    const touched = new Map<SourceRun, number>(); // source → newest sample timestamp in this request
    this.stats.series += series.length;
    for (const ts of series) {
      const run = this.runs.find((r) => r.matchPairs.every(([k, v]) => ts.labels.some(([n, x]) => n === k && x === v)));
      if (!run) {
        this.stats.unmatched++;
        continue;
      }
      if (ts.samples.length === 0) continue;
      let latest = ts.samples[0]!;
      for (const s of ts.samples) if (s.timestamp >= latest.timestamp) latest = s;
      touched.set(run, Math.max(touched.get(run) ?? -Infinity, latest.timestamp));
      const labels: Record<string, string> = Object.create(null) as Record<string, string>;
      let name = '';
      for (const [n, v] of ts.labels) {
        if (n === '__name__') name = v;
        else labels[n] = v;
      }
      if (!KNOWN.has(name)) continue;
      const id = seriesId(name, labels);
      const before = run.series.get(id);
      // An older sample arriving late (a retried batch) does not replace a newer one; a kept
      // sample that has expired or was stamped in the future does not hold the series back.
      const live = before !== undefined && before.receivedAt > now - this.cfg.expireMs && (before.sample.timestamp ?? 0) <= now + FUTURE_MS;
      if (live && (before.sample.timestamp ?? 0) > latest.timestamp) continue;
      if (!before && run.series.size >= MAX_KEPT_PER_SOURCE) {
        this.stats.dropped++;
        continue;
      }
      run.series.set(id, { sample: { name, labels, value: latest.value, timestamp: latest.timestamp }, receivedAt: now });
    }
    for (const [run, newest] of touched) this.emitFor(run, newest, now);
  }

  private emitFor(run: SourceRun, newest: number, now: number): void {
    const cfg = this.cfg;
    for (const [id, k] of run.series) if (k.receivedAt <= now - cfg.expireMs) run.series.delete(id);
    const samples = [...run.series.values()].map((k) => k.sample);
    const reading = readTarget(samples, undefined, run.prevXid, cfg);
    run.prevXid = reading.xid;
    noteRejected(this.ctx.log, this.stats, run, `collectors/prometheus-remote-write: ${run.key}`, { source: run.key, region: run.src.region }, reading);
    const observedAt = newest <= now + FUTURE_MS && newest >= now - cfg.expireMs ? newest : now;
    const expiresAt = observedAt + cfg.expireMs;
    for (const gpu of reading.unusable) run.burstUntil.set(gpu, now + cfg.expireMs);
    for (const [gpu, until] of run.burstUntil) if (until <= now || !reading.xid.has(gpu)) run.burstUntil.delete(gpu);
    if (reading.unusable.length > 0) {
      this.ctx.log.warn(
        { source: run.key, region: run.src.region, gpus: reading.unusable, xidBurst: cfg.xidBurst },
        `collectors/prometheus-remote-write: ${reading.unusable.length} of ${reading.gpus} GPUs of ${run.key} had at least ${cfg.xidBurst} XID errors since the previous write; reporting them unusable`,
      );
    }
    const base = { region: run.src.region, source: this.source, key: run.key, observedAt, expiresAt };
    if (Object.keys(reading.load).length > 0) this.emit({ ...base, kind: 'load.metrics', value: reading.load });
    if (reading.gpus > 0) this.emit({ ...base, kind: 'capacity', value: { fraction: Math.max(0, reading.gpus - run.burstUntil.size) / reading.gpus } });
  }

  private emit(s: Signal): void {
    if (this.stopped) return;
    this.stats.signals++;
    this.ctx.emit(s); // never throws (CollectorContext)
  }
}

export const prometheusRemoteWrite: Collector<RemoteWriteConfig> = {
  counters: remoteWriteCounters,
  errors: [RemoteWriteError],
  name: 'prometheus-remote-write',
  configSchema: RemoteWriteConfigSchema,
  mode: 'receiver',
  sources: 'prometheus-rw/',
  /** What it emits, for the collector table of collectors/README.md. */
  summary: '`load.metrics`, `capacity` (as the `prometheus` collector), pushed with Prometheus remote-write 1.0 (snappy protobuf) by sites behind NAT',
  warnings: (cfg) => {
    const { host } = parseListen(cfg.listen);
    const loopback = host === 'localhost' || /^127\./.test(host) || host === '::1' || host === '[::1]';
    return loopback || cfg.bearerToken !== undefined
      ? []
      : [`collectors.prometheus-remote-write.listen: ${cfg.listen} is reachable beyond loopback and bearerToken is not set: anyone who reaches the port speaks as this collector; set bearerToken (and the sender's authorization)`];
  },
  async start(ctx) {
    const rx = new Receiver(ctx);
    const server = await startReceiver({
      module: MODULE,
      listenKey: 'listen',
      listen: ctx.config.listen,
      example: '0.0.0.0:9091',
      tls: ctx.config.tls,
      log: ctx.log,
      healthPath: ctx.config.path === HEALTH_PATH ? undefined : HEALTH_PATH,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      handle: (req, res) => rx.handle(req, res),
    });
    const shown = server.shown;
    rx.stats.listening = shown;
    ctx.log.info({ listen: shown, path: ctx.config.path }, `collectors/prometheus-remote-write: receiving remote write on ${server.scheme}://${shown}${ctx.config.path}`);
    let closed: Promise<void> | null = null;
    const stop = (): Promise<void> => {
      closed ??= new Promise<void>((resolve) => {
        rx.stopped = true;
        ctx.signal.removeEventListener('abort', onAbort);
        void server.close().then(resolve);
      });
      return closed;
    };
    const onAbort = () => void stop();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    if (ctx.signal.aborted) await stop();
    return stop;
  },
};
