/**
 * OpenADR 3 end to end (issue 5): a running server whose openadr3 collector polls a VTN on
 * loopback (built from the OpenADR 3.0.1 definitions: collectors/openadr3/test-vtn.ts). A
 * SIMPLE level 3 event for us-va's site, in force now, drains us-va through gridPolicy's
 * rule openadr-simple-3: dig's answer moves to us-tx, and `gridsteer explain` (and
 * GET /v1/explain) name the rule. Cancelling the event at the VTN brings us-va back.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { askSteered } from './helpers/geo.js';
import { sleep } from './helpers/net.js';
import { cliPath } from './helpers/paths.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';
import { TestVtn } from '../collectors/openadr3/test-vtn.js';

let vtn: TestVtn;
let cfg: TestConfig;
let srv: RunningServer;

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function simpleEvent(id: string, start: number, level: number): unknown {
  return {
    id,
    createdDateTime: iso(start - 60_000),
    modificationDateTime: iso(start - 60_000),
    objectType: 'EVENT',
    programID: 'prog-dr-a',
    eventName: 'shed site VA',
    priority: 1,
    targets: [{ type: 'RESOURCE_NAME', values: ['site-va'] }],
    payloadDescriptors: [{ objectType: 'EVENT_PAYLOAD_DESCRIPTOR', payloadType: 'SIMPLE', units: null, currency: null }],
    intervalPeriod: null,
    intervals: [{ id: 0, intervalPeriod: { start: iso(start), duration: 'PT1H' }, payloads: [{ type: 'SIMPLE', values: [level] }] }],
  };
}

before(async () => {
  vtn = await new TestVtn('3.0.1').start();
  vtn.programs = [
    {
      id: 'prog-dr-a',
      createdDateTime: '2026-01-10T09:00:00Z',
      modificationDateTime: '2026-01-10T09:00:00Z',
      objectType: 'PROGRAM',
      programName: 'dr-program-a',
      payloadDescriptors: [{ objectType: 'EVENT_PAYLOAD_DESCRIPTOR', payloadType: 'SIMPLE', units: null, currency: null }],
      targets: null,
    },
  ];
  vtn.events = [];
  cfg = writeTestConfig((c) => {
    c.collectors = {
      openadr3: {
        vtn: { url: vtn.url, clientId: vtn.clientId, clientSecret: vtn.clientSecret },
        pollMs: 1000,
        timeoutMs: 900,
        regions: [{ region: 'us-va', targets: [{ type: 'RESOURCE_NAME', values: ['site-va'] }] }],
      },
    };
    // A cancelled event restores after policy.drain.holdMs and over restoreMs (ADR 0007;
    // 2 + 5 minutes by default): none here, so the cancel is seen in dig within the test.
    c.policy = { ...(c.policy as Record<string, unknown>), drain: { holdMs: 0, restoreMs: 0 } };
  });
  srv = await spawnServer({ configFile: cfg.file });
});

after(async () => {
  await srv?.stop();
  await vtn?.close();
  cfg?.cleanup();
});

async function waitRegion(want: string, what: string): Promise<number> {
  const t0 = Date.now();
  let last = '';
  for (let i = 0; i < 60; i++) {
    const r = await askSteered(srv.udp, 'A');
    if (r.region === want) return Date.now() - t0;
    last = r.region;
    await sleep(200);
  }
  assert.fail(`${what}: the answer stayed ${last}, not ${want}\n${srv.logs.filter((l) => /openadr3|state|collectors/.test(l)).slice(-10).join('\n')}`);
}

test('without events: us-va answers, and the collector polls the VTN (it holds the lease)', async () => {
  await waitRegion('us-va', 'at start');
  for (let i = 0; i < 50 && vtn.count('/events') === 0; i++) await sleep(100);
  assert.ok(vtn.count('/events') > 0, 'the VTN was polled');
});

test('a SIMPLE level 3 event in force drains us-va (rule openadr-simple-3); explain names the rule; cancelling it restores us-va', async (t) => {
  vtn.events = [simpleEvent('evt-va-3', Date.now() - 60_000, 3)];
  const ms = await waitRegion('us-tx', 'after the SIMPLE 3 event');
  t.diagnostic(`dig answered us-tx ${ms} ms after the event appeared at the VTN (polled every 1 s)`);

  const res = await fetch(`${srv.http}/v1/explain?client=127.0.0.1&name=api.gslb.example.com`);
  const body = (await res.json()) as { planStep: { reasons: string[] }; answer: { region: string } };
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.answer.region, 'us-tx');
  assert.ok(
    body.planStep.reasons.some((r) => /us-va: rule openadr-simple-3 \(grid event evt-va-3\/0 from openadr3\/127\.0\.0\.1:\d+ by collector:openadr3: simple level 3/.test(r)),
    JSON.stringify(body.planStep),
  );
  const cli = await promisify(execFile)(process.execPath, [cliPath, 'explain', '127.0.0.1', 'api.gslb.example.com', '--server', srv.http], { timeout: 20000 });
  assert.match(cli.stdout, /openadr-simple-3/, cli.stdout);

  vtn.events = [];
  const back = await waitRegion('us-va', 'after the event was withdrawn at the VTN');
  t.diagnostic(`us-va answered again ${back} ms after the event disappeared (reported cancelled)`);
});
