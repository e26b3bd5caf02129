/**
 * health — probes every endpoint of every region from this node (a vantage point) and emits
 * one `health.probe` fact per endpoint and round: up when every configured check passed.
 * It runs on every node (a receiver, not a leased poller): each node's probes are one vote,
 * and the planner marks an endpoint down only on a majority of vantages, so one node's
 * network cut cannot drain a region. Rise/fall thresholds are the reducer's
 * (`policy.health`), not this collector's.
 *
 * Checks: `http` (GET http(s)://<address>:<port><path>, a status in `expectStatus`, optional
 * `bodyMatch` regular expression on at most 64 KiB of the body — point it at a readiness
 * URL such as vLLM's /v1/models to count a region up only once its model is loaded) and
 * `tcp` (a connection accepted). A probe never throws; its failure is the fact.
 */
import { DurationSetting } from '../../gslb/model/domains.js';
import net from 'node:net';
import { Type, type Static } from '@sinclair/typebox';
import type { Collector, CollectorContext } from '../types.js';
import { boundedRequest, FetchError, type BoundedAnswer } from '../kit/http.js';
import { defineErrors } from '../kit/errors.js';
import { countersFor, defineCounters } from '../kit/counters.js';
import type { KindValue } from '../../gslb/model/kinds/index.js';
import { DAY_MS } from '../../gslb/model/domains.js';

type HealthProbe = KindValue<'health.probe'>;

const strict = { additionalProperties: false } as const;

export const HealthCheckSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('http'), Type.Literal('https'), Type.Literal('tcp')], { description: 'http(s): GET a URL on the endpoint; tcp: connect' }),
    port: Type.Integer({ minimum: 1, maximum: 65535, description: 'the port on each endpoint address' }),
    path: Type.String({ pattern: '^/', default: '/health', description: 'http(s): the path to GET' }),
    host: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'http(s): Host header (and TLS server name); default: the address' })),
    expectStatus: Type.Array(Type.Integer({ minimum: 100, maximum: 599 }), { minItems: 1, default: [200], description: 'http(s): statuses that count as up' }),
    bodyMatch: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'http(s): a regular expression the first 64 KiB of the body must match (e.g. the model name in /v1/models)' })),
    headers: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z0-9-]+$' }), Type.String(), { description: 'http(s): extra request headers' })),
    insecure: Type.Boolean({ default: false, description: 'https: accept any certificate' }),
    regions: Type.Optional(Type.Array(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }), { minItems: 1, description: 'only these regions (default: every region)' })),
  },
  { ...strict, description: 'one check run against every endpoint of the regions it applies to' },
);

export const HealthConfigSchema = Type.Object(
  {
    intervalMs: DurationSetting('time between probe rounds, ms', 5000, 500),
    timeoutMs: DurationSetting('time a probe may take, ms', 2000, 100, 60_000),
    checks: Type.Array(HealthCheckSchema, { minItems: 1, description: 'an endpoint is up when every check that applies to its region passes' }),
  },
  { ...strict, description: 'health probes of every region endpoint, from every node' },
);

export type HealthConfig = Static<typeof HealthConfigSchema>;
export type HealthCheck = Static<typeof HealthCheckSchema>;

const BODY_MAX = 64 * 1024;

/** Counters of one running instance: rounds run, endpoint probes, endpoints found failing. */
export const healthCounters = defineCounters({ rounds: 0, probes: 0, failures: 0 });
/** Sums over every instance in this process (collectors/kit/counters.ts): tests and diagnostics only. */
export const healthTotals = healthCounters.total;

/** Why a check failed (docs/conventions.md "Errors carry codes"): logged with the failure; the fact carries the words. */
export const HEALTH_ERRORS = {
  HEALTH_ERR_TIMEOUT: 'no answer within timeoutMs',
  HEALTH_ERR_CONNECT: 'the connection (TCP, TLS) was refused, reset or cut short',
  HEALTH_ERR_STATUS: 'an http(s) check got a status not in expectStatus',
  HEALTH_ERR_BODY: 'an http(s) check got a body that does not match bodyMatch, or bodyMatch is not a regular expression',
} as const;
export type HealthErrorCode = keyof typeof HEALTH_ERRORS;
/** Only for the codes' table (the README's Errors section): a probe never throws. */
export const HealthError = defineErrors('collectors/health', HEALTH_ERRORS, { name: 'HealthError' });

/** A failed check: its code and why in words. */
export interface ProbeFailure {
  code: HealthErrorCode;
  why: string;
}

/** One check against one address: null when it passed, else why not. */
export async function probe(address: string, c: HealthCheck, timeoutMs: number): Promise<string | null> {
  return (await probeCoded(address, c, timeoutMs))?.why ?? null;
}

/** Never aborted: a probe ends by its own deadline. */
const NEVER = new AbortController().signal;

