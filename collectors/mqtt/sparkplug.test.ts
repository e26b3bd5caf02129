/**
 * The Sparkplug B protobuf codec: payloads encoded by Eclipse Tahu's JavaScript library
 * (fixtures/), round trips of our encoder, and case tables of malformed and hostile input:
 * truncation, wrong wire types, overlong varints, huge lengths, a million metrics, random
 * bytes. The decoder must throw SparkplugDecodeError with the right code, or decode; nothing
 * else, ever.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  DataType,
  decodePayload,
  DEFAULT_MAX_METRICS,
  encodePayload,
  metricNumber,
  PbWriter,
  SparkplugDecodeError,
  type MetricValue,
  type PbErrorCode,
  type SparkplugPayload,
} from './sparkplug.js';
import { countByteReads } from '../../test/helpers/work.js';

// dist/collectors/mqtt → the source folder's fixtures.
const fixtures = fileURLToPath(new URL('../../../collectors/mqtt/fixtures/', import.meta.url));
const fixture = (name: string): Uint8Array => Buffer.from(readFileSync(fixtures + name, 'utf8').trim(), 'hex');
const T0 = 1796000000000;

/** The decoder's verdict: the code it refused with, or 'ok'. Anything else thrown fails the test. */
function verdict(bytes: Uint8Array, o?: Parameters<typeof decodePayload>[1]): PbErrorCode | 'ok' {
  try {
    decodePayload(bytes, o);
    return 'ok';
  } catch (e) {
    if (e instanceof SparkplugDecodeError) {
      assert.match(e.message, /^collectors\/mqtt: /);
      return e.code;
    }
    throw e;
  }
}

const hex = (s: string) => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ''), 'hex'));

test('fixtures from Eclipse Tahu (sparkplug-payload 1.0.3) decode to what was encoded', () => {
  const nb = decodePayload(fixture('nbirth.hex'));
  assert.equal(nb.timestamp, T0);
  assert.equal(nb.seq, 0);
  assert.deepEqual(
    nb.metrics.map((m) => [m.name, m.alias, m.datatype, metricNumber(m.value, m.datatype) ?? m.value]),
    [
      ['bdSeq', undefined, DataType.UInt64, 3],
      ['Node Control/Rebirth', 1, DataType.Boolean, { type: 'boolean', value: false }],
      ['Site/ImportLimit', 2, DataType.Float, 20],
    ],
  );
  const db = decodePayload(fixture('dbirth.hex'));
  assert.equal(db.timestamp, T0 + 100);
  assert.deepEqual(
    db.metrics.map((m) => [m.name, m.alias, metricNumber(m.value, m.datatype)]),
    [
      ['Grid/ImportLimitW', 10, 12e6],
      ['PV/GenerationW', 11, 3.5e6],
      ['DER/713/SoC', 12, 80],
      ['Inverter/WMaxDis', 13, 2e6],
      ['Site/DrawW', 14, 9e6],
      ['Status', 15, null],
      ['Site/NetW', 16, -250000],
    ],
  );
  assert.deepEqual(db.metrics[5]!.value, { type: 'string', value: 'online' });
  const dd = decodePayload(fixture('ddata-aliases.hex'));
  assert.equal(dd.timestamp, T0 + 5000);
  assert.deepEqual(
    dd.metrics.map((m) => [m.name, m.alias, metricNumber(m.value, m.datatype)]),
    [
      [undefined, 10, 8e6],
      [undefined, 16, -125000],
    ],
  );
  assert.deepEqual(decodePayload(fixture('ddeath.hex')), { timestamp: T0 + 9000, seq: 3, metrics: [] });
  const nd = decodePayload(fixture('ndeath.hex'));
  assert.equal(metricNumber(nd.metrics[0]!.value, nd.metrics[0]!.datatype), 3);
});

