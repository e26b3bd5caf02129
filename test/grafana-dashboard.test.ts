/**
 * The Grafana dashboard (dashboards/grafana/gridsteer.json, issue 7) against a running server:
 * its shape (every panel titled, on the `${datasource}` Prometheus variable, with PromQL
 * targets; the datasource/instance/region variables), and every metric its panels,
 * annotations and variables query exported by GET /metrics of a real `serve` process — with
 * counters under rate()/increase() and a histogram's `_bucket` series counted as its family.
 * The reverse holds too: each GridSteer metric /metrics exports is charted somewhere
 * (Node's default process metrics excepted). The alert rules (dashboards/grafana/alerts.yaml,
 * Grafana file provisioning) are checked the same way: their shape, each rule's queries
 * against /metrics, and the panel each links to charting what the rule alerts on.
 *
 * The server gets a drain hook on us-va (a loopback gateway), since the hook metrics exist
 * only where a region has one; dig queries and one malformed packet give the DNS counters
 * series. The PromQL scanner (helpers/promql.ts) is checked first on a case table, an
 * unknown metric among them, so that a dashboard querying something GridSteer does not
 * export is seen to fail.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { dig } from './helpers/dig.js';
import { askSteered } from './helpers/geo.js';
import { sleep, udpExchange } from './helpers/net.js';
import { MALFORMED, QUERIES, describeMetric, hasMetric, parsePrometheus, type Sample } from './helpers/metrics.js';
import { exampleRegions, repoRoot } from './helpers/paths.js';
import { checkRefs, metricFamilies, metricNames, metricRefs, PromqlScanError, type MetricRef } from './helpers/promql.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';
import { startDrainGateway, type DrainGateway } from './helpers/drain-gateway.js';
import { buildQuery, QTYPE } from './helpers/wire.js';

const DASHBOARD_FILE = join(repoRoot, 'dashboards', 'grafana', 'gridsteer.json');
const ALERTS_FILE = join(repoRoot, 'dashboards', 'grafana', 'alerts.yaml');
/** The Prometheus data source of the alert rules: Grafana expands it from its environment. */
const ALERT_DATASOURCE = '${GRIDSTEER_PROMETHEUS_UID}';
const DATASOURCE = '${datasource}';
/** Grafana's own variables an expression may use. */
const GRAFANA_BUILTINS = new Set(['__rate_interval', '__interval', '__interval_ms', '__range', '__range_s', '__range_ms', '__from', '__to', '__dashboard', '__name']);

// ---------------------------------------------------------------- the dashboard, as data

type Json = Record<string, unknown>;
interface Query {
  /** Where it is, for messages: `panel "Title" target A`, `annotation "…"`, `variable region`. */
  where: string;
  expr: string;
}

const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Json;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const panels = arr(dashboard.panels).map(obj);
const annotations = arr(obj(dashboard.annotations).list).map(obj);
const variables = arr(obj(dashboard.templating).list).map(obj);

/** Whether a datasource reference is the `${datasource}` variable (object or legacy string form). */
function isTemplatedDatasource(ds: unknown): boolean {
  if (ds === DATASOURCE) return true;
  const o = obj(ds);
  return o.uid === DATASOURCE && (o.type === undefined || o.type === 'prometheus');
}

/** A query variable's query: the string form, or the object form's `query`. */
function variableQuery(v: Json): string {
  return typeof v.query === 'string' ? v.query : String(obj(v.query).query ?? v.definition ?? '');
}

/** Every PromQL expression the dashboard runs. */
function dashboardQueries(): Query[] {
  const out: Query[] = [];
  for (const p of panels) for (const t of arr(p.targets).map(obj)) out.push({ where: `panel ${JSON.stringify(p.title)} target ${String(t.refId)}`, expr: String(t.expr ?? '') });
  for (const a of annotations) out.push({ where: `annotation ${JSON.stringify(a.name)}`, expr: String(a.expr ?? obj(a.target).expr ?? '') });
  for (const v of variables.filter((x) => x.type === 'query')) out.push({ where: `variable ${String(v.name)}`, expr: variableQuery(v) });
  return out;
}

/** The metrics each query selects, with where it was. */
function dashboardRefs(): { where: string; refs: MetricRef[] }[] {
  return dashboardQueries().map((q) => ({ where: q.where, refs: metricRefs(q.expr) }));
}

