/**
 * The primary process: wiring only. config → serving state (serve/current.ts) → store →
 * planner (control/service.ts) → DNS (serve/supervisor.ts: in this process with workers = 0,
 * else in forked workers) → demand, collectors, drain hooks, metrics (control/) → HTTP API.
 * Every piece of behaviour lives in the module it names; this file only connects them.
 *
 * startGridSteer() is what `gridsteer serve` runs and what integration tests call in
 * process. It resolves once DNS and HTTP listen, and logs one line `"msg":"ready"` with the
 * addresses. It never calls process.exit; the CLI owns signals and exit codes.
 */
import { availableParallelism, hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import type { Logger } from 'pino';
import { processLogger } from './platform/log.js';

import { parseListen } from './dns/server.js';
import { prepare } from './serve/serving.js';
import { ConfigError } from './config/load.js';
import { ServingHolder } from './serve/current.js';
import { DnsProcesses } from './serve/supervisor.js';
import { reloader } from './serve/reload.js';
import { explainer } from './serve/explainer.js';
import { aggregateMetrics, createRegistry } from './serve/metrics.js';
import { GeoService, geoSettings } from './geo/service.js';
import { registerFleetMetrics } from './control/fleet-metrics.js';
import { registerNodeMetrics } from './control/node-metrics.js';
import { readiness } from './control/readiness.js';
import { StateService } from './control/service.js';
import { DemandFlusher } from './control/demand.js';
import { CollectorHost } from './control/collectors.js';
import { plannerSettings, storeFor } from './control/setup.js';
import { startDrainHooks, type DrainHooks } from './control/drain-hooks.js';
import { OperatorService } from './control/operator.js';
import { auditConfigWindows, WindowsService } from './control/windows.js';
import { JobRunner } from './control/jobs.js';
import { housekeepingJobs, practiceRuns } from './control/housekeeping.js';
import { registerJobMetrics } from './control/job-metrics.js';
import { safetyFactsOf } from './config/windows.js';
import { buildApi } from './api/app.js';
import { reservedNamespaces } from './config/tokens.js';
import { configWarnings, configuredCollectors, loadConfigTokens } from './config/ingest.js';
import { TokenGrants } from './control/ingest-grants.js';
import { TrustAudit } from './control/trust-audit.js';
import { logHttps } from './api/https.js';
import { readHttpTls } from './config/tls.js';
import { collectors } from '../collectors/index.js';
import { now as clockNow, realMs, testClock } from './platform/clock.js';

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
  /**
   * A reload asked for by a signal (SIGHUP): never rejects; a refusal is one JSON log line at
   * error level with every issue (`{file, line?, column?, path, message}`), like the API's 422.
   */
  reloadBySignal(signal: string): Promise<void>;
  /** Stops everything; `why` (e.g. the signal) goes in the shutdown log line. */
  close(why?: string): Promise<void>;
}