test('round trips: encodePayload then decodePayload gives the payload back', () => {
  const cases: SparkplugPayload[] = [
    { metrics: [] },
    { timestamp: 0, seq: 255, metrics: [] },
    { timestamp: 2 ** 53 - 1, uuid: 'ünïcode', metrics: [{ name: '' }] },
    {
      timestamp: T0,
      metrics: [
        { name: 'a', alias: 0, datatype: DataType.Int32, value: { type: 'int', value: 4294967291 } },
        { name: 'b', alias: 2 ** 40, datatype: DataType.Int64, value: { type: 'long', value: 2n ** 64n - 9n } },
        { name: 'c', datatype: DataType.Float, value: { type: 'float', value: 1.5 } },
        { name: 'd', datatype: DataType.Double, value: { type: 'double', value: -0.25 } },
        { name: 'e', datatype: DataType.Boolean, value: { type: 'boolean', value: true } },
        { name: 'f', datatype: DataType.String, value: { type: 'string', value: 'x'.repeat(300) } },
        { name: 'g', datatype: DataType.Double, isNull: true },
        { alias: 7, timestamp: T0 - 1, isHistorical: true, isTransient: false, value: { type: 'long', value: 2n ** 63n } },
      ],
    },
  ];
  for (const p of cases) assert.deepEqual(decodePayload(encodePayload(p)), p);
});

test('metricNumber: datatypes decide how integers read; non-numbers are null', () => {
  const int = (v: number): MetricValue => ({ type: 'int', value: v });
  const long = (v: bigint): MetricValue => ({ type: 'long', value: v });
  const cases: [string, MetricValue | undefined, number | undefined, number | null][] = [
    ['Int8 from 0xFF', int(0xff), DataType.Int8, -1],
    ['Int8 sign-extended', int(0xffffffff), DataType.Int8, -1],
    ['Int8 positive', int(0x7f), DataType.Int8, 127],
    ['Int16 0x8000', int(0x8000), DataType.Int16, -32768],
    ['Int32 two\'s complement', int(4294967291), DataType.Int32, -5],
    ['UInt32 in int_value', int(4294967291), DataType.UInt32, 4294967291],
    ['int without datatype: unsigned', int(4294967291), undefined, 4294967291],
    ['Int64 negative', long(2n ** 64n - 9n), DataType.Int64, -9],
    ['UInt64 large', long(2n ** 63n), DataType.UInt64, 2 ** 63],
    ['UInt32 in long_value (Tahu JS)', long(4000000000n), DataType.UInt32, 4e9],
    ['float', { type: 'float', value: 2.5 }, DataType.Float, 2.5],
    ['double NaN', { type: 'double', value: NaN }, DataType.Double, null],
    ['double infinite', { type: 'double', value: -Infinity }, DataType.Double, null],
    ['boolean', { type: 'boolean', value: true }, DataType.Boolean, null],
    ['string', { type: 'string', value: '12' }, DataType.String, null],
    ['bytes', { type: 'other', field: 16 }, 17, null],
    ['no value', undefined, DataType.Double, null],
  ];
  for (const [what, v, dt, want] of cases) assert.equal(metricNumber(v, dt), want, what);
});

test('decode: valid encodings other encoders may produce', () => {
  // Unknown fields of every accepted wire type, in Payload and in Metric, are skipped.
  const metric = new PbWriter().string(1, 'm').tag(99, 0).varint(2n ** 64n - 1n).tag(98, 1).raw([1, 2, 3, 4, 5, 6, 7, 8]).bytes(97, hex('ffff')).tag(96, 5).raw([1, 2, 3, 4]).double(13, 7).finish();
  const p = new PbWriter().tag(1000, 0).varint(1).bytes(2, metric).tag(999, 5).raw([0, 0, 0, 0]).bytes(5, hex('00ff')).finish();
  assert.deepEqual(decodePayload(p), { metrics: [{ name: 'm', value: { type: 'double', value: 7 } }] });
  // Non-minimal varint (protobuf allows padding), and the last of a repeated scalar wins.
  assert.equal(decodePayload(hex('08 85 80 80 80 00')).timestamp, 5);
  assert.equal(decodePayload(hex('08 01 08 02')).timestamp, 2);
  // uint32 datatype beyond 32 bits: the low 32 bits, as protobuf truncates.
  assert.equal(decodePayload(new PbWriter().bytes(2, new PbWriter().tag(4, 0).varint(2n ** 32n + 10n).finish()).finish()).metrics[0]!.datatype, 10);
  // Oneof: the last value field wins.
  const two = new PbWriter().tag(10, 0).varint(5).double(13, 9).finish();
  assert.deepEqual(decodePayload(new PbWriter().bytes(2, two).finish()).metrics[0]!.value, { type: 'double', value: 9 });
  // Invalid UTF-8 in a string: replacement characters, not an error (proto2).
  assert.equal(decodePayload(new PbWriter().bytes(2, new PbWriter().bytes(1, hex('ff fe 41')).finish()).finish()).metrics[0]!.name, '\ufffd\ufffdA');
  // Datasets, templates, metadata and properties are skipped whole.
  const skipped = new PbWriter().string(1, 'ds').bytes(8, hex('0a00')).bytes(9, hex('0a00')).bytes(17, hex('08 02 12 00')).finish();
  assert.deepEqual(decodePayload(new PbWriter().bytes(2, skipped).finish()).metrics[0], { name: 'ds', value: { type: 'other', field: 17 } });
});

