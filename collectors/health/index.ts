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
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Type, type Static } from '@sinclair/typebox';
import type { Collector, CollectorContext } from '../types.js';

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
    intervalMs: Type.Integer({ minimum: 500, default: 5000, description: 'time between probe rounds, ms' }),
    timeoutMs: Type.Integer({ minimum: 100, default: 2000, description: 'time a probe may take, ms' }),
    checks: Type.Array(HealthCheckSchema, { minItems: 1, description: 'an endpoint is up when every check that applies to its region passes' }),
  },
  { ...strict, description: 'health probes of every region endpoint, from every node' },
);

export type HealthConfig = Static<typeof HealthConfigSchema>;
export type HealthCheck = Static<typeof HealthCheckSchema>;

const BODY_MAX = 64 * 1024;

/** Counters since the process started: rounds run, endpoint probes, endpoints found failing. */
export const healthStats = { rounds: 0, probes: 0, failures: 0 };

/** One check against one address: null when it passed, else why not. */
export function probe(address: string, c: HealthCheck, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (why: string | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(why);
    };
    const timer = setTimeout(() => {
      finish(`no answer within ${timeoutMs} ms`);
      cleanup();
    }, timeoutMs);
    let cleanup = () => {};
    if (c.type === 'tcp') {
      const sock = net.connect({ host: address, port: c.port });
      cleanup = () => sock.destroy();
      sock.once('connect', () => {
        sock.destroy();
        finish(null);
      });
      sock.once('error', (e) => finish(`tcp ${c.port}: ${e.message}`));
      return;
    }
    const mod = c.type === 'https' ? https : http;
    const req = mod.request(
      {
        host: address,
        port: c.port,
        path: c.path,
        method: 'GET',
        headers: { 'user-agent': 'gridsteer-health', ...(c.host ? { host: c.host } : {}), ...(c.headers ?? {}) },
        ...(c.type === 'https' ? { rejectUnauthorized: !c.insecure, servername: c.host ?? (net.isIP(address) ? undefined : address) } : {}),
        agent: false,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        if (!c.expectStatus.includes(status)) {
          res.destroy();
          finish(`${c.type} ${c.port}${c.path}: status ${status}, expected ${c.expectStatus.join(' or ')}`);
          return;
        }
        if (c.bodyMatch === undefined) {
          res.destroy();
          finish(null);
          return;
        }
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
          if (body.length >= BODY_MAX) res.destroy();
        });
        const judge = () => {
          let re: RegExp;
          try {
            re = new RegExp(c.bodyMatch!);
          } catch (e) {
            finish(`bodyMatch is not a regular expression: ${(e as Error).message}`);
            return;
          }
          finish(re.test(body.slice(0, BODY_MAX)) ? null : `${c.type} ${c.port}${c.path}: the body does not match /${c.bodyMatch}/`);
        };
        res.on('end', judge);
        res.on('close', judge);
        res.on('error', () => judge());
      },
    );
    cleanup = () => req.destroy();
    req.on('error', (e) => finish(`${c.type} ${c.port}${c.path}: ${e.message}`));
    req.end();
  });
}

export const health: Collector<HealthConfig> = {
  name: 'health',
  configSchema: HealthConfigSchema,
  mode: 'receiver',
  stats: () => healthStats,
  async start(ctx: CollectorContext<HealthConfig>) {
    const cfg = ctx.config;
    /** Last outcome per endpoint, so changes are logged once. */
    const last = new Map<string, string>();
    let running = false;
    const round = async () => {
      if (running || ctx.signal.aborted) return;
      running = true;
      healthStats.rounds++;
      try {
        const jobs: Promise<void>[] = [];
        for (const region of ctx.fleet()) {
          const checks = cfg.checks.filter((c) => !c.regions || c.regions.includes(region.id));
          if (checks.length === 0) continue;
          for (const address of region.endpoints) {
            jobs.push(
              (async () => {
                const t0 = performance.now();
                const why = (await Promise.all(checks.map((c) => probe(address, c, cfg.timeoutMs)))).find((w) => w !== null) ?? null;
                if (ctx.signal.aborted) return;
                healthStats.probes++;
                if (why !== null) healthStats.failures++;
                const now = ctx.now();
                ctx.emit({
                  region: region.id,
                  kind: 'health.probe',
                  source: `health/${ctx.node}`,
                  key: address,
                  observedAt: now,
                  // Three rounds: a node that stops probing stops counting soon after.
                  expiresAt: now + 3 * cfg.intervalMs,
                  value: why === null ? { up: true, latencyMs: Math.round((performance.now() - t0) * 10) / 10 } : { up: false, detail: why.slice(0, 500) },
                });
                const k = `${region.id} ${address}`;
                const outcome = why ?? 'up';
                if (last.get(k) !== outcome) {
                  if (why === null) ctx.log.info({ region: region.id, endpoint: address }, `collectors/health: ${region.id} ${address} passes its checks`);
                  else ctx.log.warn({ region: region.id, endpoint: address, why }, `collectors/health: ${region.id} ${address} fails: ${why}`);
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
