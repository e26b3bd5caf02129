/**
 * The mqtt collector against a real Mosquitto on a free loopback port (its own process and
 * config, see test-broker.ts): Sparkplug B births, alias-only data, deaths; plain JSON;
 * hostile payloads; the broker killed and restarted; a refused password. Every emitted
 * signal must pass the state layer's own validation.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import mqtt, { type MqttClient } from 'mqtt';
import pino from 'pino';
import { Value } from '@sinclair/typebox/value';
import { mqttCollector, MqttConfigSchema, mqttTotals as mqttStats, MqttRun, type MqttConfig } from './index.js';
import { encodePayload, DataType, type SparkplugMetric } from './sparkplug.js';
import { TestBroker } from './test-broker.js';
import type { CollectorContext } from '../types.js';
import type { Signal } from '../../gslb/model/types.js';
import { validateSignal } from '../../gslb/state/signals.js';

const fixtures = fileURLToPath(new URL('../../../collectors/mqtt/fixtures/', import.meta.url));
const fixture = (name: string): Buffer => Buffer.from(readFileSync(fixtures + name, 'utf8').trim(), 'hex');
const T0 = 1796000000000;
const REGIONS = new Set(['us-va', 'eu-west', 'ap-tyo']);

let broker: TestBroker;
let pub: MqttClient;

before(async () => {
  broker = await TestBroker.create();
  pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 100, connectTimeout: 2000, clientId: 'gs-test-publisher' });
});

after(async () => {
  await pub?.endAsync(true);
  await broker?.close();
});

interface Harness {
  ctx: CollectorContext<MqttConfig>;
  emitted: Signal[];
  invalid: string[];
  logs: string[];
  abort: AbortController;
  /** Set to fix the clock; null = Date.now. */
  clock: { t: number | null };
}

function harness(partial: Record<string, unknown>): Harness {
  const config = Value.Default(MqttConfigSchema, structuredClone(partial)) as MqttConfig;
  assert.ok(Value.Check(MqttConfigSchema, config), [...Value.Errors(MqttConfigSchema, config)].map((e) => `${e.path} ${e.message}`).join('; '));
  const emitted: Signal[] = [];
  const invalid: string[] = [];
  const logs: string[] = [];
  const abort = new AbortController();
  const clock = { t: null as number | null };
  const now = () => clock.t ?? Date.now();
  const log = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });
  const ctx: CollectorContext<MqttConfig> = {
    config,
    log,
    now,
    node: 'test-node',
    fleet: () => [...REGIONS].map((id) => ({ id, endpoints: ['192.0.2.1'] })),
    signal: abort.signal,
    emit: (s) => {
      try {
        validateSignal(structuredClone(s), now(), REGIONS);
      } catch (e) {
        invalid.push(`${JSON.stringify(s)}: ${(e as Error).message}`);
      }
      emitted.push(s);
    },
  };
  return { ctx, emitted, invalid, logs, abort, clock };
}

