/**
 * MQTT end to end (issue 5): a running server whose mqtt collector subscribes to a real
 * Mosquitto (spawned on a free loopback port). Virginia's site controller publishes its
 * power budget as JSON; when the grid import limit drops to zero with no generation, the
 * planner caps us-va at 0 (power budget below the site's full load) and dig's answer moves
 * to us-tx; explain shows why. When the limit comes back, so does us-va.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { parse, stringify } from 'yaml';
import { askSteered } from './helpers/geo.js';
import { sleep } from './helpers/net.js';
import { exampleRegions } from './helpers/paths.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';
import { TestBroker } from '../collectors/mqtt/test-broker.js';

const TOPIC = 'sites/va-campus/power';
let broker: TestBroker;
let cfg: TestConfig;
let srv: RunningServer;
let pub: mqtt.MqttClient;

before(async () => {
  broker = await TestBroker.create();
  cfg = writeTestConfig((c) => {
    c.regionsDir = 'fleet';
    c.collectors = {
      mqtt: {
        broker: { url: broker.url },
        expireMs: 60_000,
        sites: [{ region: 'us-va', topic: TOPIC, metrics: { importLimitW: 'grid.importLimitKw', generationW: 'pv.kw' }, scale: { importLimitW: 1000, generationW: 1000 } }],
      },
    };
  });
  // The example fleet, with Virginia's full-load draw known (10 MW): a budget below it caps us-va.
  const fleet = join(cfg.dir, 'fleet');
  rmSync(fleet, { recursive: true, force: true });
  cpSync(exampleRegions, fleet, { recursive: true, dereference: true });
  const va = parse(readFileSync(join(fleet, 'us-va.yaml'), 'utf8')) as { power: Record<string, unknown> };
  va.power = { ...va.power, fullLoadW: 10_000_000 };
  writeFileSync(join(fleet, 'us-va.yaml'), stringify(va));
  srv = await spawnServer({ configFile: cfg.file });
  pub = await mqtt.connectAsync(broker.url, { clientId: 'site-controller', reconnectPeriod: 0, connectTimeout: 5000 });
});

after(async () => {
  await pub?.endAsync().catch(() => undefined);
  await srv?.stop();
  await broker?.stop();
  cfg?.cleanup();
});

async function publish(importKw: number, pvKw: number): Promise<void> {
  await pub.publishAsync(TOPIC, JSON.stringify({ timestamp: Date.now(), grid: { importLimitKw: importKw }, pv: { kw: pvKw } }), { qos: 1 });
}

async function waitRegion(want: string, what: string, republish: () => Promise<void>): Promise<number> {
  const t0 = Date.now();
  let last = '';
  for (let i = 0; i < 60; i++) {
    // The collector may still be connecting when the first message goes out: publish again now and then.
    if (i % 10 === 0) await republish();
    const r = await askSteered(srv.udp, 'A');
    if (r.region === want) return Date.now() - t0;
    last = r.region;
    await sleep(200);
  }
  assert.fail(`${what}: the answer stayed ${last}, not ${want}\n${srv.logs.filter((l) => /mqtt|state|collectors/.test(l)).slice(-10).join('\n')}`);
}

test('a site with 12 MW of grid import: us-va answers', async () => {
  await waitRegion('us-va', 'with power', () => publish(12_000, 0));
});

test('the site loses its grid import and has no generation: us-va is capped at 0 and the answer moves; it comes back with the power', async (t) => {
  const ms = await waitRegion('us-tx', 'after the power drop', () => publish(0, 0));
  t.diagnostic(`dig answered us-tx ${ms} ms after the power drop was published`);
  const res = await fetch(`${srv.http}/v1/explain?client=127.0.0.1&name=api.gslb.example.com`);
  const body = (await res.json()) as { planStep: { reasons: string[] } };
  assert.ok(body.planStep.reasons.some((r) => /us-va: power: 0 W available of 10000000 W at full load \(mqtt\/sites\/va-campus\/power\) → cap 0/.test(r)), JSON.stringify(body.planStep));
  // 4 MW import + 2 MW of PV: 0.6 of full load. The default-location client's draw decides
  // at 0.6, so bring it all back (12 MW) to see us-va answer again for certain.
  const back = await waitRegion('us-va', 'after the power came back', () => publish(12_000, 0));
  t.diagnostic(`us-va answered again ${back} ms after the power came back`);
});
