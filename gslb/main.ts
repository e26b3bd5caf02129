/**
 * The primary process: wiring only. config → store → planner (StateService) → DNS (in this
 * process with workers = 0, else in forked workers) + HTTP API + metrics. Collectors: later.
 *
 * startGridSteer() is what `gridsteer serve` runs and what integration tests call in
 * process. It resolves once DNS and HTTP listen, and logs one line `"msg":"ready"` with the
 * addresses. It never calls process.exit; the CLI owns signals and exit codes.
 */
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism, hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';
import pino, { type Logger } from 'pino';
import client from 'prom-client';

import { Responder } from './dns/respond.js';
import { parseListen, reservePorts, startDnsServer, type DnsServer, type ListenAddress, type TcpLimits } from './dns/server.js';
import { explainQuery, prepare, servingState, stateVersion, tableOf, type Prepared } from './serving.js';
import { GeoService, geoSettings } from './geo/service.js';
import { DatabaseLocator } from './geo/locator.js';
import type { ExplainQuery } from './policy/explain.js';
import type { GeoTable } from './geo/table.js';
import { aggregateMetrics, createRegistry, type MetricsJson } from './metrics.js';
import { registerFleetMetrics } from './fleet-metrics.js';
import { buildApi, type ReadinessCheck } from './api/app.js';
import { loadTokens } from './api/auth.js';
import { readHttpTls } from './config/tls.js';
import type { FromWorker, ToWorker } from './worker.js';
import { StateService } from './state/service.js';
import { DemandFlusher } from './state/demand.js';
import { CollectorHost } from './collectors.js';
import { collectors } from '../collectors/index.js';
import type { DemandCounts } from './dns/respond.js';
import { plannerSettings, storeFor } from './state/setup.js';
import type { Plan } from './types.js';
import { now as clockNow, realMs, testClock } from './clock.js';
import { DrainHookRunner } from './hooks.js';
import { LeaseRunner } from './state/lease.js';
import { OperatorService } from './state/operator.js';

export interface StartOptions {
  configFile: string;
  /** Overrides config `workers`: 0 = answer in this process. */
  workers?: number | 'auto';
  /** Overrides config `dns.listen`. */
  dnsListen?: string[];
  /** Overrides config `http.listen`. */
  httpListen?: string;
  logLevel?: string;
  /** Logger to use (default: pino JSON to stdout). */
  log?: Logger;
  /** Environment for tokens (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface Running {
  /** `udp://host:port` and `tcp://host:port` per DNS address. */
  dns: string[];
  /** `http://host:port` (`https://` with http.tls). */
  http: string;
  /** Re-reads the configuration (SIGHUP, POST /v1/config/reload). Throws ConfigError. */
  reload(): Promise<{ version: string; changed: boolean }>;
  close(): Promise<void>;
}

interface WorkerSlot {
  worker: Worker;
  bound: boolean;
  acked: string;
}