async function until(fn: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`${what}: not within ${ms} ms`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const count = (logs: string[], re: RegExp) => logs.filter((l) => re.test(l)).length;
const budget = (s: Signal | undefined) => s?.value as Record<string, number>;

/** Starts the collector and waits until it has subscribed `times` times in all. */
async function started(h: Harness, times = 1): Promise<() => Promise<void>> {
  const stop = await mqttCollector.start(h.ctx);
  await until(() => count(h.logs, /subscribed to \d+ topic filters/) >= times, 'subscription');
  return stop;
}

async function publish(topic: string, payload: Uint8Array | string, retain = false): Promise<void> {
  await pub.publishAsync(topic, Buffer.from(payload as Uint8Array), { qos: 1, retain });
}

/** Waits until the stat moved by `by` from `before` (the message was handled). */
async function handled(stat: keyof typeof mqttStats, before: number, by = 1): Promise<void> {
  await until(() => mqttStats[stat] >= before + by, `mqttStats.${stat} +${by}`);
}

const SP = 'spBv1.0/site-power';
const spConfig = (broker: TestBroker, extra: Record<string, unknown> = {}) => ({
  broker: { url: broker.url, reconnectMs: 200, connectTimeoutMs: 1000 },
  expireMs: 60000,
  sparkplugHold: false,
  sites: [
    {
      region: 'us-va',
      sparkplug: { group: 'site-power', edge: 'va-campus-gw', device: 'meter-1' },
      metrics: { importLimitW: 'Grid/ImportLimitW', generationW: 'PV/GenerationW', socPercent: 'DER/713/SoC', storageMaxW: 'Inverter/WMaxDis', drawW: 'Site/DrawW' },
      storageCapacityWh: 8e6,
    },
    { region: 'us-va', sparkplug: { group: 'site-power', edge: 'va-campus-gw' }, metrics: { importLimitW: 'Site/ImportLimit' }, scale: { importLimitW: 1000 } },
  ],
  ...extra,
});

test('Sparkplug B: births teach aliases, alias-only data moves the budget, hostile payloads and deaths emit nothing', async () => {
  const h = harness(spConfig(broker));
  h.clock.t = T0 + 10_000;
  const stop = await started(h);
  try {
    // Data before any BIRTH: its aliases are unknown, ignored and counted.
    let n = mqttStats.beforeBirth;
    await publish(`${SP}/DDATA/va-campus-gw/meter-1`, fixture('ddata-aliases.hex'));
    await handled('beforeBirth', n);
    assert.equal(h.emitted.length, 0);

    await publish(`${SP}/NBIRTH/va-campus-gw`, fixture('nbirth.hex'));
    await until(() => h.emitted.length === 1, 'NBIRTH → the node site');
    assert.deepEqual(h.emitted[0], {
      region: 'us-va',
      kind: 'power.budget',
      source: 'mqtt/site-power',
      key: 'va-campus-gw',
      observedAt: T0,
      expiresAt: T0 + 60000,
      value: { importLimitW: 20000 },
    });

    await publish(`${SP}/DBIRTH/va-campus-gw/meter-1`, fixture('dbirth.hex'));
    await until(() => h.emitted.length === 2, 'DBIRTH → the device site');
    assert.deepEqual(h.emitted[1], {
      region: 'us-va',
      kind: 'power.budget',
      source: 'mqtt/site-power',
      key: 'va-campus-gw/meter-1',
      observedAt: T0 + 100,
      expiresAt: T0 + 100 + 60000,
      value: { importLimitW: 12e6, generationW: 3.5e6, storageWh: 6.4e6, storageMaxW: 2e6, drawW: 9e6 },
    });

    // DDATA with aliases only: the import limit drops.
    await publish(`${SP}/DDATA/va-campus-gw/meter-1`, fixture('ddata-aliases.hex'));
    await until(() => h.emitted.length === 3, 'DDATA → a new budget');
    assert.equal(h.emitted[2]!.observedAt, T0 + 5000);
    assert.deepEqual(budget(h.emitted[2]), { importLimitW: 8e6, generationW: 3.5e6, storageWh: 6.4e6, storageMaxW: 2e6, drawW: 9e6 });

    // Alias-only data without datatypes (read with the BIRTH's): SoC as Float, draw as Int64.
    const ddata = (metrics: SparkplugMetric[], ts = T0 + 6000) => encodePayload({ timestamp: ts, seq: 3, metrics });
    await publish(`${SP}/DDATA/va-campus-gw/meter-1`, ddata([{ alias: 12, value: { type: 'float', value: 50 } }, { alias: 14, value: { type: 'long', value: 7_000_000n } }]));
    await until(() => h.emitted.length === 4, 'DDATA without datatypes');
    assert.deepEqual(budget(h.emitted[3]), { importLimitW: 8e6, generationW: 3.5e6, storageWh: 4e6, storageMaxW: 2e6, drawW: 7e6 });

    // The same values again: nothing new to say (the renewal is expireMs / 4 away).
    n = mqttStats.unchanged;
    await publish(`${SP}/DDATA/va-campus-gw/meter-1`, ddata([{ alias: 12, value: { type: 'float', value: 50 } }]));
    await handled('unchanged', n);
    // An alias the BIRTH did not declare, and one it declared but no site maps.
    n = mqttStats.unknownAlias;
    await publish(`${SP}/DDATA/va-campus-gw/meter-1`, ddata([{ alias: 99, value: { type: 'double', value: 1 } }, { alias: 16, datatype: DataType.Int32, value: { type: 'int', value: 5 } }]));
    await handled('unknownAlias', n);
    assert.equal(count(h.logs, /uses alias 99, which its BIRTH did not declare/), 1);

    // Wrong types and negative values: refused whole, logged once per change, nothing emitted.
    n = mqttStats.rejected;
    const bad = [
      ddata([{ alias: 14, datatype: DataType.Int64, value: { type: 'long', value: -1n } }, { alias: 10, value: { type: 'double', value: 1 } }]),
      ddata([{ alias: 10, value: { type: 'string', value: '8000000' } }]),
      ddata([{ alias: 10, value: { type: 'boolean', value: true } }]),
      ddata([{ alias: 10, value: { type: 'double', value: NaN } }]),
    ];
    for (const b of bad) await publish(`${SP}/DDATA/va-campus-gw/meter-1`, b);
    await handled('rejected', n, bad.length);
    assert.equal(count(h.logs, /a message was refused: DDATA of site-power\/va-campus-gw\/meter-1: .*MQTT_ERR_VALUE/), 1, 'logged once');
    // Hostile bytes: random, truncated protobuf, JSON on a Sparkplug topic.
    n = mqttStats.malformed;
    const dbirth = fixture('dbirth.hex');
    const hostile = [Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), dbirth.subarray(0, dbirth.length - 3), Buffer.from('{"importLimitW":1}')];
    for (const b of hostile) await publish(`${SP}/DDATA/va-campus-gw/meter-1`, b);
    await handled('malformed', n, hostile.length);
    assert.equal(count(h.logs, /"level":40.*MQTT_ERR_PB_/), 0, 'still failing: not logged again');
    assert.equal(count(h.logs, /"level":20.*refused again.*MQTT_ERR_PB_/), 3, 'only at debug');
    assert.equal(h.emitted.length, 4, 'nothing emitted for what failed');
    // A good message again: logged once, emitted.
    await publish(`${SP}/DDATA/va-campus-gw/meter-1`, ddata([{ alias: 10, value: { type: 'double', value: 6e6 } }], T0 + 7000));
    await until(() => h.emitted.length === 5, 'good data after bad');
    assert.equal(budget(h.emitted[4]).importLimitW, 6e6);
    assert.equal(count(h.logs, /sites\[0\] .* reads again/), 1);
    // Historical values (store and forward) are not the present: skipped. is_null: the field is no longer known.
    n = mqttStats.historical;
    await publish(`${SP}/DDATA/va-campus-gw/meter-1`, ddata([{ alias: 10, isHistorical: true, value: { type: 'double', value: 1 } }], T0 + 7200));
    await handled('historical', n);
    await publish(`${SP}/DDATA/va-campus-gw/meter-1`, ddata([{ alias: 13, isNull: true }], T0 + 7500));
    await until(() => h.emitted.length === 6, 'is_null');
    assert.deepEqual(budget(h.emitted[5]), { importLimitW: 6e6, generationW: 3.5e6, storageWh: 4e6, drawW: 7e6 });

    // DDEATH: the device's facts are no longer known; its data is ignored until the next DBIRTH.
    await publish(`${SP}/DDEATH/va-campus-gw/meter-1`, fixture('ddeath.hex'));
    await until(() => count(h.logs, /DDEATH of site-power\/va-campus-gw\/meter-1: its facts about us-va are no longer known/) === 1, 'DDEATH logged');
    n = mqttStats.beforeBirth;
    await publish(`${SP}/DDATA/va-campus-gw/meter-1`, fixture('ddata-aliases.hex'));
    await handled('beforeBirth', n);

    // An NDEATH from an earlier session (bdSeq 2, the NBIRTH said 3) is ignored; the right one ends the node.
    n = mqttStats.staleDeaths;
    await publish(`${SP}/NDEATH/va-campus-gw`, encodePayload({ metrics: [{ name: 'bdSeq', datatype: DataType.UInt64, value: { type: 'long', value: 2n } }] }));
    await handled('staleDeaths', n);
    await publish(`${SP}/NDATA/va-campus-gw`, encodePayload({ timestamp: T0 + 8000, metrics: [{ alias: 2, value: { type: 'float', value: 18 } }] }));
    await until(() => h.emitted.length === 7, 'the node lives on');
    assert.deepEqual(h.emitted[6]!.value, { importLimitW: 18000 });
    await publish(`${SP}/NDEATH/va-campus-gw`, fixture('ndeath.hex'));
    await until(() => count(h.logs, /NDEATH of site-power\/va-campus-gw: its facts about us-va are no longer known/) === 1, 'NDEATH logged');
    n = mqttStats.beforeBirth;
    await publish(`${SP}/NDATA/va-campus-gw`, encodePayload({ timestamp: T0 + 9000, metrics: [{ alias: 2, value: { type: 'float', value: 17 } }] }));
    await handled('beforeBirth', n);
    assert.equal(h.emitted.length, 7, 'nothing after the deaths');

    // Born again: the budget is emitted at once, even with the values it had before.
    await publish(`${SP}/NBIRTH/va-campus-gw`, fixture('nbirth.hex'));
    await until(() => h.emitted.length === 8, 'NBIRTH again');
    assert.deepEqual(h.emitted[7]!.value, { importLimitW: 20000 });
    assert.equal(h.emitted[7]!.observedAt, T0 + 8000, 'observedAt never goes back for a site');
  } finally {
    h.abort.abort();
    await stop();
  }
  assert.deepEqual(h.invalid, []);
  assert.equal(count(h.logs, /internal error/), 0);
});