/** probe(), with the failure's code. Never throws. */
export async function probeCoded(address: string, c: HealthCheck, timeoutMs: number): Promise<ProbeFailure | null> {
  if (c.type === 'tcp') return tcpProbe(address, c.port, timeoutMs);
  const where = `${c.type} ${c.port}${c.path}`;
  let a: BoundedAnswer;
  try {
    a = await boundedRequest({
      url: `${c.type}://${net.isIPv6(address) ? `[${address}]` : address}:${c.port}${c.path}`,
      headers: { 'user-agent': 'gridsteer-health', 'accept-encoding': 'identity', ...(c.host ? { host: c.host } : {}), ...(c.headers ?? {}) },
      timeoutMs,
      maxBytes: BODY_MAX,
      stop: NEVER,
      readBody: (status) => c.bodyMatch !== undefined && c.expectStatus.includes(status),
      overflow: 'truncate',
      tls: { rejectUnauthorized: !c.insecure, servername: c.host ?? (net.isIP(address) ? undefined : address) },
    });
  } catch (e) {
    if (e instanceof FetchError && e.kind === 'timeout') return { code: 'HEALTH_ERR_TIMEOUT', why: `no answer within ${timeoutMs} ms` };
    return { code: 'HEALTH_ERR_CONNECT', why: `${where}: ${(e as Error).message}` };
  }
  if (!c.expectStatus.includes(a.status)) return { code: 'HEALTH_ERR_STATUS', why: `${where}: status ${a.status}, expected ${c.expectStatus.join(' or ')}` };
  if (c.bodyMatch === undefined) return null;
  let re: RegExp;
  try {
    re = new RegExp(c.bodyMatch);
  } catch (e) {
    return { code: 'HEALTH_ERR_BODY', why: `bodyMatch is not a regular expression: ${(e as Error).message}` };
  }
  return re.test(a.text) ? null : { code: 'HEALTH_ERR_BODY', why: `${where}: the body does not match /${c.bodyMatch}/` };
}

/**
 * The health.probe value of one endpoint's checks: up with the round trip (0.1 ms, within the
 * schema's bound), or down with the first failure's words (at most 500 characters).
 */
export function probeValue(failure: ProbeFailure | null, latencyMs: number): HealthProbe {
  if (failure !== null) return { up: false, detail: failure.why.slice(0, 500) };
  return { up: true, latencyMs: Math.min(Math.max(0, Math.round(latencyMs * 10) / 10), DAY_MS) };
}

/** A TCP connection accepted within `timeoutMs`, then closed. */
function tcpProbe(address: string, port: number, timeoutMs: number): Promise<ProbeFailure | null> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: address, port });
    const finish = (f: ProbeFailure | null) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(f);
    };
    const timer = setTimeout(() => finish({ code: 'HEALTH_ERR_TIMEOUT', why: `no answer within ${timeoutMs} ms` }), timeoutMs);
    sock.once('connect', () => finish(null));
    sock.once('error', (e) => finish({ code: 'HEALTH_ERR_CONNECT', why: `tcp ${port}: ${e.message}` }));
  });
}

export const health: Collector<HealthConfig> = {
  name: 'health',
  configSchema: HealthConfigSchema,
  mode: 'receiver',
  sources: 'health/',
  /** What it emits, for the collector table of collectors/README.md. */
  summary: '`health.probe` per endpoint; every node is a vantage point',
  counters: healthCounters,
  errors: [HealthError],
  async start(ctx: CollectorContext<HealthConfig>) {
    const cfg = ctx.config;
    const stats = countersFor(ctx, healthCounters);
    /** Last outcome per endpoint, so changes are logged once. */
    const last = new Map<string, string>();
    let running = false;
    const round = async () => {
      if (running || ctx.signal.aborted) return;
      running = true;
      stats.rounds++;
      try {
        const jobs: Promise<void>[] = [];
        for (const region of ctx.fleet()) {
          const checks = cfg.checks.filter((c) => !c.regions || c.regions.includes(region.id));
          if (checks.length === 0) continue;
          for (const address of region.endpoints) {
            jobs.push(
              (async () => {
                const t0 = performance.now();
                const failure = (await Promise.all(checks.map((c) => probeCoded(address, c, cfg.timeoutMs)))).find((w) => w !== null) ?? null;
                const why = failure?.why ?? null;
                if (ctx.signal.aborted) return;
                stats.probes++;
                if (why !== null) stats.failures++;
                const now = ctx.now();
                ctx.emit({
                  region: region.id,
                  kind: 'health.probe',
                  source: `health/${ctx.node}`,
                  key: address,
                  observedAt: now,
                  // Three rounds: a node that stops probing stops counting soon after.
                  expiresAt: now + 3 * cfg.intervalMs,
                  value: probeValue(failure, performance.now() - t0),
                });
                const k = `${region.id} ${address}`;
                const outcome = why ?? 'up';
                if (last.get(k) !== outcome) {
                  if (why === null) ctx.log.info({ region: region.id, endpoint: address }, `collectors/health: ${region.id} ${address} passes its checks`);
                  else ctx.log.warn({ region: region.id, endpoint: address, why, code: failure?.code }, `collectors/health: ${region.id} ${address} fails: ${why}`);
                  last.set(k, outcome);
                }
              })(),
            );
          }
        }
        await Promise.all(jobs);
      } finally {
        running = false;
      }
    };
    void round();
    const timer = setInterval(() => void round(), cfg.intervalMs);
    return async () => {
      clearInterval(timer);
    };
  },
};
