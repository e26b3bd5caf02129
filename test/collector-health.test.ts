/**
 * The health collector end to end (issue 5): a running server whose two regions' endpoints
 * are loopback addresses with real HTTP servers behind them. When the nearer region's model
 * server stops, its probes fail, the anti-flap threshold (fall 3) takes it down, and dig's
 * answer moves to the other region; when it answers again (rise 2), the answer comes back.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { dig } from './helpers/dig.js';
import { sleep } from './helpers/net.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';

let cfg: TestConfig;
let srv: RunningServer;
let port = 0;
const servers = new Map<string, http.Server>();

function startModelServer(host: string): Promise<void> {
  const s = http.createServer((_req, res) => res.end('ok'));
  servers.set(host, s);
  return new Promise((resolve) => s.listen(port, host, () => {
    port = (s.address() as net.AddressInfo).port;
    resolve();
  }));
}

function stopModelServer(host: string): Promise<void> {
  const s = servers.get(host)!;
  servers.delete(host);
  s.closeAllConnections();
  return new Promise((resolve) => s.close(() => resolve()));
}

before(async () => {
  await startModelServer('127.0.0.2');
  await startModelServer('127.0.0.3');
  cfg = writeTestConfig((c) => {
    c.regionsDir = 'fleet';
    // Slow start over 2 s in 1 s steps, so the comeback is seen within the test's bound.
    c.policy = { ...(c.policy as object), defaultLocation: { lat: 40, lon: -75 }, health: { slowStartMs: 2000 }, rampStepMs: 1000 };
    c.collectors = { health: { intervalMs: 500, timeoutMs: 400, checks: [{ type: 'http', port, path: '/health' }] } };
  });
  const fleet = join(cfg.dir, 'fleet');
  rmSync(fleet, { recursive: true, force: true });
  mkdirSync(fleet);
  const region = (id: string, lat: number, lon: number, address: string) =>
    writeFileSync(join(fleet, `${id}.yaml`), stringify({ id, name: id, location: { lat, lon, country: 'US' }, endpoints: [{ address }] }));
  region('near', 40.7, -74.0, '127.0.0.2');
  region('far', 41.9, -87.6, '127.0.0.3');
  srv = await spawnServer({ configFile: cfg.file });
});

after(async () => {
  await srv?.stop();
  for (const h of [...servers.keys()]) await stopModelServer(h);
  cfg?.cleanup();
});

async function answer(): Promise<string> {
  const r = await dig(srv.udp, ['api.gslb.example.com', 'A']);
  return r.msg.answer.filter((rr) => rr.type === 'A').map((rr) => rr.data).join(',') || r.msg.status;
}

async function waitAnswer(want: string, what: string): Promise<number> {
  const t0 = Date.now();
  let last = '';
  for (let i = 0; i < 60; i++) {
    last = await answer();
    if (last === want) return Date.now() - t0;
    await sleep(200);
  }
  assert.fail(`${what}: the answer stayed ${last}, not ${want}\n${srv.logs.filter((l) => /collectors|state/.test(l)).slice(-10).join('\n')}`);
}

test('both model servers up: the nearer region answers', async () => {
  await waitAnswer('127.0.0.2', 'at start');
  // Wait until a probe of near is stored: without one a region is up by default, and the first
  // probe sets an endpoint's state at once, so stopping near before any probe would take it down
  // on one failure, not three (a slow start made the next test see that).
  for (let i = 0; i < 100; i++) {
    const r = (await (await fetch(`${srv.http}/v1/regions/near`, { signal: AbortSignal.timeout(5000) })).json()) as { signals: { kind: string; value: { up?: boolean } }[] };
    if (r.signals.some((x) => x.kind === 'health.probe' && x.value.up === true)) return;
    await sleep(100);
  }
  assert.fail('no probe of near was stored within 10 s');
});

test('the nearer model server stops: after three failed probes the answer moves; it comes back after two good ones', async (t) => {
  await stopModelServer('127.0.0.2');
  const down = await waitAnswer('127.0.0.3', 'after near stopped');
  t.diagnostic(`answer moved ${down} ms after the model server stopped (probes every 500 ms, fall 3)`);
  const plan = (await (await fetch(`${srv.http}/v1/plan`)).json()) as { regions: Record<string, { at: number; down: boolean; reasons: string[] }[]> };
  // The step in force now (later steps are the schedule: e.g. the probes' expiry).
  const now = plan.regions.near?.filter((x) => x.at <= Date.now()).at(-1);
  assert.ok(now?.down, JSON.stringify(plan.regions.near));
  assert.ok(now.reasons.some((r) => /every probed endpoint failed/.test(r)), JSON.stringify(now.reasons));
  assert.ok(srv.logs.some((l) => /near 127\.0\.0\.2 fails/.test(l)), 'the collector logged the failure');
  const metrics = await (await fetch(`${srv.http}/metrics`)).text();
  const failures = /^gridsteer_collector_events_total\{collector="health",event="failures"\} (\d+)/m.exec(metrics);
  assert.ok(failures && Number(failures[1]) >= 3, `the failed probes are counted in /metrics: ${metrics.split('\n').filter((l) => /collector/.test(l)).join('\n')}`);
  assert.match(metrics, /^gridsteer_collector_signals_total\{collector="health",outcome="stored"\} [1-9]/m);
  await startModelServer('127.0.0.2');
  const up = await waitAnswer('127.0.0.2', 'after near came back');
  t.diagnostic(`answer came back ${up} ms after the model server restarted (rise 2)`);
});

test("the collector's facts carry its section as principal and its own prefix as grant (ADR 0021), on this node as on any", async () => {
  let probes: { source: string; principal?: string; grant?: string }[] = [];
  for (let i = 0; i < 50 && probes.length === 0; i++) {
    const r = await fetch(`${srv.http}/v1/regions/far`, { signal: AbortSignal.timeout(5000) });
    probes = ((await r.json()) as { signals: { kind: string; source: string; principal?: string; grant?: string }[] }).signals.filter((s) => s.kind === 'health.probe');
    if (probes.length === 0) await sleep(100);
  }
  assert.ok(probes.length > 0, 'the health collector stored probes of far');
  for (const p of probes) {
    assert.match(p.source, /^health\//);
    assert.deepEqual([p.principal, p.grant], ['collector:health', 'health/']);
  }
});