test('plain JSON topics: mapped fields, wrong types, timestamps, retained messages, oversize', async () => {
  const topic = 'sites/ams-1/telemetry';
  const site = (t: string, region = 'eu-west') => ({
    region,
    topic: t,
    timestampField: 'ts',
    metrics: { importLimitW: 'site.importLimitKw', generationW: 'pv.powerKw', socPercent: 'bess.socPct', storageMaxW: 'bess.maxDischargeKw', drawW: 'site.loadKw' },
    scale: { importLimitW: 1000, generationW: 1000, storageMaxW: 1000, drawW: 1000 },
    storageCapacityWh: 4e6,
  });
  const ts = Date.parse('2026-11-30T00:00:03Z');
  // Retained before the collector starts: one without a timestamp (any age), one recent.
  await publish('sites/old/telemetry', JSON.stringify({ site: { loadKw: 1 } }), true);
  await publish('sites/fresh/telemetry', JSON.stringify({ ts: new Date(ts - 1000).toISOString(), site: { loadKw: 2 } }), true);
  const h = harness({
    broker: { url: broker.url, protocolVersion: 4, reconnectMs: 200 },
    sites: [site(topic), site('sites/old/telemetry', 'ap-tyo'), site('sites/fresh/telemetry', 'ap-tyo')],
  });
  h.clock.t = ts + 2000;
  const retainedBefore = mqttStats.retainedSkipped;
  const stop = await started(h);
  try {
    await until(() => h.emitted.length === 1 && mqttStats.retainedSkipped === retainedBefore + 1, 'retained: the recent one emitted, the undated one skipped');
    assert.deepEqual(h.emitted[0], { region: 'ap-tyo', kind: 'power.budget', source: 'mqtt/sites/fresh/telemetry', key: 'sites/fresh/telemetry', observedAt: ts - 1000, expiresAt: ts - 1000 + 60000, value: { drawW: 2000 } });

    await publish(topic, readFileSync(fixtures + 'site-telemetry.json'));
    await until(() => h.emitted.length === 2, 'the fixture');
    assert.deepEqual(h.emitted[1], {
      region: 'eu-west',
      kind: 'power.budget',
      source: 'mqtt/sites/ams-1/telemetry',
      key: topic,
      observedAt: ts,
      expiresAt: ts + 60000,
      value: { importLimitW: 15e6, generationW: 2.2e6, storageWh: 2.58e6, storageMaxW: 2e6, drawW: 11.8e6 },
    });

    // Hostile: wrong types, truncated JSON, not an object, binary, an object nested a million deep.
    let n = mqttStats.messages;
    const hostile = ['{"site":{"importLimitKw":"15000"}}', '{"site":{"loadKw":true}}', '{"site":{"loadKw":-3}}', '{"bess":{"socPct":140}}', '{"site":{"importLimitKw":', '[1,2,3]', '"x"', '\u0000\u0001\u0002', '{"a":' + '['.repeat(1_000_000) + ']'.repeat(1_000_000) + '}'];
    for (const b of hostile) await publish(topic, b);
    await handled('messages', n, hostile.length);
    assert.equal(h.emitted.length, 2, 'nothing emitted for what failed');
    assert.equal(count(h.logs, /"level":40.*MQTT_ERR_VALUE/), 1, 'ok → failing logged once');
    assert.equal(count(h.logs, /"level":40.*MQTT_ERR_JSON/), 0, 'still failing');
    assert.equal(count(h.logs, /refused again/), hostile.length - 2, 'the rest at debug (the deep object maps nothing: not refused)');

    // Partial update, no timestamp: observedAt is now.
    h.clock.t = ts + 3000;
    await publish(topic, JSON.stringify({ site: { loadKw: 12000 } }));
    await until(() => h.emitted.length === 3, 'a partial update');
    assert.equal(h.emitted[2]!.observedAt, ts + 3000);
    assert.equal(budget(h.emitted[2]).drawW, 12e6);
    assert.equal(budget(h.emitted[2]).importLimitW, 15e6, 'absent fields keep their value');
    // A clock an hour ahead: the receive time, logged once.
    await publish(topic, JSON.stringify({ ts: ts + 3_600_000, site: { loadKw: 12100 } }));
    await publish(topic, JSON.stringify({ ts: ts + 3_600_000, site: { loadKw: 12200 } }));
    await until(() => h.emitted.length === 5, 'future timestamps');
    assert.deepEqual(h.emitted.slice(3).map((s) => s.observedAt), [ts + 3000, ts + 3000]);
    assert.equal(count(h.logs, /more than 5 s ahead/), 1);
    // null: the field is no longer known.
    await publish(topic, JSON.stringify({ ts: ts + 2500, site: { importLimitKw: null } }));
    await until(() => h.emitted.length === 6, 'null');
    assert.equal(budget(h.emitted[5]).importLimitW, undefined);
    assert.equal(h.emitted[5]!.observedAt, ts + 3000, 'never before the previous observation');

    // Above 4 MiB (MQTT 3.1.1: the broker sends it; the collector drops it).
    n = mqttStats.oversize;
    await publish(topic, '{"x":"' + 'a'.repeat(4 * 1024 * 1024) + '"}');
    await handled('oversize', n);
    assert.match(h.logs.find((l) => /MQTT_ERR_TOO_LARGE/.test(l)) ?? '', /more than 4194304/);
  } finally {
    h.abort.abort();
    await stop();
  }
  await publish('sites/old/telemetry', '', true);
  await publish('sites/fresh/telemetry', '', true);
  assert.deepEqual(h.invalid, []);
  assert.equal(count(h.logs, /internal error/), 0);
});

