/**
 * This node's own gauges and counters on the primary's registry: each running collector's
 * counters and signal outcomes, the plan's unplaced demand, fail static, the store's clock
 * skew and the store revision the plan in force came from. Values are read at scrape time
 * from the functions given; nothing is counted on the DNS path.
 */
import client, { type Registry } from 'prom-client';
import type { Collector } from '../../collectors/types.js';
import type { Plan } from '../model/types.js';
import type { CollectorHost } from './collectors.js';

export interface NodeMetricsSources {
  /** The collector registry (collectors/index.ts). */
  collectors: readonly Collector[];
  host: Pick<CollectorHost, 'counts' | 'stats'>;
  /** The plan in force. */
  plan(): Plan;
  store(): { stale: boolean; clockSkewMs: number; loss?: unknown; losses?: number; quarantine?: { held: readonly { target: string }[] } };
  /** Ingest refused on this node by principal: outside its grants (forbidden), over a quota (ADR 0021). Absent = not counted. */
  ingestRefused?(): ReadonlyMap<string, { forbidden: number; quota: number }>;
}

/** What the API reports to this node's metrics. */
export interface NodeMetricsSinks {
  /** A request refused for its input: gridsteer_api_rejected_total{route, status}. */
  rejected(route: string, status: number): void;
}

/** How many items share each label set (for a gauge of counts by labels). */
function countBy<T, L extends Record<string, string>>(items: readonly T[], labelsOf: (x: T) => L): [L, number][] {
  const n = new Map<string, [L, number]>();
  for (const x of items) {
    const labels = labelsOf(x);
    const k = JSON.stringify(labels);
    const e = n.get(k);
    if (e) e[1]++;
    else n.set(k, [labels, 1]);
  }
  return [...n.values()];
}

export function registerNodeMetrics(registry: Registry, s: NodeMetricsSources): NodeMetricsSinks {
  const apiRejected = new client.Counter({
    name: 'gridsteer_api_rejected_total',
    help: 'API requests refused for their input on this node, by route and status (400 a field, 413 too large, 415 not JSON in UTF-8, 422 an invalid configuration); collectors count theirs in gridsteer_collector_signals_total{outcome="rejected"} and gridsteer_collector_events_total',
    labelNames: ['route', 'status'],
    registers: [registry],
  });
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
      for (const c of s.collectors) if (s.host.counts.has(c.name) && c.counters) walk(c.name, '', s.host.stats(c.name), 0);
    },
  });
  new client.Counter({
    name: 'gridsteer_ingest_refused_total',
    help: 'signals refused on this node by the principal that sent them (token:<name>, collector:<name>; ADR 0021): forbidden = outside its grants or in a reserved namespace (403), quota = over ingest.perMinute or ingest.liveRecords (429); nothing of a refused batch is stored',
    labelNames: ['principal', 'why'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [principal, c] of s.ingestRefused?.() ?? []) for (const why of ['forbidden', 'quota'] as const) if (c[why] > 0) this.inc({ principal, why }, c[why]);
    },
  });
  new client.Counter({
    name: 'gridsteer_collector_signals_total',
    help: 'signals emitted by collectors on this node, by collector and outcome (stored, stale: an equal or newer one was already stored, rejected: invalid, failed: the store did not answer)',
    labelNames: ['collector', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [name, c] of s.host.counts) for (const outcome of ['stored', 'stale', 'rejected', 'failed'] as const) this.inc({ collector: name, outcome }, c[outcome]);
    },
  });
  new client.Gauge({
    name: 'gridsteer_unplaced_demand_qps',
    help: 'measured demand (queries/s) of clients of a home region that no region with headroom could take, per home, from the plan in force (never dropped silently: those clients get whenAllDown)',
    labelNames: ['home'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [home, q] of Object.entries(s.plan().unplaced ?? {})) this.set({ home }, q);
    },
  });
  new client.Gauge({
    name: 'gridsteer_plan_alerts',
    help: "the plan's alerts in force by kind and severity (ADR 0014): trusted-loss-over-limit, loss-waiting, held-by-safety, loss-during-freeze, loss-untrusted; each also in GET /v1/status, the dashboard and the drain hook",
    labelNames: ['kind', 'severity'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, count] of countBy(s.plan().alerts ?? [], (a) => ({ kind: a.kind, severity: a.severity }))) this.set(labels, count);
    },
  });
  new client.Gauge({
    name: 'gridsteer_plan_trust_decisions',
    help: "claims of physical loss in the plan in force by trust decision and principal (Plan.trust, ADR 0014 and 0021): trusted, waiting, untrusted, distrusted, cancelled; each change is also an audit entry (trust.<status>)",
    labelNames: ['status', 'principal'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, count] of countBy(s.plan().trust ?? [], (d) => ({ status: d.status, principal: d.principal }))) this.set(labels, count);
    },
  });
  new client.Gauge({
    name: 'gridsteer_quarantined_records',
    help: 'stored records held out of planning (ADR 0020: planning with them failed, or they could not be read), by type (signal, override, demand), as this node last read the store; every node reports the same. GET /v1/quarantine lists them',
    labelNames: ['type'],
    registers: [registry],
    collect() {
      this.reset();
      const n: Record<string, number> = { signal: 0, override: 0, demand: 0 };
      for (const e of s.store().quarantine?.held ?? []) {
        const type = e.target.slice(0, e.target.indexOf(':'));
        n[type] = (n[type] ?? 0) + 1;
      }
      for (const [type, count] of Object.entries(n)) this.set({ type }, count);
    },
  });
  new client.Gauge({
    name: 'gridsteer_store_stale',
    help: '1 while this node cannot read the state store and answers from its last plan (fail static), else 0',
    registers: [registry],
    collect() {
      this.set(s.store().stale ? 1 : 0);
    },
  });
  new client.Gauge({
    name: 'gridsteer_store_data_loss',
    help: '1 while this node holds its last plan because the state store lost data (its revision went back, or its epoch or format marker vanished) and no operator has confirmed it yet, else 0',
    registers: [registry],
    collect() {
      this.set(s.store().loss ? 1 : 0);
    },
  });
  new client.Counter({
    name: 'gridsteer_store_data_losses_total',
    help: 'data losses of the state store this node has seen since it started (each also logged at error level and audited as store.loss)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(s.store().losses ?? 0);
    },
  });
  new client.Gauge({
    name: 'gridsteer_store_clock_skew_seconds',
    help: "the state store's clock minus this node's, in seconds (Redis TIME; 0 for the memory store); over 0.25 s the node is not ready",
    registers: [registry],
    collect() {
      this.set(s.store().clockSkewMs / 1000);
    },
  });
  new client.Gauge({
    name: 'gridsteer_plan_store_revision',
    help: 'the store revision the plan in force was computed from',
    registers: [registry],
    collect() {
      this.set(s.plan().storeRevision);
    },
  });
  return { rejected: (route, status) => apiRejected.inc({ route: route.slice(0, 80), status: String(status) }) };
}