test('decode: malformed and hostile input is refused with its code', () => {
  const metricOf = (b: Uint8Array) => new PbWriter().bytes(2, b).finish();
  const cases: [string, Uint8Array, PbErrorCode | 'ok', Parameters<typeof decodePayload>[1]?][] = [
    ['empty payload is a valid empty message', hex(''), 'ok'],
    ['tag only', hex('08'), 'MQTT_ERR_PB_TRUNCATED'],
    ['varint cut short', hex('08 80 80'), 'MQTT_ERR_PB_TRUNCATED'],
    ['metrics length beyond the end', hex('12 05 0a 01'), 'MQTT_ERR_PB_TRUNCATED'],
    ['metric name length beyond the metric', metricOf(hex('0a 09 41')), 'MQTT_ERR_PB_TRUNCATED'],
    ['double cut short', metricOf(hex('69 00 00 00')), 'MQTT_ERR_PB_TRUNCATED'],
    ['float cut short', metricOf(hex('65 00 00')), 'MQTT_ERR_PB_TRUNCATED'],
    ['unknown fixed64 cut short', hex('61 00'), 'MQTT_ERR_PB_TRUNCATED'],
    ['unknown fixed32 cut short', hex('65 00'), 'MQTT_ERR_PB_TRUNCATED'],
    ['length 2^32 − 1', hex('12 ff ff ff ff 0f 00'), 'MQTT_ERR_PB_TRUNCATED'],
    ['length 2^64 − 1', hex('12 ff ff ff ff ff ff ff ff ff 01'), 'MQTT_ERR_PB_TRUNCATED'],
    ['huge string length inside a metric', metricOf(hex('7a ff ff ff ff 07')), 'MQTT_ERR_PB_TRUNCATED'],
    ['varint of 11 bytes', hex('08 ff ff ff ff ff ff ff ff ff ff 01'), 'MQTT_ERR_PB_VARINT'],
    ['varint beyond 64 bits', hex('08 ff ff ff ff ff ff ff ff ff 02'), 'MQTT_ERR_PB_VARINT'],
    ['field number 0', hex('00 00'), 'MQTT_ERR_PB_FIELD'],
    ['field 0, length-delimited', hex('02 00'), 'MQTT_ERR_PB_FIELD'],
    ['tag beyond 32 bits', hex('80 80 80 80 80 01 00'), 'MQTT_ERR_PB_FIELD'],
    ['field 0 inside a metric', metricOf(hex('00 00')), 'MQTT_ERR_PB_FIELD'],
    ['timestamp as length-delimited', hex('0a 00'), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['metrics as varint', hex('10 01'), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['seq as fixed32', hex('1d 00 00 00 00'), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['uuid as varint', hex('20 01'), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['start group (wire type 3)', hex('0b'), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['unknown field as a group', hex('a3 01 a4 01'), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['wire type 6', hex('7e'), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['wire type 7', hex('7f'), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['metric name as varint', metricOf(hex('08 01')), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['alias as length-delimited', metricOf(hex('12 00')), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['float_value as 64-bit', metricOf(hex('61 00 00 00 00 00 00 00 00')), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['double_value as 32-bit', metricOf(hex('6d 00 00 00 00')), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['int_value as length-delimited', metricOf(hex('52 00')), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['properties as varint', metricOf(hex('48 00')), 'MQTT_ERR_PB_WIRE_TYPE'],
    ['more bytes than maxBytes', new Uint8Array(11), 'MQTT_ERR_PB_TOO_LARGE', { maxBytes: 10 }],
    ['more metrics than maxMetrics', hex('12 00 12 00 12 00'), 'MQTT_ERR_PB_TOO_MANY', { maxMetrics: 2 }],
    ['exactly maxMetrics', hex('12 00 12 00'), 'ok', { maxMetrics: 2 }],
  ];
  for (const [what, bytes, want, o] of cases) assert.equal(verdict(bytes, o), want, what);
});

test('decode: every truncation of a real BIRTH is refused or a valid shorter message, never anything else', () => {
  const full = fixture('dbirth.hex');
  let refused = 0;
  for (let n = 0; n < full.length; n++) {
    const v = verdict(full.subarray(0, n));
    if (v !== 'ok') {
      refused++;
      assert.equal(v, 'MQTT_ERR_PB_TRUNCATED', `prefix of ${n} bytes`);
    }
  }
  // Only cuts at a top-level field boundary decode (one per metric, plus the timestamp).
  assert.ok(refused >= full.length - 10, `${refused} of ${full.length} prefixes refused`);
});

test('decode: a million metrics are refused at the bound, reading nothing past it; raised, the bound decodes them all in one pass', () => {
  const million = new Uint8Array(2_000_000);
  for (let i = 0; i < million.length; i += 2) million[i] = 0x12; // [tag 2, length 0] × 10^6
  // Work is counted in bytes read (countByteReads), not timed.
  const refused = countByteReads(million);
  assert.equal(verdict(refused.buf), 'MQTT_ERR_PB_TOO_MANY');
  // Two bytes per metric: the tag and the length of metric 10 001 are read, nothing after.
  assert.ok(refused.reads() <= 2 * (DEFAULT_MAX_METRICS + 1), `${refused.reads()} bytes read to refuse metric ${DEFAULT_MAX_METRICS + 1}`);
  // Raising the bound decodes them all: every byte is read once.
  const all = countByteReads(million);
  assert.equal(decodePayload(all.buf, { maxMetrics: 1_000_000 }).metrics.length, 1_000_000);
  assert.ok(all.reads() <= million.length, `${all.reads()} byte reads for ${million.length} bytes`);
  // Above 4 MiB the input is refused before any decoding.
  const huge = countByteReads(new Uint8Array(4 * 1024 * 1024 + 1));
  assert.equal(verdict(huge.buf), 'MQTT_ERR_PB_TOO_LARGE');
  assert.equal(huge.reads(), 0, 'no byte of a payload above the bound is read');
});

test('decode: random bytes and mutated BIRTHs never throw anything but SparkplugDecodeError', () => {
  // A small deterministic PRNG (mulberry32): the same cases on every run.
  let seed = 0x5eed;
  const rnd = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const seen = new Set<string>();
  for (let i = 0; i < 3000; i++) {
    const b = new Uint8Array(Math.floor(rnd() * 200));
    for (let j = 0; j < b.length; j++) b[j] = Math.floor(rnd() * 256);
    seen.add(verdict(b));
  }
  const birth = fixture('dbirth.hex');
  for (let i = 0; i < 3000; i++) {
    const b = birth.slice();
    for (let k = 0; k < 1 + Math.floor(rnd() * 4); k++) b[Math.floor(rnd() * b.length)] = Math.floor(rnd() * 256);
    seen.add(verdict(b));
  }
  assert.ok(seen.has('MQTT_ERR_PB_TRUNCATED') && seen.has('MQTT_ERR_PB_WIRE_TYPE'), [...seen].join(', '));
});