test('MQTT 5: the broker is told the 4 MiB bound and never delivers more', async () => {
  const h = harness({ broker: { url: broker.url, reconnectMs: 200 }, sites: [{ region: 'eu-west', topic: 'big/one', metrics: { drawW: 'w' } }] });
  const stop = await started(h);
  try {
    const n = mqttStats.oversize;
    const m = mqttStats.messages;
    await publish('big/one', '{"w":1,"pad":"' + 'a'.repeat(5 * 1024 * 1024) + '"}');
    await publish('big/one', '{"w":2}');
    await until(() => h.emitted.length === 1, 'the small one');
    assert.equal(budget(h.emitted[0]).drawW, 2);
    assert.equal(mqttStats.oversize, n, 'the big one never arrived');
    assert.equal(mqttStats.messages, m + 1);
  } finally {
    await stop();
  }
});

test('broker killed and restarted: loss and return logged once, nothing emitted meanwhile, resumes on the next message', async () => {
  const b = await TestBroker.create();
  const p = await mqtt.connectAsync(b.url, { reconnectPeriod: 100, connectTimeout: 1000 });
  p.on('error', () => undefined);
  const h = harness({
    broker: { url: b.url, reconnectMs: 100, connectTimeoutMs: 1000, keepaliveS: 5 },
    expireMs: 2000,
    sites: [{ region: 'us-va', sparkplug: { group: 'g', edge: 'e' }, metrics: { generationW: 'pv' } }],
  });
  const birth = (w: number) => encodePayload({ timestamp: Date.now(), seq: 0, metrics: [{ name: 'bdSeq', datatype: DataType.UInt64, value: { type: 'long', value: 0n } }, { name: 'pv', alias: 1, datatype: DataType.Double, value: { type: 'double', value: w } }] });
  const stop = await started(h);
  try {
    await p.publishAsync('spBv1.0/g/NBIRTH/e', Buffer.from(birth(100)), { qos: 1 });
    await until(() => h.emitted.length === 1, 'NBIRTH');
    // Sparkplug hold: report by exception sends nothing more, the budget is renewed (every expireMs / 4).
    await until(() => h.emitted.length >= 3, 'renewals while born and connected');
    const r = h.emitted.slice(1, 3);
    assert.ok(r.every((s) => budget(s).generationW === 100 && s.expiresAt - s.observedAt === 2000));
    assert.ok(r[1]!.observedAt - r[0]!.observedAt >= 400, 'about expireMs / 4 apart');

    await b.stop('SIGKILL');
    await until(() => count(h.logs, /lost the broker/) === 1, 'loss logged');
    const during = h.emitted.length;
    await sleep(1200); // many reconnection attempts
    assert.equal(h.emitted.length, during, 'nothing emitted while the broker is gone');
    assert.equal(count(h.logs, /"level":40.*(lost the broker|cannot connect)/), 1, 'the loss is logged once');

    await b.start();
    await until(() => count(h.logs, /connected to .* again/) === 1, 'return logged', 8000);
    await until(() => count(h.logs, /subscribed to \d+ topic filters/) >= 2, 're-subscribed');
    await until(() => p.connected, 'publisher back', 8000);
    // Nothing renewed after the return until the edge node speaks again (a DEATH may have been missed).
    await sleep(700);
    assert.equal(h.emitted.length, during);
    await p.publishAsync('spBv1.0/g/NBIRTH/e', Buffer.from(birth(250)), { qos: 1 });
    await until(() => h.emitted.length === during + 1, 'resumed');
    assert.equal(budget(h.emitted.at(-1)).generationW, 250);
  } finally {
    h.abort.abort();
    await stop();
    await p.endAsync(true);
    await b.close();
  }
  assert.deepEqual(h.invalid, []);
  const n = h.emitted.length;
  await sleep(600);
  assert.equal(h.emitted.length, n, 'nothing after stop');
});