export async function startGridSteer(o: StartOptions): Promise<Running> {
  const log = o.log ?? pino({ level: o.logLevel ?? 'info', base: { pid: process.pid, role: 'primary' }, timestamp: pino.stdTimeFunctions.isoTime });
  let prepared: Prepared = prepare(o.configFile);
  let loadedAt = Date.now();
  const cfg = prepared.loaded.config;
  const workersWanted = o.workers ?? cfg.workers;
  const nWorkers = workersWanted === 'auto' ? availableParallelism() : workersWanted;
  const listenSpec = (o.dnsListen ?? cfg.dns.listen).map(parseListen);
  const tcpLimits: TcpLimits = { ...cfg.dns.tcp };
  const tokensFile = cfg.http.tokensFile === undefined ? undefined : resolve(dirname(prepared.loaded.file), cfg.http.tokensFile);
  const tokens = loadTokens({ file: tokensFile, env: (o.env ?? process.env).GRIDSTEER_TOKENS });
  // http.tls: checked by the loader already; read once here (a reload does not change it).
  const httpTls = cfg.http.tls ? readHttpTls(cfg.http.tls, dirname(prepared.loaded.file)) : null;
  if (httpTls && !httpTls.tls) throw new Error(`http.tls: ${httpTls.problems.map((p) => `http.tls.${p.key}: ${p.message}`).join('; ')}`);

  let local: { responder: Responder; server: DnsServer } | undefined;
  const slots = new Map<number, WorkerSlot>();
  let closing = false;
  let dnsAddresses: string[] = [];
  let metricsSeq = 0;
  const pendingMetrics = new Map<number, (data: MetricsJson) => void>();
  const pendingDemand = new Map<number, (data: DemandCounts) => void>();

  /** Sends the current state to every answering process. */
  const publish = (table?: GeoTable | null) => {
    if (local) local.responder.swap(servingState(prepared.state, prepared.zones, table));
    for (const w of slots.values()) if (w.bound) w.worker.send({ t: 'state', state: prepared.state } satisfies ToWorker);
  };
  let geoTable: GeoTable | null = null;
  const geo = new GeoService(geoSettings(cfg.geoip, prepared.loaded.file), prepared.geometry, log, (file, table) => {
    geoTable = table;
    const g = { ...prepared.state.geo, file, version: table.version };
    prepared = { ...prepared, state: { ...prepared.state, geo: g, version: stateVersion(prepared.state.plan, g) } };
    publish(table);
    log.info({ module: 'geo', version: table.version }, 'geo: table in force');
  });
  // Loads a cached table at once when one matches; otherwise compiles in the background.
  await geo.start();

  /** The drain hooks (set up below, once the store is open); told of every new plan. */
  let hookRunner: DrainHookRunner | null = null;
  /** Swaps a new plan in (keeping the geo table) and hands it to every answering process. */
  const applyPlan = (plan: Plan) => {
    const g = prepared.state.geo;
    prepared = { ...prepared, state: { ...prepared.state, plan, version: stateVersion(plan, g) } };
    publish(geoTable);
    hookRunner?.onPlan(plan);
  };
  if (testClock) log.warn({ testClock }, 'GRIDSTEER_TEST_CLOCK is set: this node runs on a test clock (never in production)');
  const store = await storeFor(cfg, prepared.loaded.file, (level, msg) => log[level]({ module: 'state' }, msg));
  const stateSvc = new StateService({
    store,
    log,
    configHash: prepared.loaded.hash,
    settings: plannerSettings(cfg, prepared.loaded.regions),
    debounceMs: cfg.state.planDebounceMs,
    onPlan: applyPlan,
    clock: clockNow,
  });
  // Opens the store and plans before DNS listens, so the first answers already follow the
  // stored overrides; a store that cannot be opened is retried in the background.
  await stateSvc.start();
  const regionIds = () => new Set(prepared.loaded.regions.map((r) => r.id));

  if (nWorkers === 0) {
    const queryLog = log.child({ module: 'querylog' });
    const responder = new Responder(servingState(prepared.state, prepared.zones, geoTable), { queryLog: (e) => queryLog.info(e, 'query') });
    const server = await startDnsServer(listenSpec, responder, tcpLimits, log);
    local = { responder, server };
    dnsAddresses = server.addresses;
  } else {
    const listen = await reservePorts(listenSpec);
    dnsAddresses = await forkWorkers(listen);
  }

  function forkOne(listen: ListenAddress[]): Promise<string[]> {
    const worker = cluster.fork();
    const slot: WorkerSlot = { worker, bound: false, acked: '' };
    slots.set(worker.id, slot);
    return new Promise((resolve, reject) => {
      worker.on('message', (m: FromWorker) => {
        switch (m.t) {
          case 'hello': {
            const msg: ToWorker = { t: 'serve', state: prepared.state, listen, tcp: tcpLimits, logLevel: log.level };
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
            pendingMetrics.get(m.id)?.(m.data as MetricsJson);
            break;
          case 'demand':
            pendingDemand.get(m.id)?.(m.data);
            break;
          case 'fatal':
            log.error({ worker: worker.id, err: m.message }, 'dns worker failed');
            reject(new Error(`dns worker: ${m.message}`));
            break;
        }
      });
      worker.on('exit', (code, signal) => {
        slots.delete(worker.id);
        reject(new Error(`dns worker exited (${signal ?? code}) before binding`));
        if (closing) return;
        log.error({ worker: worker.id, code, signal }, 'dns worker exited; starting another');
        setTimeout(() => {
          if (!closing) forkOne(listen).catch((e) => log.error({ err: (e as Error).message }, 'dns worker restart failed'));
        }, 500);
      });
    });
  }

  async function forkWorkers(listen: ListenAddress[]): Promise<string[]> {
    cluster.setupPrimary({ exec: fileURLToPath(new URL('./worker.js', import.meta.url)), args: [], silent: false });
    const results = await Promise.all(Array.from({ length: nWorkers }, () => forkOne(listen)));
    return results[0]!;
  }

  const readiness = (): { ready: boolean; checks: ReadinessCheck[] } => {
    const want = prepared.state.version;
    const checks: ReadinessCheck[] = [{ name: 'config', ok: true, detail: `version ${prepared.loaded.hash} from ${prepared.loaded.file}` }];
    if (local) {
      checks.push({ name: 'dns', ok: local.responder.version === want, detail: `answering in the primary on ${dnsAddresses.join(' ')}` });
    } else {
      const s = [...slots.values()];
      const behind = s.filter((w) => !w.bound || w.acked !== want);
      checks.push({
        name: 'dns-workers',
        ok: s.length === nWorkers && behind.length === 0,
        detail:
          behind.length === 0 && s.length === nWorkers
            ? `${s.length} workers serve version ${want}`
            : `${s.length}/${nWorkers} workers up; behind: ${behind.map((w) => `#${w.worker.id} at ${w.acked || 'nothing'}`).join(', ') || 'none'}`,
      });
    }
    const ss = stateSvc.status();
    // Fail static counts as ready (issue 7: "store fresh or failing static"): a node that lost
    // the store keeps answering from its last plan, and an orchestrator must not take every
    // node out of service because Redis is down. Never having read the store is not ready.
    checks.push({
      name: 'store',
      ok: ss.ready || (ss.failingStatic && !ss.skewBad),
      detail: `${ss.backend}, revision ${ss.planRevision}: ${ss.why}${ss.failingStatic ? ' (fail static: ready, changes refused)' : ''}`,
    });
    const g = geo.state;
    if (!cfg.geoip.enabled) checks.push({ name: 'geo', ok: true, detail: 'disabled (geoip.enabled: false): every client is placed at the default location' });
    else if (g.file === null) {
      checks.push({
        name: 'geo',
        ok: false,
        detail: g.error
          ? `no table: ${g.error}; answering from the default location`
          : `compiling ${g.database ?? 'the database'}${g.building ? ` for ${Math.round((Date.now() - g.building) / 1000)}s` : ''}; answering from the default location until the first table is ready`,
      });
    } else {
      checks.push({
        name: 'geo',
        ok: true,
        detail:
          `table ${g.version} from ${g.database}` +
          (g.building ? `; compiling a new table for ${Math.round((Date.now() - g.building) / 1000)}s, answering from this one meanwhile` : '') +
          (g.error ? `; last error: ${g.error}` : ''),
      });
    }
    return { ready: !closing && checks.every((c) => c.ok), checks };
  };

  const registry = createRegistry(() => local?.responder.stats);

  // Measured demand: every process's counts, every 10 s, into the store's buckets.
  /**
   * Asks every bound worker one question over IPC ({t, id}) and collects the answers that
   * arrive within 2 s (a worker that does not answer is left out, never waited for).
   */
  const askWorkers = <T>(t: 'metrics' | 'demand', pending: Map<number, (data: T) => void>): Promise<T[]> =>
    Promise.all(
      [...slots.values()]
        .filter((w) => w.bound)
        .map(
          (w) =>
            new Promise<T | null>((resolve) => {
              const id = ++metricsSeq;
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
  const collectDemand = async (): Promise<DemandCounts[]> => [...(local ? [local.responder.takeDemand()] : []), ...(await askWorkers('demand', pendingDemand))];
  const demand = new DemandFlusher(store, collectDemand, (msg) => log.warn({ module: 'state' }, msg), clockNow);
  demand.start();

  // Collectors: receivers on every node, pollers under a store lease on one.
  const env = o.env ?? process.env;
  const nodeId = env.GRIDSTEER_NODE && /^[A-Za-z0-9._-]{1,64}$/.test(env.GRIDSTEER_NODE) ? env.GRIDSTEER_NODE : `${hostname()}-${process.pid}`;
  const collectorHost = new CollectorHost({
    registry: collectors,
    sections: cfg.collectors as Record<string, unknown>,
    svc: stateSvc,
    store,
    log,
    node: nodeId,
    fleet: () => prepared.loaded.regions.map((r) => ({ id: r.id, endpoints: r.endpoints.map((e) => e.address) })),
    leaseMs: 15_000,
  });
  collectorHost.start();

  // Drain hooks (docs/drain-hooks.md): one node calls the regions' gateways, under the store
  // lease `hooks`; failures are retried and reported, never in the plan's way.
  const hookConfigs = new Map(prepared.loaded.regions.filter((r) => r.drainHook).map((r) => [r.id, r.drainHook!]));
  let hookLease: LeaseRunner | null = null;
  if (hookConfigs.size > 0) {
    let leader = false;
    hookLease = new LeaseRunner({
      store,
      name: 'hooks',
      holder: nodeId,
      ttlMs: 15_000,
      log: (level, msg) => log[level]({ module: 'hooks' }, msg),
      start: () => {
        leader = true;
        return () => {
          leader = false;
        };
      },
    });
    hookLease.run();
    hookRunner = new DrainHookRunner({ hooks: hookConfigs, plan: () => prepared.state.plan, clock: clockNow, realMs, log, registry, env, active: () => leader, activeCheckMs: 1000 });
    hookRunner.start();
  }
  const operator = new OperatorService(stateSvc, regionIds, () => prepared.state.plan, clockNow, () => hookRunner?.status());
  new client.Counter({
    name: 'gridsteer_collector_events_total',
    help: "each running collector's own counters (polls, failures by code, payloads refused …; see its README), one series per numeric counter",
    labelNames: ['collector', 'event'],
    registers: [registry],
    collect() {
      this.reset();
      const walk = (collector: string, prefix: string, v: unknown, depth: number): void => {
        if (typeof v === 'number' && Number.isFinite(v) && v >= 0) this.inc({ collector, event: prefix }, v);
        else if (v && typeof v === 'object' && depth < 4) for (const [k, x] of Object.entries(v)) walk(collector, prefix ? `${prefix}.${k}` : k, x, depth + 1);
      };
      for (const c of collectors) if (collectorHost.counts.has(c.name) && c.counters) walk(c.name, '', collectorHost.stats(c.name), 0);
    },
  });
  new client.Counter({
    name: 'gridsteer_collector_signals_total',
    help: 'signals emitted by collectors on this node, by collector and outcome (stored, stale: an equal or newer one was already stored, rejected: invalid, failed: the store did not answer)',
    labelNames: ['collector', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [name, c] of collectorHost.counts) for (const outcome of ['stored', 'stale', 'rejected', 'failed'] as const) this.inc({ collector: name, outcome }, c[outcome]);
    },
  });
  new client.Gauge({
    name: 'gridsteer_unplaced_demand_qps',
    help: 'measured demand (queries/s) of clients of a home region that no region with headroom could take, per home, from the plan in force (never dropped silently: those clients get whenAllDown)',
    labelNames: ['home'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [home, q] of Object.entries(prepared.state.plan.unplaced ?? {})) this.set({ home }, q);
    },
  });
  // Region share, next change, state, health and power, signal age, collector freshness (fleet-metrics.ts).
  registerFleetMetrics(registry, {
    settings: () => stateSvc.planInputs().settings,
    plan: () => prepared.state.plan,
    records: () => stateSvc.planRecords(),
    now: clockNow,
    collectorsLastStored: () => collectorHost.lastStored,
  });
  new client.Gauge({
    name: 'gridsteer_store_stale',
    help: '1 while this node cannot read the state store and answers from its last plan (fail static), else 0',
    registers: [registry],
    collect() {
      this.set(stateSvc.status().stale ? 1 : 0);
    },
  });
  new client.Gauge({
    name: 'gridsteer_store_clock_skew_seconds',
    help: "the state store's clock minus this node's, in seconds (Redis TIME; 0 for the memory store); over 0.25 s the node is not ready",
    registers: [registry],
    collect() {
      this.set(stateSvc.status().clockSkewMs / 1000);
    },
  });
  new client.Gauge({
    name: 'gridsteer_plan_store_revision',
    help: 'the store revision the plan in force was computed from',
    registers: [registry],
    collect() {
      this.set(prepared.state.plan.storeRevision);
    },
  });
  const metrics = async () => {
    const parts: MetricsJson[] = [await registry.getMetricsAsJSON(), ...(await askWorkers('metrics', pendingMetrics))];
    return aggregateMetrics(parts);
  };

  /**
   * Re-reads the configuration and swaps it in. Synchronous from start to swap (so two reloads
   * can never interleave); async only to fit the API. Throws ConfigError, keeping the old one.
   */
  const reload = async (): Promise<{ version: string; changed: boolean }> => {
    let next = prepare(o.configFile);
    // Keep answering from the table in force; the geo service swaps in a new one if the
    // geometry or the database setting changed.
    const g = prepared.state.geo;
    // The plan in force stays until the planner has planned with the new configuration.
    const plan = stateSvc.plan ?? next.state.plan;
    next = { ...next, state: { ...next.state, geo: g, plan, version: stateVersion(plan, g) } };
    const changed = next.state.version !== prepared.state.version || next.loaded.hash !== prepared.loaded.hash;
    const listenNow = (o.dnsListen ?? next.loaded.config.dns.listen).join(',');
    if (!o.dnsListen && listenNow !== cfg.dns.listen.join(',')) log.warn('config: dns.listen changed; restart to listen on the new addresses');
    if (JSON.stringify(next.loaded.config.http.tls) !== JSON.stringify(cfg.http.tls)) log.warn('config: http.tls changed; restart to use the new TLS settings');
    if (changed) {
      prepared = next;
      loadedAt = Date.now();
      publish(geoTable);
      log.info({ version: next.state.version }, 'config reloaded');
      if (next.loaded.config.state.store !== cfg.state.store || JSON.stringify(next.loaded.config.state.redis) !== JSON.stringify(cfg.state.redis)) {
        log.warn({ module: 'state' }, 'config: state.store or state.redis changed; restart to use the new store');
      }
      stateSvc.reconfigure(next.loaded.hash, plannerSettings(next.loaded.config, next.loaded.regions));
      if (JSON.stringify(next.loaded.config.collectors) !== JSON.stringify(cfg.collectors)) {
        log.warn({ module: 'collectors' }, 'config: collectors changed; restart to run the new collector settings');
      }
    }
    void geo.setGeometry(next.geometry, geoSettings(next.loaded.config.geoip, next.loaded.file));
    return { version: next.loaded.hash, changed };
  };

  // Explain's database lookups: the file the table in force was compiled from, read on the
  // first explain and again when the table changes.
  const locator = new DatabaseLocator(() => {
    const g = geo.state;
    return prepared.loaded.config.geoip.enabled && g.database !== null ? { file: g.database, version: g.version } : null;
  });
  const geoNote = (): string => {
    const g = geo.state;
    if (!prepared.loaded.config.geoip.enabled) return 'geoip.enabled is false';
    if (g.file === null) return g.error ? `no table could be made: ${g.error}` : 'the first compile of the database is running';
    return g.building ? 'a new table is being compiled; this one answers meanwhile' : `database ${g.database}`;
  };
  const explain = async (q: ExplainQuery) => {
    const p = prepared;
    let lookupError: string | null = null;
    const result = await explainQuery(
      {
        zones: p.zones,
        plan: p.state.plan,
        geometry: p.geometry,
        minTtl: p.state.opts.minTtl,
        geo: tableOf(p.state.geo, geoTable),
        lookup: () =>
          locator.current().catch((e: Error) => {
            lookupError = e.message;
            log.warn({ module: 'geo', err: e.message }, 'explain: cannot read the GeoIP database for locations');
            return null;
          }),
        geoNote: geoNote(),
      },
      q,
      Date.now(),
    );
    if (lookupError !== null) result.notes.push(`located: the GeoIP database could not be read: ${lookupError}`);
    return result;
  };

  const api = await buildApi({
    log,
    tokens,
    rateLimit: () => prepared.loaded.config.http.rateLimit,
    ...(httpTls?.tls ? { https: httpTls.tls.options } : {}),
    operator,
    fleet: () =>
      operator.fleet(
        prepared.loaded.regions.map((r) => ({
          id: r.id,
          name: r.name,
          location: r.location,
          ...(r.capacity ? { capacityUnits: r.capacity.units } : {}),
          ...(r.power ? { power: r.power } : {}),
        })),
      ),
    readiness,
    metrics,
    configInfo: () => ({
      version: prepared.loaded.hash,
      file: prepared.loaded.file,
      loadedAt,
      zones: prepared.loaded.config.zones.map((z) => z.name),
      names: prepared.loaded.config.names.map((n) => n.name),
      regions: prepared.loaded.regions.map((r) => r.id),
    }),
    reload,
    explain,
    state: {
      ingest: (signals) => stateSvc.ingest(signals, regionIds()),
      overrides: () => stateSvc.overrides(),
      createOverride: (req, actor) => stateSvc.createOverride(req, actor, regionIds()),
      endOverride: (id, actor, reason) => stateSvc.endOverride(id, actor, reason),
      audit: (limit) => stateSvc.audit(limit),
      demand: async () => (await store.snapshot()).demand,
      plan: () => prepared.state.plan,
    },
  });
  const httpAddr = parseListen(o.httpListen ?? cfg.http.listen);
  let httpUrl: string;
  try {
    httpUrl = await api.listen({ host: httpAddr.host, port: httpAddr.port });
  } catch (e) {
    closing = true;
    await local?.server.close();
    for (const w of slots.values()) w.worker.kill();
    await stateSvc.close().catch(() => undefined);
    throw e;
  }
  if (httpTls?.tls) {
    const t = httpTls.tls;
    log.info(
      { module: 'api', cert: t.files.cert, subject: t.subject, subjectAltName: t.subjectAltName, validTo: t.validTo.toISOString(), clientCa: t.files.clientCa },
      `api: HTTPS${t.requireClientCert ? ', client certificates required (mutual TLS)' : t.requestCert ? ', client certificates optional' : ''}`,
    );
    if (t.validTo.getTime() < Date.now()) log.warn({ module: 'api', cert: t.files.cert, validTo: t.validTo.toISOString() }, 'api: the HTTPS certificate has expired: clients will refuse it; renew it and restart');
  }
  log.info({ dns: dnsAddresses, http: httpUrl, workers: nWorkers, version: prepared.state.version }, 'ready');

  return {
    dns: dnsAddresses,
    http: httpUrl,
    reload,
    async close() {
      if (closing) return;
      closing = true;
      geo.close();
      demand.stop();
      await collectorHost.stop();
      await hookRunner?.close();
      await hookLease?.stop();
      await api.close();
      await stateSvc.close().catch((e: Error) => log.warn({ module: 'state', err: e.message }, 'state: close failed'));
      await local?.server.close();
      await Promise.all(
        [...slots.values()].map(
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
    },
  };
}
