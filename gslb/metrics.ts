/**
 * Prometheus metrics. Every process (primary and each DNS worker) keeps its own prom-client
 * registry; the primary gathers the workers' registries as JSON over IPC and aggregates them
 * with its own (prom-client's AggregatorRegistry rules: counters summed, gauges as declared).
 * The DNS counters are filled from DnsStats at scrape time, never on the hot path.
 */
import client, { AggregatorRegistry, type Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';

/** One process's metrics as prom-client JSON. */
export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];
import type { DnsStats } from './dns/stats.js';

/** A registry with the process's default metrics and, when `stats` is given, the DNS counters. */
export function createRegistry(stats?: () => DnsStats | undefined, prefix = 'gridsteer_'): Registry {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix });
  if (!stats) return registry;
  new client.Counter({
    name: 'gridsteer_dns_queries_total',
    help: 'DNS queries answered, by transport, query type and response code',
    labelNames: ['transport', 'qtype', 'rcode'],
    registers: [registry],
    collect() {
      const s = stats();
      this.reset();
      for (const q of s?.snapshot().queries ?? []) this.inc({ transport: q.transport, qtype: q.qtype, rcode: q.rcode }, q.value);
    },
  });
  new client.Counter({
    name: 'gridsteer_dns_answers_total',
    help: 'steered answers (A/AAAA of a GSLB name), by name and the region answered ("(none)" when whenAllDown answered without one): traffic share per region',
    labelNames: ['name', 'region'],
    registers: [registry],
    collect() {
      this.reset();
      for (const a of stats()?.snapshot().answers ?? []) this.inc({ name: a.name, region: a.region }, a.value);
    },
  });
  new client.Counter({
    name: 'gridsteer_dns_malformed_total',
    help: 'DNS packets that were not a well-formed query, by reason (answered FORMERR/NOTIMP/BADVERS or dropped)',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, v] of Object.entries(stats()?.snapshot().malformed ?? {})) this.inc({ reason }, v);
    },
  });
  new client.Counter({
    name: 'gridsteer_dns_dropped_total',
    help: 'DNS packets dropped without a reply, by reason (short, response)',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, v] of Object.entries(stats()?.snapshot().dropped ?? {})) this.inc({ reason }, v);
    },
  });
  new client.Counter({
    name: 'gridsteer_dns_truncated_total',
    help: 'UDP replies sent truncated (TC=1) because the answer exceeded the size limit',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(stats()?.snapshot().truncated ?? 0);
    },
  });
  new client.Counter({
    name: 'gridsteer_dns_tcp_connections_total',
    help: 'TCP connections by outcome: accepted, rejected (process limit), rejected_per_client, idle_closed',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      this.reset();
      const t = stats()?.snapshot().tcp;
      if (!t) return;
      this.inc({ outcome: 'accepted' }, t.accepted);
      this.inc({ outcome: 'rejected' }, t.rejected);
      this.inc({ outcome: 'rejected_per_client' }, t.rejectedPerClient);
      this.inc({ outcome: 'idle_closed' }, t.idleClosed);
    },
  });
  new client.Gauge({
    name: 'gridsteer_dns_tcp_open_connections',
    help: 'TCP connections open now',
    registers: [registry],
    collect() {
      this.set(stats()?.snapshot().tcp.open ?? 0);
    },
  });
  return registry;
}

/** Aggregates metric JSON from several processes into Prometheus text. */
export async function aggregateMetrics(parts: MetricsJson[]): Promise<{ contentType: string; body: string }> {
  const merged = AggregatorRegistry.aggregate(parts);
  return { contentType: merged.contentType, body: await merged.metrics() };
}