test('a refused password is retried and logged once; the right one connects', async () => {
  const b = await TestBroker.create({ users: { site: 's3cret' } });
  const wrong = harness({ broker: { url: b.url, username: 'site', password: 'nope', reconnectMs: 100 }, sites: [{ region: 'us-va', topic: 't', metrics: { drawW: 'w' } }] });
  const right = harness({ broker: { url: b.url, username: 'site', password: 's3cret', reconnectMs: 100 }, sites: [{ region: 'us-va', topic: 't', metrics: { drawW: 'w' } }] });
  const stopWrong = await mqttCollector.start(wrong.ctx);
  try {
    await until(() => count(wrong.logs, /"level":40.*cannot connect/) === 1, 'refusal logged');
    await until(() => count(wrong.logs, /still cannot connect/) >= 4, 'retried');
    assert.equal(count(wrong.logs, /"level":40.*(cannot connect|lost the broker)/), 1, 'logged once across retries');
    assert.match(wrong.logs.find((l) => /"level":40.*cannot connect/.test(l))!, /Not authorized|Bad User Name or Password/i);
    const stopRight = await started(right);
    await stopRight();
  } finally {
    await stopWrong();
    await b.close();
  }
});

test('mqtts: trusted through caFile; without it the certificate is refused and logged once', async () => {
  const b = await TestBroker.create({ tls: true });
  const site = { region: 'eu-west', topic: 'tls/site', metrics: { drawW: 'w' } };
  const good = harness({ broker: { url: b.url, caFile: b.caFile, reconnectMs: 100 }, sites: [site] });
  const bad = harness({ broker: { url: b.url, reconnectMs: 100 }, sites: [site] });
  const stopGood = await started(good);
  const stopBad = await mqttCollector.start(bad.ctx);
  const p = await mqtt.connectAsync(b.url, { ca: readFileSync(b.caFile), reconnectPeriod: 0, connectTimeout: 2000 });
  try {
    await p.publishAsync('tls/site', '{"w":42}', { qos: 1 });
    await until(() => good.emitted.length === 1, 'a fact over TLS');
    assert.deepEqual(good.emitted[0]!.value, { drawW: 42 });
    await until(() => count(bad.logs, /still cannot connect/) >= 2, 'retried');
    assert.equal(count(bad.logs, /"level":40.*cannot connect/), 1);
    assert.match(bad.logs.find((l) => /"level":40/.test(l))!, /certificate/i);
    assert.equal(bad.emitted.length, 0);
  } finally {
    await p.endAsync(true);
    await stopGood();
    await stopBad();
    await b.close();
  }
  assert.deepEqual(good.invalid, []);
});

