/**
 * Payload fuzz (issue 27, test/helpers/payload-fuzz.ts): the plain-JSON fixture and the
 * Sparkplug B fixtures, mutated, through MqttRun.handle (no broker: the run routes and reads
 * the message as it would from mqtt.js). Invariants: handle never throws and never logs an
 * internal error; every emitted power.budget passes validateSignal at the run's `now`; every
 * refusal is counted (`rejected`, `malformed` or `oversize`) and logged naming the field (or
 * the payload); a mapped value outside its domain after scaling (not finite, negative, above
 * MAX_WATTS, a state of charge above 100) is refused, never emitted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Value } from '@sinclair/typebox/value';
import { MqttConfigSchema, MqttRun, type MqttConfig } from './index.js';
import { DataType, decodePayload, encodePayload, type SparkplugPayload } from './sparkplug.js';
import type { Signal } from '../types.js';
import { MAX_WATTS } from '../../gslb/model/domains.js';
import { BAD_EPOCHS, BAD_NUMBERS, FuzzTally, caseName, fuzzContext, fuzzRng, type LogLine, jsonText, mutateJson, mutateText, signalProblem } from '../../test/helpers/payload-fuzz.js';

const fixtures = fileURLToPath(new URL('../../../collectors/mqtt/fixtures/', import.meta.url));
const hex = (name: string): Buffer => Buffer.from(readFileSync(fixtures + name, 'utf8').trim(), 'hex');
const NOW = 1_796_000_010_000; // 2026-12-30, after every fixture's own time
const REGIONS = new Set(['us-va', 'eu-west']);
const SEED = 27_004;
const CASES = 3000;

interface Run {
  run: MqttRun;
  emitted: Signal[];
  logs: LogLine[];
}

function runOf(config: Record<string, unknown>): Run {
  const cfg = Value.Default(MqttConfigSchema, structuredClone(config)) as MqttConfig;
  assert.ok(Value.Check(MqttConfigSchema, cfg));
  const { ctx, emitted, logs } = fuzzContext(cfg, NOW, REGIONS);
  return { run: new MqttRun(ctx), emitted, logs };
}

const TOPIC = 'sites/ams-1/telemetry';
const JSON_SITE = {
  region: 'eu-west',
  topic: TOPIC,
  timestampField: 'ts',
  metrics: { importLimitW: 'site.importLimitKw', generationW: 'pv.powerKw', socPercent: 'bess.socPct', storageMaxW: 'bess.maxDischargeKw', drawW: 'site.loadKw' },
  scale: { importLimitW: 1000, generationW: 1000, storageMaxW: 1000, drawW: 1000 },
  storageCapacityWh: 4e6,
};
/** Source name (JSON path or metric) → the field it feeds and its scale, from sites' configs. */
function fieldMap(sites: ReadonlyArray<{ metrics: Partial<Record<string, string>>; scale?: Partial<Record<string, number>> }>): Record<string, { field: string; scale: number }> {
  const out: Record<string, { field: string; scale: number }> = {};
  for (const site of sites) for (const [field, name] of Object.entries(site.metrics)) if (name !== undefined) out[name] = { field, scale: site.scale?.[field] ?? 1 };
  return out;
}
const FIELD_OF = fieldMap([JSON_SITE]);
/** A refusal's log line names a field of the site or the payload itself. */
const NAMES_FIELD = /importLimitW|generationW|storageWh|storageMaxW|socPercent|drawW|[Pp]ayload|metric "|metrics\[\d+\]|\b(timestamp|seq|uuid|body)\b/;
/** Out of a power.budget field's domain once scaled (the value a refusal must catch). */
const outOfDomain = (field: string, v: number): boolean => !Number.isFinite(v) || v < 0 || (field === 'socPercent' ? v > 100 : v > MAX_WATTS);

const counted = (r: MqttRun) => r.stats.rejected + r.stats.malformed + r.stats.oversize;