export async function startGridSteer(o: StartOptions): Promise<Running> {
  const log = o.log ?? processLogger(o.logLevel ?? 'info', 'primary');
  const serving = new ServingHolder(prepare(o.configFile));
  const cfg = serving.prepared.loaded.config;
  const workersWanted = o.workers ?? cfg.workers;
  const nWorkers = workersWanted === 'auto' ? availableParallelism() : workersWanted;
  // The token table, checked against the reserved namespaces (manual/, the configured collectors' prefixes): ADR 0021.
  const tokens = loadConfigTokens(serving.prepared.loaded, (o.env ?? process.env).GRIDSTEER_TOKENS);
  const tokenGrants = new TokenGrants(tokens, reservedNamespaces(configuredCollectors(cfg)));
  for (const w of configWarnings(cfg)) log.warn({ module: 'config' }, `config: ${w}`);
  // http.tls: checked by the loader already; read once here (a reload does not change it).
  const httpTls = cfg.http.tls ? readHttpTls(cfg.http.tls, dirname(serving.prepared.loaded.file)) : null;
  if (httpTls && !httpTls.tls) throw new Error(`http.tls: ${httpTls.problems.map((p) => `http.tls.${p.key}: ${p.message}`).join('; ')}`);

  const dns = new DnsProcesses({
    workers: nWorkers,
    listen: (o.dnsListen ?? cfg.dns.listen).map(parseListen),
    tcp: { ...cfg.dns.tcp },
    log,
    current: () => ({ prepared: serving.prepared, table: serving.table }),
  });
  serving.publish = () => dns.publish();
  let closing = false;
  const geo = new GeoService(geoSettings(cfg.geoip, serving.prepared.loaded.file), serving.prepared.geometry, log, (file, table) => {
    serving.setTable(file, table);
    log.info({ module: 'geo', version: table.version }, 'geo: table in force');
  });
  // Loads a cached table at once when one matches; otherwise compiles in the background.
  await geo.start();

  /** The drain hooks (set up below, once the store is open); told of every new plan. */
  let hooks: DrainHooks | null = null;
  /** Trust decisions to the audit log (on the node leading its lease); told of every new plan. */
  let trustAudit: TrustAudit | null = null;
  if (testClock) log.warn({ testClock }, 'GRIDSTEER_TEST_CLOCK is set: this node runs on a test clock (never in production)');
  const store = await storeFor(cfg, serving.prepared.loaded.file, (level, msg) => log[level]({ module: 'state' }, msg));
  const nodeEnv = (o.env ?? process.env).GRIDSTEER_NODE;
  const nodeId: string = nodeEnv && /^[A-Za-z0-9._-]{1,64}$/.test(nodeEnv) ? nodeEnv : `${hostname()}-${process.pid}`;
  const stateSvc = new StateService({
    nodeId,
    store,
    log,
    configHash: serving.prepared.loaded.hash,
    settings: plannerSettings(cfg, serving.prepared.loaded.regions),
    debounceMs: cfg.state.planDebounceMs,
    minIntervalMs: cfg.state.planMinIntervalMs,
    onPlan: (plan) => {
      serving.setPlan(plan);
      hooks?.runner.onPlan(plan);
      trustAudit?.onPlan(plan);
    },
    clock: clockNow,
    quota: () => serving.prepared.loaded.config.ingest,
  });
  // Opens the store and plans before DNS listens, so the first answers already follow the
  // stored overrides; a store that cannot be opened is retried in the background.
  await stateSvc.start();
  const regionIds = () => new Set(serving.prepared.loaded.regions.map((r) => r.id));
  const dnsAddresses = await dns.start();

  const registry = createRegistry(() => dns.stats());
  // Measured demand: every process's counts, every 10 s, into the store's buckets.
  const demand = new DemandFlusher(store, () => dns.takeDemand(), (msg) => log.warn({ module: 'state' }, msg), clockNow, realMs);
  demand.start();

  // Collectors: receivers on every node, pollers under a store lease on one.
  const env = o.env ?? process.env;
  const collectorHost = new CollectorHost({
    registry: collectors,
    sections: cfg.collectors as Record<string, unknown>,
    svc: stateSvc,
    store,
    log,
    node: nodeId,
    fleet: () => serving.prepared.loaded.regions.map((r) => ({ id: r.id, endpoints: r.endpoints.map((e) => e.address) })),
    leaseMs: 15_000,
    grants: cfg.ingest.collectors,
  });
  collectorHost.start();

  // Drain hooks (docs/drain-hooks.md): one node calls the regions' gateways, under the store
  // lease `hooks`; failures are retried and reported, never in the plan's way.
  trustAudit = new TrustAudit({ store, node: nodeId, log, clock: clockNow });
  trustAudit.start();
  trustAudit.onPlan(serving.prepared.state.plan);
  hooks = startDrainHooks({
    hooks: new Map(serving.prepared.loaded.regions.filter((r) => r.drainHook).map((r) => [r.id, r.drainHook!])),
    store,
    node: nodeId,
    plan: () => serving.prepared.state.plan,
    log,
    registry,
    env,
  });
  const windows = new WindowsService({
    svc: stateSvc,
    regions: regionIds,
    safety: () => safetyFactsOf(serving.prepared.loaded.config, serving.prepared.loaded.regions),
    plan: () => serving.prepared.state.plan,
    clock: clockNow,
  });
  // Housekeeping jobs (docs/schedules.md): node-cron, each slot on one node of the fleet.
  const practiceCounts = new Map<string, number>();
  const jobs = new JobRunner({ store, node: nodeId, log, clock: clockNow, ...(testClock ? { testRate: testClock.rate } : {}), jobs: housekeepingJobs({
      svc: stateSvc,
      plan: () => serving.prepared.state.plan,
      node: nodeId,
      clock: clockNow,
      practiceCounts,
      geo,
      hookCheck: {
        hooks: () => (serving.prepared.loaded.config.housekeeping.verifyHooks ? new Map(serving.prepared.loaded.regions.filter((r) => r.drainHook).map((r) => [r.id, r.drainHook!])) : new Map()),
        env,
      },
      auditTrim: () => {
        const hk = serving.prepared.loaded.config.housekeeping;
        return { retentionMs: hk.auditRetentionDays * 86_400_000, ...(hk.auditExport ? { exportFile: resolve(dirname(serving.prepared.loaded.file), hk.auditExport) } : {}) };
      },
    }) });
  jobs.start();
  registerJobMetrics(registry, jobs, practiceCounts);
  const operator = new OperatorService(stateSvc, regionIds, () => serving.prepared.state.plan, clockNow, () => hooks?.runner.status());
  const nodeMetrics = registerNodeMetrics(registry, { collectors, host: collectorHost, plan: () => serving.prepared.state.plan, store: () => stateSvc.status(), ingestRefused: () => stateSvc.ingestRefused });
  // Region share, next change, state, health and power, signal age, collector freshness (fleet-metrics.ts).
  registerFleetMetrics(registry, {
    settings: () => stateSvc.planInputs().settings,
    plan: () => serving.prepared.state.plan,
    records: () => stateSvc.planRecords(),
    now: clockNow,
    collectorsLastStored: () => collectorHost.lastStored,
  });
  const metrics = async () => aggregateMetrics([await registry.getMetricsAsJSON(), ...(await dns.workerMetrics())]);
  const reload = reloader({
    configFile: o.configFile,
    ...(o.dnsListen ? { dnsListen: o.dnsListen } : {}),
    first: cfg,
    serving,
    geo,
    plan: () => stateSvc.plan,
    reconfigure: (next, previous) => {
      // The configuration's windows are not overrides: a reload that changes them is audited here.
      const before = previous.loaded.config.windows ?? [];
      stateSvc.reconfigure(next.loaded.hash, plannerSettings(next.loaded.config, next.loaded.regions));
      void auditConfigWindows(stateSvc, nodeId, next.loaded.file, before, next.loaded.config.windows ?? [], clockNow(), (m) => log.warn({ module: 'config' }, m));
    },
    log,
  });

  const api = await buildApi({
    log,
    tokens,
    rateLimit: () => serving.prepared.loaded.config.http.rateLimit,
    ...(httpTls?.tls ? { https: httpTls.tls.options } : {}),
    operator,
    fleet: async () => ({
      ...(await operator.fleet(
        serving.prepared.loaded.regions.map((r) => ({
          id: r.id,
          name: r.name,
          location: r.location,
          ...(r.capacity ? { capacityUnits: r.capacity.units } : {}),
          ...(r.power ? { power: r.power } : {}),
        })),
      )),
      storeLoss: stateSvc.status().loss ?? null,
    }),
    readiness: () =>
      readiness({
        config: { hash: serving.prepared.loaded.hash, file: serving.prepared.loaded.file },
        dns: dns.check(serving.prepared.state.version),
        store: stateSvc.status(),
        geo: { enabled: cfg.geoip.enabled, state: geo.state },
        closing,
        now: Date.now(),
      }),
    metrics,
    configInfo: () => ({
      version: serving.prepared.loaded.hash,
      file: serving.prepared.loaded.file,
      loadedAt: serving.loadedAt,
      zones: serving.prepared.loaded.config.zones.map((z) => z.name),
      names: serving.prepared.loaded.config.names.map((n) => n.name),
      regions: serving.prepared.loaded.regions.map((r) => r.id),
      ...(serving.prepared.loaded.config.http.banner !== undefined ? { banner: serving.prepared.loaded.config.http.banner } : {}),
    }),
    reload,
    explain: explainer(serving, geo, log, async () => new Set((await stateSvc.overrides()).map((o) => o.id))),
    state: {
      ingest: (signals, who) => stateSvc.ingest(signals, regionIds(), undefined, { refuseEnded: true, by: tokenGrants.ingester(who) }),
      overrides: () => stateSvc.overrides(),
      createOverride: (req, actor) => stateSvc.createOverride(req, actor, regionIds()),
      endOverride: (id, actor, reason) => stateSvc.endOverride(id, actor, reason),
      audit: (limit) => stateSvc.audit(limit),
      demand: async () => (await store.snapshot()).demand,
      plan: () => serving.prepared.state.plan,
      store: () => {
        const st = stateSvc.status();
        return { backend: st.backend, ready: st.ready, stale: st.stale, detail: st.why, loss: st.loss ?? null, losses: st.losses ?? 0 };
      },
      confirmLoss: (actor, reason) => stateSvc.confirmLoss(actor, reason),
    },
    windows,
    onRejected: (route, status) => nodeMetrics.rejected(route, status),
    quarantine: { view: () => stateSvc.quarantine(), end: (how, target, actor, reason) => stateSvc.endQuarantine(how, target, actor, reason) },
    jobs: { status: () => jobs.status(), practiceRuns: async () => practiceRuns(await stateSvc.audit(2000)) },
  });
  const httpAddr = parseListen(o.httpListen ?? cfg.http.listen);
  let httpUrl: string;
  try {
    httpUrl = await api.listen({ host: httpAddr.host, port: httpAddr.port });
  } catch (e) {
    closing = true;
    await dns.abort();
    await stateSvc.close().catch(() => undefined);
    throw e;
  }
  if (httpTls?.tls) logHttps(log, httpTls.tls);
  log.info({ dns: dnsAddresses, http: httpUrl, workers: nWorkers, version: serving.prepared.state.version }, 'ready');

  return {
    dns: dnsAddresses,
    http: httpUrl,
    reload,
    async reloadBySignal(signal: string) {
      try {
        const r = await reload();
        log.info({ module: 'config', signal, version: r.version, changed: r.changed }, `config: reload by ${signal} done`);
      } catch (e) {
        const issues = e instanceof ConfigError ? e.issues : undefined;
        log.error(
          { module: 'config', signal, ...(issues ? { issues } : { err: (e as Error).message }) },
          `config: reload by ${signal} refused${issues ? `: ${issues.length} problem(s) in the files` : ''}; still serving the previous configuration`,
        );
      }
    },
    async close(why?: string) {
      if (closing) return;
      closing = true;
      const t0 = Date.now();
      log.info({ module: 'lifecycle', why: why ?? 'close()' }, `shutting down (${why ?? 'close()'}): no new queries or requests are taken`);
      geo.close();
      demand.stop();
      await jobs.close();
      await collectorHost.stop();
      await hooks?.close();
      await trustAudit?.stop();
      await api.close();
      await stateSvc.close().catch((e: Error) => log.warn({ module: 'state', err: e.message }, 'state: close failed'));
      await dns.close();
      log.info({ module: 'lifecycle', ms: Date.now() - t0 }, `stopped after ${Date.now() - t0} ms`);
    },
  };
}