test('routing without a broker (MqttRun.handle): unreadable deaths, births and other entities', () => {
  const h = harness(spConfig(broker));
  h.clock.t = T0 + 10_000;
  const run = new MqttRun(h.ctx);
  assert.deepEqual(run.subscriptions().sort(), ['spBv1.0/site-power/+/va-campus-gw', 'spBv1.0/site-power/+/va-campus-gw/meter-1']);
  run.handle(`${SP}/NBIRTH/va-campus-gw`, fixture('nbirth.hex'));
  run.handle(`${SP}/DBIRTH/va-campus-gw/meter-1`, fixture('dbirth.hex'));
  assert.equal(h.emitted.length, 2);
  // Not ours, or not readable as Sparkplug topics: ignored.
  for (const t of [`${SP}/DDATA/va-campus-gw/meter-2`, `${SP}/DDATA/other-gw/meter-1`, `${SP}/NDATA/va-campus-gw/meter-1`, `${SP}/DDATA/va-campus-gw`, `${SP}/NCMD/va-campus-gw`, 'spBv1.0/STATE/host', `${SP}/DDATA/va-campus-gw/meter-1/x`, 'unrelated/topic']) {
    run.handle(t, fixture('ddata-aliases.hex'));
  }
  assert.equal(h.emitted.length, 2);
  // A DDEATH whose payload cannot be read is still a death.
  let n = mqttStats.beforeBirth;
  run.handle(`${SP}/DDEATH/va-campus-gw/meter-1`, Buffer.from([0xff]));
  run.handle(`${SP}/DDATA/va-campus-gw/meter-1`, fixture('ddata-aliases.hex'));
  assert.equal(mqttStats.beforeBirth, n + 1);
  assert.equal(count(h.logs, /DDEATH of .*meter-1: its facts about us-va are no longer known/), 1);
  // A BIRTH that cannot be read ends the session: later data is not read with the old aliases.
  run.handle(`${SP}/DBIRTH/va-campus-gw/meter-1`, fixture('dbirth.hex'));
  assert.equal(h.emitted.length, 3);
  run.handle(`${SP}/NBIRTH/va-campus-gw`, fixture('nbirth.hex').subarray(0, 19));
  n = mqttStats.beforeBirth;
  run.handle(`${SP}/DDATA/va-campus-gw/meter-1`, fixture('ddata-aliases.hex'));
  run.handle(`${SP}/NDATA/va-campus-gw`, encodePayload({ metrics: [{ alias: 2, value: { type: 'float', value: 1 } }] }));
  assert.equal(mqttStats.beforeBirth, n + 2, 'a new NBIRTH ends the devices\' sessions too');
  assert.equal(h.emitted.length, 3);
  assert.deepEqual(h.invalid, []);
});