/** Checks one handled message: no throw, no internal error, valid signals, counted refusals naming the field. */
function check(t: FuzzTally, r: Run, name: string, send: () => void, mustRefuse: string | null): void {
  const before = counted(r.run);
  const emittedBefore = r.emitted.length;
  const logsBefore = r.logs.length;
  try {
    send();
  } catch (e) {
    t.fail(name, `handle threw: ${(e as Error).message}`);
    return;
  }
  const logs = r.logs.slice(logsBefore);
  for (const l of logs) if (l.level >= 50) t.fail(name, `error logged: ${l.msg}`);
  const signals = r.emitted.slice(emittedBefore);
  for (const s of signals) {
    const why = signalProblem(s, NOW, REGIONS);
    if (why !== null) t.fail(name, `emitted a signal the state layer refuses (${why}): ${JSON.stringify(s).slice(0, 300)}`);
  }
  t.saw(signals.length > 0 ? 'signal' : 'no signal');
  const refused = counted(r.run) - before;
  if (refused > 0) {
    t.saw('refused');
    const line = logs.find((l) => /refused/.test(l.msg));
    const text = `${line?.msg ?? ''} ${String(line?.reason ?? '')}`;
    if (!line) t.fail(name, 'a refusal was counted but not logged');
    else if (!NAMES_FIELD.test(text)) t.fail(name, `the refusal does not name the field: ${text.slice(0, 200)}`);
  }
  if (mustRefuse !== null && (refused === 0 || signals.length > 0)) t.fail(name, `${mustRefuse} was not refused`);
}

test('payload fuzz: plain JSON site telemetry through MqttRun.handle', (tc) => {
  const fixture = JSON.parse(readFileSync(fixtures + 'site-telemetry.json', 'utf8')) as Record<string, unknown>;
  fixture.ts = '2026-12-30T00:00:05Z';
  const r = fuzzRng(SEED);
  const t = new FuzzTally('mqtt JSON', SEED);
  for (let i = 0; i < CASES; i++) {
    // A fresh run per case: every good value is new, so a kept message always emits.
    const run = runOf({ broker: { url: 'mqtt://127.0.0.1:1' }, sites: [JSON_SITE] });
    const m = mutateJson(r, fixture);
    t.case(m.mutations);
    const text = r() < 0.9 ? jsonText(r, m.value) : mutateText(r, JSON.stringify(fixture)).text;
    // The value a mapped field now holds, when a number mutation put one there.
    let mustRefuse: string | null = null;
    for (const at of m.at) {
      const map = FIELD_OF[at];
      if (!map) continue;
      const [a, b] = at.split('.') as [string, string];
      const v = ((m.value as Record<string, Record<string, unknown>> | null)?.[a] ?? {})[b];
      if (typeof v === 'number' && Number.isFinite(v) && outOfDomain(map.field, v * map.scale) && text === jsonText(() => 1, m.value)) mustRefuse = `${map.field} = ${v} × ${map.scale}`;
    }
    check(t, run, caseName(SEED, i, m.at), () => run.run.handle(TOPIC, Buffer.from(text)), mustRefuse);
  }
  assert.deepEqual(t.report(tc), []);
  assert.ok((t.outcomes.refused ?? 0) > CASES / 10, 'a good share of the cases was refused');
  assert.ok((t.outcomes.signal ?? 0) > CASES / 10, 'a good share of the cases still emitted');
});