// ---------------------------------------------------------------- the alert rules, as data

const alertsFile = obj(parse(readFileSync(ALERTS_FILE, 'utf8')));
const alertRules = arr(alertsFile.groups)
  .map(obj)
  .flatMap((g) => arr(g.rules).map(obj));

/** The Prometheus queries of the alert rules (not Grafana's expressions, datasource `__expr__`). */
function alertQueries(): (Query & { rule: Json })[] {
  return alertRules.flatMap((r) =>
    arr(r.data)
      .map(obj)
      .filter((q) => q.datasourceUid !== '__expr__')
      .map((q) => ({ rule: r, where: `alert rule ${JSON.stringify(r.title)} query ${String(q.refId)}`, expr: String(obj(q.model).expr ?? '') })),
  );
}

// ---------------------------------------------------------------- the scanner itself

test('the PromQL scanner finds the metrics of a case table, and nothing else', () => {
  const cases: [string, string[]][] = [
    ['gridsteer_store_stale', ['gridsteer_store_stale']],
    ['sum by (rcode) (rate(gridsteer_dns_queries_total{instance=~"$instance"}[$__rate_interval]))', ['gridsteer_dns_queries_total']],
    ['sum(rate(gridsteer_dns_queries_total[5m])) by (qtype, rcode)', ['gridsteer_dns_queries_total']],
    ['histogram_quantile(0.99, sum by (instance, le) (rate(foo_seconds_bucket{a="b"}[5m])))', ['foo_seconds_bucket']],
    ['time() - max by (region) (gridsteer_drain_hook_last_success_timestamp_seconds{region=~"${region}"})', ['gridsteer_drain_hook_last_success_timestamp_seconds']],
    ['max by (region) (changes(gridsteer_region_share[$__interval])) > 0', ['gridsteer_region_share']],
    ['a_total / on(region) group_left(home) b_info', ['a_total', 'b_info']],
    ['a / ignoring (code) group_right b', ['a', 'b']],
    ['x and y or z unless w == bool 1', ['w', 'x', 'y', 'z']],
    ['clamp_min(x offset 1h, 0) + y @ end()', ['x', 'y']],
    ['rate(x[5m:30s]) * 1e3 + Inf - NaN', ['x']],
    ['topk(5, count_values("version", build_info))', ['build_info']],
    ['label_replace(up, "dst", "gridsteer_fake_$1", "src", "(.*)")', ['up']],
    ['x{label="a}b", other=~"[c]"}', ['x']],
    ['{__name__="gridsteer_plan_store_revision", job="g"}', ['gridsteer_plan_store_revision']],
    ['label_values(gridsteer_region_share, region)', ['gridsteer_region_share']],
    ['label_values(gridsteer_region_share{instance=~"$instance"}, region)', ['gridsteer_region_share']],
    ['label_values(region)', []],
    ['query_result(max by (region) (gridsteer_region_share))', ['gridsteer_region_share']],
    ['vector(1)', []],
    ['sum(rate(gridsteer_dns_answers_by_region_total[5m]))', ['gridsteer_dns_answers_by_region_total']],
  ];
  for (const [expr, want] of cases) assert.deepEqual(metricNames(expr), want, expr);
  assert.deepEqual(metricRefs('sum by (le) (rate(h_bucket[5m])) / changes(g[1h]) + max(c)'), [
    { name: 'h_bucket', fn: 'rate' },
    { name: 'g', fn: 'changes' },
    { name: 'c', fn: 'max' },
  ]);
  for (const bad of ['rat(x[5m])', 'sum(rate(x[5m])', 'x)', 'gridsteer_$name', 'x{a="b}', 'sum + x', 'rate(x[5m)']) {
    assert.throws(() => metricRefs(bad), PromqlScanError, `should refuse ${bad}`);
  }
});

