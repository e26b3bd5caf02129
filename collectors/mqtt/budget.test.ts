/**
 * Mapping telemetry to a power.budget (pure): plain JSON payloads (valid, malformed,
 * hostile), scaling and checks, state of charge to energy, and the observation time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  applyUpdate,
  budgetOf,
  MAX_PAYLOAD_BYTES,
  observedAtOf,
  parseJsonObject,
  readJson,
  ReadingError,
  scaled,
  type Field,
  type ReadErrorCode,
  type Values,
} from './budget.js';

const fixtures = fileURLToPath(new URL('../../../collectors/mqtt/fixtures/', import.meta.url));
const enc = (s: string) => new TextEncoder().encode(s);

function code(fn: () => unknown): ReadErrorCode | 'ok' {
  try {
    fn();
    return 'ok';
  } catch (e) {
    if (e instanceof ReadingError) {
      assert.match(e.message, /^collectors\/mqtt: /);
      return e.code;
    }
    throw e;
  }
}

test('parseJsonObject: only UTF-8 JSON objects up to 4 MiB', () => {
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  const cases: [string, Uint8Array, ReadErrorCode | 'ok'][] = [
    ['object', enc('{"a":1}'), 'ok'],
    ['empty object', enc('{}'), 'ok'],
    ['truncated JSON', enc('{"a":1'), 'MQTT_ERR_JSON'],
    ['empty payload', enc(''), 'MQTT_ERR_JSON'],
    ['array', enc('[1,2]'), 'MQTT_ERR_JSON'],
    ['null', enc('null'), 'MQTT_ERR_JSON'],
    ['number', enc('12'), 'MQTT_ERR_JSON'],
    ['string', enc('"x"'), 'MQTT_ERR_JSON'],
    ['invalid UTF-8', Uint8Array.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), 'MQTT_ERR_JSON'],
    ['protobuf bytes', Uint8Array.from([0x08, 0x80, 0xd0, 0x12, 0x00]), 'MQTT_ERR_JSON'],
    ['deeply nested arrays', enc(deep), 'MQTT_ERR_JSON'],
    ['deeply nested object', enc('{"a":' + deep + '}'), 'ok'],
    ['above 4 MiB', new Uint8Array(MAX_PAYLOAD_BYTES + 1).fill(0x20), 'MQTT_ERR_TOO_LARGE'],
  ];
  for (const [what, bytes, want] of cases) assert.equal(code(() => parseJsonObject(bytes)), want, what);
});

test('readJson: mapped fields, dotted paths, scale, null, wrong types, timestamps', () => {
  const metrics: Partial<Record<Field, string>> = { importLimitW: 'limitKw', generationW: 'pv.w', socPercent: 'bess.soc', drawW: 'load' };
  const scale = { importLimitW: 1000 };
  const read = (o: Record<string, unknown>, ts = 'timestamp') => readJson(o, metrics, scale, ts);
  assert.deepEqual(read({ limitKw: 12.5, pv: { w: 300 }, bess: { soc: 55 }, load: 0, other: 'x' }), {
    update: { importLimitW: 12500, generationW: 300, socPercent: 55, drawW: 0 },
  });
  // Absent fields are not in the update (they keep their last value); null says "not known now".
  assert.deepEqual(read({ limitKw: null }), { update: { importLimitW: null } });
  assert.deepEqual(read({}), { update: {} });
  // An exact field name wins over a dotted path.
  assert.deepEqual(read({ 'pv.w': 1, pv: { w: 2 } }).update, { generationW: 1 });
  // A path through a non-object is absent; prototype keys are not fields.
  assert.deepEqual(read({ pv: [{ w: 5 }], bess: 'x' }).update, {});
  assert.deepEqual(readJson({}, { drawW: 'constructor' }, undefined, 'timestamp').update, {});
  assert.deepEqual(readJson(JSON.parse('{"__proto__":{"w":7}}'), { drawW: '__proto__.w' }, undefined, 'timestamp').update, { drawW: 7 });
  const refused: [string, Record<string, unknown>, RegExp][] = [
    ['string number', { limitKw: '12' }, /importLimitW \(JSON field "limitKw"\): must be a number or null; got "12" \(a string\)/],
    ['boolean', { load: true }, /drawW .*got true/],
    ['object', { load: { w: 1 } }, /drawW .*got an object/],
    ['array', { pv: { w: [1] } }, /generationW .*got an array/],
    ['negative', { load: -5 }, /drawW .*negative/],
    ['negative after scale', { limitKw: -0.001 }, /importLimitW .*× 1000 = -1 is negative/],
    ['state of charge above 100', { bess: { soc: 100.5 } }, /socPercent .*above 100/],
    ['overflow after scale', { limitKw: 1e308 }, /not a finite number/],
  ];
  for (const [what, o, re] of refused) {
    assert.equal(code(() => read(o)), 'MQTT_ERR_VALUE', what);
    assert.throws(() => read(o), re, what);
  }
  // Timestamps: ms epoch numbers or ISO 8601 with a zone; anything else is absent.
  const ts: [unknown, number | undefined][] = [
    [1796000000000, 1796000000000],
    ['2026-11-30T00:00:00Z', Date.parse('2026-11-30T00:00:00Z')],
    ['2026-11-30T01:00:00+01:00', Date.parse('2026-11-30T00:00:00Z')],
    ['2026-11-30 00:00', undefined],
    ['yesterday', undefined],
    [true, undefined],
    [null, undefined],
  ];
  for (const [t, want] of ts) assert.equal(read({ load: 1, timestamp: t }).timestamp, want, String(t));
  assert.equal(read({ load: 1, meta: { t: 5 } }, 'meta.t').timestamp, 5);
});

test('scaled: units and sign conventions', () => {
  assert.equal(scaled('generationW', 2.5, 1000, 'x'), 2500);
  assert.equal(scaled('drawW', -3, -1, 'x'), 3, 'a negative scale flips an export-negative meter');
  assert.equal(scaled('socPercent', 0.42, 100, 'x'), 42);
  assert.equal(scaled('socPercent', 100, undefined, 'x'), 100);
  assert.equal(code(() => scaled('socPercent', 1.01, 100, 'x')), 'MQTT_ERR_VALUE');
  assert.equal(code(() => scaled('storageWh', NaN, undefined, 'x')), 'MQTT_ERR_VALUE');
});

test('budgetOf and applyUpdate: fields, storage from state of charge, nothing known', () => {
  const v: Values = {};
  applyUpdate(v, { importLimitW: 1, socPercent: 50 });
  assert.deepEqual(budgetOf(v, 10_000), { importLimitW: 1, storageWh: 5000 });
  assert.deepEqual(budgetOf(v, undefined), { importLimitW: 1 });
  applyUpdate(v, { importLimitW: null });
  assert.deepEqual(budgetOf(v, 10_000), { storageWh: 5000 });
  applyUpdate(v, { socPercent: null });
  assert.equal(budgetOf(v, 10_000), null);
  applyUpdate(v, { storageWh: 7, storageMaxW: 8, generationW: 9, drawW: 0 });
  assert.deepEqual(budgetOf(v, 10_000), { generationW: 9, storageWh: 7, storageMaxW: 8, drawW: 0 });
});

test('observedAtOf: the source time when sane, else now', () => {
  const now = 1796000000000;
  const cases: [number | undefined, number, string][] = [
    [undefined, now, 'none'],
    [now - 1000, now - 1000, 'ok'],
    [now + 5000, now + 5000, 'ok'],
    [now + 5001, now, 'future'],
    [now - 59_999, now - 59_999, 'ok'],
    [now - 60_000, now, 'old'],
    [1796000000, now, 'old'],
    [now - 0.5, now - 1, 'ok'],
    [Infinity, now, 'future'],
  ];
  for (const [t, at, clock] of cases) assert.deepEqual(observedAtOf(t, now, 60_000), { observedAt: at, clock }, String(t));
});

test('the JSON fixture reads as documented', () => {
  const obj = parseJsonObject(readFileSync(fixtures + 'site-telemetry.json'));
  const r = readJson(
    obj,
    { importLimitW: 'site.importLimitKw', generationW: 'pv.powerKw', socPercent: 'bess.socPct', storageMaxW: 'bess.maxDischargeKw', drawW: 'site.loadKw' },
    { importLimitW: 1000, generationW: 1000, storageMaxW: 1000, drawW: 1000 },
    'ts',
  );
  assert.deepEqual(r, { update: { importLimitW: 15e6, generationW: 2.2e6, storageMaxW: 2e6, socPercent: 64.5, drawW: 11.8e6 }, timestamp: Date.parse('2026-11-30T00:00:03Z') });
});