test('payload fuzz: Sparkplug B births and data through MqttRun.handle', (tc) => {
  const SP = 'spBv1.0/site-power';
  const spSites = [
    {
      region: 'us-va',
      sparkplug: { group: 'site-power', edge: 'va-campus-gw', device: 'meter-1' },
      metrics: { importLimitW: 'Grid/ImportLimitW', generationW: 'PV/GenerationW', socPercent: 'DER/713/SoC', storageMaxW: 'Inverter/WMaxDis', drawW: 'Site/DrawW' },
      storageCapacityWh: 8e6,
    },
    { region: 'us-va', sparkplug: { group: 'site-power', edge: 'va-campus-gw' }, metrics: { importLimitW: 'Site/ImportLimit' }, scale: { importLimitW: 1000 } },
  ];
  const fieldOf = fieldMap(spSites);
  const nbirth = hex('nbirth.hex');
  const dbirth = decodePayload(hex('dbirth.hex'));
  const r = fuzzRng(SEED + 1);
  const t = new FuzzTally('mqtt Sparkplug B', SEED + 1);
  for (let i = 0; i < CASES; i++) {
    const run = runOf({ broker: { url: 'mqtt://127.0.0.1:1' }, expireMs: 60000, sparkplugHold: false, sites: spSites });
    run.run.handle(`${SP}/NBIRTH/va-campus-gw`, nbirth);
    const p: SparkplugPayload = structuredClone(dbirth);
    p.timestamp = NOW - 1000;
    const mutations: string[] = [];
    let mustRefuse: string | null = null;
    let bytes: Uint8Array;
    const x = r();
    if (x < 0.6) {
      // A metric's value: a bad double, a huge or negative integer of its datatype.
      const m = p.metrics[Math.floor(r() * p.metrics.length)]!;
      const bad = BAD_NUMBERS[Math.floor(r() * BAD_NUMBERS.length)]!;
      if (m.value?.type === 'long' || m.datatype === DataType.Int64 || m.datatype === DataType.UInt64) {
        const big = [2n ** 63n, 2n ** 64n - 1n, 2n ** 53n + 1n, BigInt.asUintN(64, -1n), 10n ** 13n + 1n][Math.floor(r() * 5)]!;
        m.value = { type: 'long', value: big };
        mutations.push('number:long');
      } else if (m.value?.type === 'int') {
        m.value = { type: 'int', value: [0xffffffff, 0x80000000, 0x7fffffff][Math.floor(r() * 3)]! };
        mutations.push('number:int');
      } else {
        m.value = { type: r() < 0.5 ? 'double' : 'float', value: bad };
        mutations.push('number:double');
      }
      const map = m.name !== undefined ? fieldOf[m.name] : undefined;
      const mv = m.value as { type: string; value: number | bigint };
      const v = typeof mv.value === 'bigint' ? Number(m.datatype === DataType.Int64 ? BigInt.asIntN(64, mv.value) : mv.value) : mv.type === 'float' ? Math.fround(mv.value) : mv.type === 'int' && m.datatype === DataType.Int32 ? mv.value | 0 : mv.value;
      if (map && typeof v === 'number' && Number.isFinite(v) && outOfDomain(map.field, v * map.scale)) mustRefuse = `${m.name} = ${v}`;
      bytes = encodePayload(p);
    } else if (x < 0.75) {
      p.timestamp = BAD_EPOCHS.filter((e) => Number.isSafeInteger(e) && e >= 0)[Math.floor(r() * 6)] ?? 0;
      mutations.push('timestamp');
      bytes = encodePayload(p);
    } else {
      // Bytes: flips, truncation, overwrites of the encoded payload.
      const b = Buffer.from(encodePayload(p));
      const kind = r();
      if (kind < 0.4) {
        for (let k = 0; k < 1 + Math.floor(r() * 8); k++) b[Math.floor(r() * b.length)]! ^= 1 << Math.floor(r() * 8);
        mutations.push('bitflip');
        bytes = b;
      } else if (kind < 0.7) {
        bytes = b.subarray(0, Math.floor(r() * b.length));
        mutations.push('truncate');
      } else {
        bytes = Buffer.concat([b, Buffer.from(Array.from({ length: 1 + Math.floor(r() * 40) }, () => Math.floor(r() * 256)))]);
        mutations.push('append');
      }
    }
    t.case(mutations);
    check(t, run, caseName(SEED + 1, i, mutations), () => run.run.handle(`${SP}/DBIRTH/va-campus-gw/meter-1`, bytes), mustRefuse);
  }
  assert.deepEqual(t.report(tc), []);
  assert.ok((t.outcomes.refused ?? 0) > CASES / 10, 'a good share of the cases was refused');
});