test('the check reports a metric /metrics does not export, and a counter function over a gauge', () => {
  const families = metricFamilies(
    ['# HELP gridsteer_dns_queries_total x', '# TYPE gridsteer_dns_queries_total counter', '# TYPE gridsteer_region_share gauge', '# TYPE lat_seconds histogram', '# TYPE q summary', ''].join('\n'),
  );
  const problems = (expr: string) => checkRefs('case', metricRefs(expr), families);
  assert.deepEqual(problems('sum by (rcode) (rate(gridsteer_dns_queries_total[5m]))'), []);
  assert.deepEqual(problems('histogram_quantile(0.9, rate(lat_seconds_bucket[5m])) + rate(lat_seconds_sum[5m]) / rate(lat_seconds_count[5m])'), []);
  assert.deepEqual(problems('rate(q_sum[5m]) / rate(q_count[5m])'), []);
  assert.deepEqual(problems('sum(rate(gridsteer_dns_answers_by_region_total[5m]))'), ['case: gridsteer_dns_answers_by_region_total is not exported by /metrics']);
  assert.deepEqual(problems('rate(q_bucket[5m])'), ['case: q_bucket is not exported by /metrics']);
  assert.deepEqual(problems('rate(gridsteer_region_share[5m])'), ['case: rate() over gridsteer_region_share, a gauge, not a counter']);
  assert.deepEqual(problems('deriv(gridsteer_dns_queries_total[5m])'), ['case: deriv() over gridsteer_dns_queries_total, a counter, not a gauge']);
});

// ---------------------------------------------------------------- the dashboard's shape