test('config: refused when it cannot run as given', () => {
  const base = { broker: { url: 'mqtt://127.0.0.1:1' }, sites: [{ region: 'us-va', topic: 't', metrics: { drawW: 'w' } }] };
  type Site = Record<string, unknown>;
  const bad: [string, (s: Site, sites: Site[]) => void, RegExp][] = [
    ['both sparkplug and topic', (s) => (s.sparkplug = { group: 'g', edge: 'e' }), /give either sparkplug or topic/],
    ['neither', (s) => delete s.topic, /give either sparkplug or topic/],
    ['socPercent without capacity', (s) => (s.metrics = { socPercent: 's' }), /needs storageCapacityWh/],
    ['storageWh and socPercent', (s) => Object.assign(s, { metrics: { socPercent: 's', storageWh: 'e' }, storageCapacityWh: 1 }), /not both/],
    ['capacity without socPercent', (s) => (s.storageCapacityWh = 5), /only used with metrics.socPercent/],
    ['scale of an unmapped field', (s) => (s.scale = { importLimitW: 1000 }), /scale.importLimitW: importLimitW is not mapped/],
    ['zero scale', (s) => (s.scale = { drawW: 0 }), /other than 0/],
    ['timestampField on Sparkplug', (s) => Object.assign(s, { topic: undefined, sparkplug: { group: 'g', edge: 'e' }, timestampField: 'ts' }), /only plain topics/],
    ['a Sparkplug topic as a plain one', (s) => (s.topic = 'spBv1.0/g/NDATA/e'), /are Sparkplug B/],
    ['duplicate facts', (s, sites) => sites.push({ ...s }), /sites\[0\] already emits/],
  ];
  assert.throws(() => new MqttRun(harness({ ...base, broker: { url: base.broker.url, caFile: '/nonexistent/ca.pem' } }).ctx), /broker.caFile: cannot read \/nonexistent\/ca.pem/);
  for (const [what, change, re] of bad) {
    const c = structuredClone(base) as { broker: object; sites: Site[] };
    change(c.sites[0]!, c.sites);
    const h = harness(JSON.parse(JSON.stringify(c)));
    assert.throws(() => new MqttRun(h.ctx), re, what);
  }
  // The schema refuses unknown keys, wildcards and URLs with credentials.
  const schemaBad: [string, unknown][] = [
    ['unknown key', { ...base, extra: 1 }],
    ['unknown metric field', { ...base, sites: [{ region: 'us-va', topic: 't', metrics: { powerW: 'w' } }] }],
    ['no metrics', { ...base, sites: [{ region: 'us-va', topic: 't', metrics: {} }] }],
    ['wildcard topic', { ...base, sites: [{ region: 'us-va', topic: 'a/+/b', metrics: { drawW: 'w' } }] }],
    ['wildcard in a Sparkplug id', { ...base, sites: [{ region: 'us-va', sparkplug: { group: 'g/#', edge: 'e' }, metrics: { drawW: 'w' } }] }],
    ['credentials in the URL', { ...base, broker: { url: 'mqtt://u:p@127.0.0.1:1' } }],
    ['http URL', { ...base, broker: { url: 'http://127.0.0.1:1' } }],
  ];
  for (const [what, c] of schemaBad) assert.ok(!Value.Check(MqttConfigSchema, Value.Default(MqttConfigSchema, structuredClone(c))), what);
  assert.equal((MqttConfigSchema as { additionalProperties?: unknown }).additionalProperties, false);
  assert.equal(mqttCollector.name, 'mqtt');
  assert.equal(mqttCollector.mode, 'poller');
});
