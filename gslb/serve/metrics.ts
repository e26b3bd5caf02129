/**
 * Prometheus metrics. Every process (primary and each DNS worker) keeps its own prom-client
 * registry; the primary gathers the workers' registries as JSON over IPC and aggregates them
 * with its own (prom-client's AggregatorRegistry rules: counters summed, gauges as declared).
 * The DNS counters are filled from DnsStats at scrape time, never on the hot path.
 */
import client, { AggregatorRegistry, type Registry, type MetricObjectWithValues, type MetricValue, type MetricValueWithName } from 'prom-client';
import { LATENCY_BOUNDS_MS, type DnsStats } from '../dns/stats.js';

/** One process's metrics as prom-client JSON. */
export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/** Bucket counts kept elsewhere: per bound then +Inf, not cumulative; the sum of the observations. */
export interface BucketCounts {
  counts: readonly number[];
  sum: number;
}

/**
 * A histogram whose counts are kept elsewhere (DnsStats, on the hot path) and read when
 * scraped: prom-client's Histogram observes one value at a time, so get() reports the
 * counts read instead (the same JSON shape: `_bucket{le}` cumulative, `_sum`, `_count`).
 */
export class CountedHistogram extends client.Histogram<string> {
  private readonly family: string;
  private readonly helpText: string;
  private readonly bounds: readonly number[];

  constructor(
    o: { name: string; help: string; buckets: readonly number[]; registers: Registry[] },
    private readonly read: () => BucketCounts | undefined,
  ) {
    super({ name: o.name, help: o.help, buckets: [...o.buckets], registers: o.registers });
    this.family = o.name;
    this.helpText = o.help;
    this.bounds = o.buckets;
  }

  /** The series of the counts read now (none before there is anything to read). */
  values(): MetricValueWithName<string>[] {
    const c = this.read();
    if (!c) return [];
    const out: MetricValueWithName<string>[] = [];
    let acc = 0;
    this.bounds.forEach((le, i) => {
      acc += c.counts[i] ?? 0;
      out.push({ metricName: `${this.family}_bucket`, labels: { le }, value: acc });
    });
    acc += c.counts[this.bounds.length] ?? 0;
    out.push({ metricName: `${this.family}_bucket`, labels: { le: '+Inf' }, value: acc });
    out.push({ metricName: `${this.family}_sum`, labels: {}, value: c.sum });
    out.push({ metricName: `${this.family}_count`, labels: {}, value: acc });
    return out;
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<string>>> {
    // prom-client's own shape at run time (its typings declare `type` an enum and a `collect`).
    const metric = { name: this.family, help: this.helpText, type: 'histogram', aggregator: 'sum', values: this.values() };
    return metric as unknown as MetricObjectWithValues<MetricValueWithName<string>>;
  }

  /** What Registry#metrics() reads (prom-client's text path). */
  async getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<string>>> {
    return this.get();
  }
}

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
    help: 'TCP connections by outcome: accepted, rejected (process limit, the client prefix at its fair share), rejected_per_client, idle_closed, message_timeout (a message not complete within dns.tcp.messageTimeoutMs of its first byte), evicted (the longest-idle of the prefix holding most, to admit a client under its fair share)',
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
      this.inc({ outcome: 'message_timeout' }, t.messageTimeout);
      this.inc({ outcome: 'evicted' }, t.evicted);
    },
  });
  new CountedHistogram(
    {
      name: 'gridsteer_dns_response_duration_seconds',
      help: 'time the responder took to make each DNS reply (parse, locate, decide, build; socket I/O and event-loop waits not included)',
      buckets: LATENCY_BOUNDS_MS.map((ms) => ms / 1000),
      registers: [registry],
    },
    () => {
      const l = stats()?.snapshot().latency;
      return l && { counts: l.counts, sum: l.sumSeconds };
    },
  );
  new client.Counter({
    name: 'gridsteer_dns_decisions_total',
    help: 'steered answers by name and why the region was chosen: nearest, preferred (carbon tie-break), failover (a region ranked before was down), spill (one ranked before did not admit the client), when_all_down, servfail',
    labelNames: ['name', 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const d of stats()?.snapshot().decisions ?? []) this.inc({ name: d.name, reason: d.reason }, d.value);
    },
  });
  new client.Counter({
    name: 'gridsteer_dns_decision_cache_lookups_total',
    help: "steered queries by how the responder's per-cell decision cache served them: hit (a cached decision), miss (decided and cached), bypass (decided per query: admission splits the cell or a change is near)",
    labelNames: ['result'],
    registers: [registry],
    collect() {
      this.reset();
      const c = stats()?.snapshot().cache;
      if (!c) return;
      this.inc({ result: 'hit' }, c.hit);
      this.inc({ result: 'miss' }, c.miss);
      this.inc({ result: 'bypass' }, c.bypass);
    },
  });
  new client.Counter({
    name: 'gridsteer_dns_rate_limited_total',
    help: 'UDP replies over their rate limit (dns.rateLimit), by kind (answer, referral, nodata, nxdomain, error) and action: slipped (sent truncated, TC=1), dropped, logged (mode log: answered)',
    labelNames: ['kind', 'action'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of stats()?.snapshot().rateLimited ?? []) this.inc({ kind: r.kind, action: r.action }, r.value);
    },
  });
  new client.Counter({
    name: 'gridsteer_dns_cookies_total',
    help: 'queries with a DNS COOKIE option (dns.cookies) by result: client_only (a server cookie was given), valid (a server cookie of ours or of a node with the same secret), bad (answered BADCOOKIE over UDP)',
    labelNames: ['result'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [result, v] of Object.entries(stats()?.snapshot().cookies ?? {})) this.inc({ result }, v);
    },
  });
  new client.Counter({
    name: 'gridsteer_dns_rate_limit_evictions_total',
    help: "slots of the rate limiter's fixed-size table taken over by another client prefix (the table is full: raise dns.rateLimit.tableSize if this grows steadily)",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(stats()?.snapshot().rateLimitEvictions ?? 0);
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