test('the dashboard is a Grafana dashboard: variables, titled panels on ${datasource}, PromQL targets', () => {
  assert.equal(typeof dashboard.title, 'string');
  assert.equal(typeof dashboard.uid, 'string');
  assert.ok(typeof dashboard.schemaVersion === 'number' && dashboard.schemaVersion >= 36 && dashboard.schemaVersion <= 41, `schemaVersion ${String(dashboard.schemaVersion)}`);
  assert.ok(panels.length >= 10, `${panels.length} panels`);

  const ds = variables.find((v) => v.name === 'datasource');
  assert.ok(ds, 'a datasource variable');
  assert.equal(ds.type, 'datasource');
  assert.equal(ds.query, 'prometheus');
  const region = variables.find((v) => v.name === 'region');
  assert.ok(region, 'a region variable');
  assert.equal(region.type, 'query');
  assert.ok(isTemplatedDatasource(region.datasource), `region variable datasource ${JSON.stringify(region.datasource)}`);
  assert.match(variableQuery(region), /^label_values\(\s*gridsteer_region_share\s*,\s*region\s*\)$/);
  const varNames = new Set(variables.map((v) => String(v.name)));

  const ids = new Set<unknown>();
  for (const p of panels) {
    const name = JSON.stringify(p.title ?? p.id);
    assert.ok(typeof p.title === 'string' && p.title.trim().length > 0, `panel ${String(p.id)} has a title`);
    assert.ok(typeof p.type === 'string' && p.type !== 'row', `panel ${name}: a visualisation (no rows: every panel queries)`);
    assert.ok(isTemplatedDatasource(p.datasource), `panel ${name}: datasource ${JSON.stringify(p.datasource)}, not ${DATASOURCE}`);
    assert.ok(!ids.has(p.id), `panel ${name}: id ${String(p.id)} is unique`);
    ids.add(p.id);
    const g = obj(p.gridPos);
    assert.ok(['x', 'y', 'w', 'h'].every((k) => typeof g[k] === 'number') && Number(g.x) + Number(g.w) <= 24, `panel ${name}: gridPos ${JSON.stringify(g)}`);
    const targets = arr(p.targets).map(obj);
    assert.ok(targets.length > 0, `panel ${name} has targets`);
    const refIds = new Set<unknown>();
    for (const t of targets) {
      assert.ok(typeof t.expr === 'string' && t.expr.trim().length > 0, `panel ${name}: every target has an expr`);
      assert.ok(typeof t.refId === 'string' && !refIds.has(t.refId), `panel ${name}: refIds present and unique`);
      refIds.add(t.refId);
      if (t.datasource !== undefined) assert.ok(isTemplatedDatasource(t.datasource), `panel ${name} target ${String(t.refId)}: datasource ${JSON.stringify(t.datasource)}`);
    }
  }
  for (const a of annotations) {
    assert.ok(typeof a.name === 'string' && a.name.length > 0, 'every annotation is named');
    assert.ok(isTemplatedDatasource(a.datasource), `annotation ${String(a.name)}: datasource ${JSON.stringify(a.datasource)}`);
  }

  // Every expression scans, selects at least one metric, and uses only defined variables.
  for (const q of dashboardQueries()) {
    assert.ok(metricNames(q.expr).length > 0, `${q.where}: ${q.expr} selects no metric`);
    for (const m of q.expr.matchAll(/\$\{?([a-zA-Z_][a-zA-Z0-9_]*)/g)) {
      const v = m[1]!;
      assert.ok(GRAFANA_BUILTINS.has(v) || varNames.has(v), `${q.where}: $${v} is neither a dashboard variable nor Grafana's`);
    }
  }
});

test('the alert rules are Grafana file provisioning on the Prometheus data source, each linked to a panel charting what it alerts on', () => {
  assert.equal(alertsFile.apiVersion, 1);
  const groups = arr(alertsFile.groups).map(obj);
  assert.ok(groups.length > 0, 'a rule group');
  for (const g of groups) {
    assert.ok(typeof g.name === 'string' && typeof g.folder === 'string', `group ${JSON.stringify(g.name)}: name and folder`);
    assert.match(String(g.interval), /^\d+[sm]$/, `group ${String(g.name)}: interval`);
  }
  assert.ok(alertRules.length >= 1, 'alert rules');
  const uids = new Set<unknown>();
  const readme = readFileSync(join(repoRoot, 'dashboards', 'grafana', 'README.md'), 'utf8');
  for (const r of alertRules) {
    const name = JSON.stringify(r.title);
    assert.ok(typeof r.uid === 'string' && /^[a-zA-Z0-9_-]{1,40}$/.test(r.uid) && !uids.has(r.uid), `rule ${name}: a unique uid of at most 40 characters`);
    uids.add(r.uid);
    assert.ok(typeof r.title === 'string' && readme.includes(r.title), `rule ${name}: titled, and the README says what it is`);
    assert.match(String(r.for), /^\d+[smh]$/, `rule ${name}: for`);
    assert.ok(['warning', 'critical'].includes(String(obj(r.labels).severity)), `rule ${name}: severity warning or critical`);
    assert.ok(String(obj(r.annotations).summary ?? '').length > 0, `rule ${name}: a summary`);
    assert.ok(['OK', 'NoData', 'Alerting', 'KeepLast'].includes(String(r.noDataState)) && ['Error', 'Alerting', 'OK', 'KeepLast'].includes(String(r.execErrState)), `rule ${name}: no-data and error states`);
    const data = arr(r.data).map(obj);
    const refIds = new Set(data.map((q) => q.refId));
    assert.equal(refIds.size, data.length, `rule ${name}: refIds unique`);
    assert.ok(refIds.has(r.condition), `rule ${name}: the condition ${String(r.condition)} is one of its queries`);
    for (const q of data) {
      const m = obj(q.model);
      assert.equal(m.refId, q.refId, `rule ${name} ${String(q.refId)}: the model's refId`);
      if (q.datasourceUid === '__expr__') {
        assert.ok(['threshold', 'reduce', 'math'].includes(String(m.type)), `rule ${name} ${String(q.refId)}: an expression type`);
        if (m.type !== 'math') assert.ok(refIds.has(m.expression), `rule ${name} ${String(q.refId)}: its input ${String(m.expression)} is one of its queries`);
      } else {
        assert.equal(q.datasourceUid, ALERT_DATASOURCE, `rule ${name} ${String(q.refId)}: the Prometheus data source from the environment`);
        assert.equal(m.instant, true, `rule ${name} ${String(q.refId)}: an instant query (one value per series)`);
        assert.ok(metricNames(String(m.expr)).length > 0, `rule ${name} ${String(q.refId)}: ${String(m.expr)} selects a metric`);
      }
    }
    // The panel it links to is on this dashboard and charts every metric the rule queries.
    const a = obj(r.annotations);
    assert.equal(a.__dashboardUid__, dashboard.uid, `rule ${name}: links to this dashboard`);
    const panel = panels.find((p) => String(p.id) === String(a.__panelId__));
    assert.ok(panel, `rule ${name}: panel ${String(a.__panelId__)} exists`);
    const charted = new Set(arr(panel.targets).flatMap((t) => metricNames(String(obj(t).expr ?? ''))));
    for (const q of alertQueries().filter((x) => x.rule === r)) {
      for (const m of metricNames(q.expr)) assert.ok(charted.has(m), `rule ${name}: panel ${JSON.stringify(panel.title)} charts ${m}`);
    }
  }
});

// ---------------------------------------------------------------- against a running server

let cfg: TestConfig;
let srv: RunningServer;
let gw: DrainGateway;

before(async () => {
  gw = await startDrainGateway();
  cfg = writeTestConfig((c) => {
    c.regionsDir = 'regions-hooked';
  });
  // The example fleet with a drain hook on us-va, so that the hook metrics are exported.
  const dir = join(cfg.dir, 'regions-hooked');
  cpSync(exampleRegions, dir, { recursive: true });
  const va = parse(readFileSync(join(dir, 'us-va.yaml'), 'utf8')) as Record<string, unknown>;
  va.drainHook = { url: gw.url, timeoutMs: 1000, retries: 1, retryBaseMs: 50 };
  writeFileSync(join(dir, 'us-va.yaml'), stringify(va));
  srv = await spawnServer({ configFile: cfg.file });
});

after(async () => {
  await srv?.stop();
  await gw?.close();
  cfg?.cleanup();
});

/** GET /metrics, bounded: the raw text (for the # TYPE lines) and its samples. */
async function scrapeText(): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`${srv.http}/metrics`, { signal: AbortSignal.timeout(10000) });
  const text = await res.text();
  assert.equal(res.status, 200, `GET /metrics: ${res.status} ${text.slice(0, 300)}`);
  return { text, samples: parsePrometheus(text) };
}

test('every metric the dashboard queries is exported by a running server, and every GridSteer metric is charted', async () => {
  // Traffic for the DNS counters: steered A and AAAA, a static TXT, and one malformed packet (QDCOUNT 2).
  for (const qtype of ['A', 'AAAA', 'A'] as const) assert.equal((await askSteered(srv.udp, qtype)).status, 'NOERROR');
  assert.equal((await dig(srv.udp, ['status.gslb.example.com', 'TXT'])).msg.status, 'NOERROR');
  const formerr = await udpExchange(srv.udp, buildQuery({ name: 'api.gslb.example.com', qtype: QTYPE.A, edns: false, qdcountOverride: 2 }));
  assert.ok(formerr, 'the malformed query is answered (FORMERR)');

  // The hook runner tells us-va its state at start: wait (bounded: 50 × 100 ms) for its 2xx to show.
  const LAST_OK = 'gridsteer_drain_hook_last_success_timestamp_seconds';
  let scraped = await scrapeText();
  for (let i = 0; i < 50 && !hasMetric(scraped.samples, LAST_OK); i++) {
    await sleep(100);
    scraped = await scrapeText();
  }
  const { text, samples } = scraped;
  const families = metricFamilies(text);

  // The series this test caused are there (so the families below are not declared-but-dead).
  for (const name of [QUERIES, MALFORMED, 'gridsteer_region_share', 'gridsteer_store_stale', 'gridsteer_store_clock_skew_seconds', 'gridsteer_drain_hook_calls_total', LAST_OK]) {
    assert.ok(hasMetric(samples, name), `${name} has samples\n${describeMetric(samples, name)}\ngateway calls: ${gw.calls.length}`);
  }

  const problems = [...dashboardRefs(), ...alertQueries().map((q) => ({ where: q.where, refs: metricRefs(q.expr) }))].flatMap((q) => checkRefs(q.where, q.refs, families));
  assert.deepEqual(problems, [], `the dashboard queries what /metrics does not export:\n${problems.join('\n')}\nexported: ${[...families.keys()].filter((f) => f.startsWith('gridsteer_')).join(' ')}`);

  // The other way: a GridSteer metric added to /metrics gets a panel (Node's defaults are optional).
  const familyOf = (name: string) => (families.has(name) ? name : name.replace(/_(bucket|sum|count)$/, ''));
  const charted = new Set(dashboardRefs().flatMap((q) => q.refs.map((r) => familyOf(r.name))));
  const uncharted = [...families.keys()].filter((f) => f.startsWith('gridsteer_') && !/^gridsteer_(process|nodejs)_/.test(f) && !charted.has(f));
  assert.deepEqual(uncharted, [], `exported by /metrics but on no panel of ${DASHBOARD_FILE}: ${uncharted.join(', ')}`);
});
