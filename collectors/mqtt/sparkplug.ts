/**
 * Sparkplug B payloads: a bounded protobuf wire decoder for exactly the two messages this
 * collector reads — `Payload` and `Payload.Metric` of Eclipse Tahu's sparkplug_b.proto
 * (Sparkplug 3.0) — and an encoder for them (tests and fixtures). No protobuf dependency.
 *
 * Contract of decodePayload:
 * - Accepts any protobuf encoding of the two messages: fields in any order, repeated scalars
 *   (the last one wins, as in protobuf), non-minimal varints, unknown fields of wire types 0,
 *   1, 2 and 5 (skipped, never looked into: metadata, properties, datasets, templates,
 *   extensions and `body` are skipped whole, so nothing recurses).
 * - Refuses, with a SparkplugDecodeError carrying a code from PB_ERRORS: input longer than
 *   `maxBytes`, input ending inside a field, a length beyond the bytes left, a varint longer
 *   than 10 bytes or beyond 64 bits, field number 0, wire types 3, 4 (groups), 6 and 7, a
 *   known field with a wire type other than its own, and more than `maxMetrics` metrics.
 * - Work and memory are linear in the input size; every length is checked before use.
 * - Strings are decoded as UTF-8 with replacement characters (proto2 does not validate them).
 *
 * Numbers: uint64 fields (timestamps, aliases, seq) come back as JS numbers, exact up to
 * 2^53; `long_value` comes back as a bigint (its two's complement meaning depends on the
 * datatype, see metricNumber).
 */
import { defineErrors } from '../kit/errors.js';

/** The error codes of this module, with what each means. */
export const PB_ERRORS = {
  MQTT_ERR_PB_TOO_LARGE: 'the payload is longer than the byte bound',
  MQTT_ERR_PB_TRUNCATED: 'the input ends inside a field, or a length goes beyond the bytes left',
  MQTT_ERR_PB_VARINT: 'a varint is longer than 10 bytes or does not fit in 64 bits',
  MQTT_ERR_PB_FIELD: 'a tag has field number 0 or does not fit in 32 bits',
  MQTT_ERR_PB_WIRE_TYPE: 'wire type 3, 4 (groups), 6 or 7, or a known field with a wire type other than its own',
  MQTT_ERR_PB_TOO_MANY: 'more metrics than the bound',
} as const;
export type PbErrorCode = keyof typeof PB_ERRORS;

/** A payload that is not a Sparkplug B Payload this decoder accepts. */
export const SparkplugDecodeError = defineErrors('collectors/mqtt', PB_ERRORS, { name: 'SparkplugDecodeError' });
export type SparkplugDecodeError = InstanceType<typeof SparkplugDecodeError>;

/** Sparkplug B metric datatypes (sparkplug_b.proto `DataType`) that carry one number or a scalar. */
export const DataType = {
  Unknown: 0,
  Int8: 1,
  Int16: 2,
  Int32: 3,
  Int64: 4,
  UInt8: 5,
  UInt16: 6,
  UInt32: 7,
  UInt64: 8,
  Float: 9,
  Double: 10,
  Boolean: 11,
  String: 12,
  DateTime: 13,
  Text: 14,
} as const;

/** The value of a metric: which `value` oneof field was set, and what it held. */
export type MetricValue =
  | { type: 'int'; value: number } // int_value (10): uint32 on the wire
  | { type: 'long'; value: bigint } // long_value (11): uint64 on the wire
  | { type: 'float'; value: number } // float_value (12)
  | { type: 'double'; value: number } // double_value (13)
  | { type: 'boolean'; value: boolean } // boolean_value (14)
  | { type: 'string'; value: string } // string_value (15)
  | { type: 'other'; field: number }; // bytes, dataset, template or extension (16–19): skipped

/** `Payload.Metric`, the fields this collector reads. */
export interface SparkplugMetric {
  name?: string;
  alias?: number;
  timestamp?: number;
  datatype?: number;
  isHistorical?: boolean;
  isTransient?: boolean;
  isNull?: boolean;
  value?: MetricValue;
}

/** `Payload`, the fields this collector reads. */
export interface SparkplugPayload {
  /** ms epoch, when the message was sent. */
  timestamp?: number;
  metrics: SparkplugMetric[];
  /** 0–255 in Sparkplug. */
  seq?: number;
  uuid?: string;
}

/** Most bytes decodePayload accepts by default (4 MiB). */
export const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;
/** Most metrics decodePayload accepts by default. */
export const DEFAULT_MAX_METRICS = 10_000;

const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

const utf8 = new TextDecoder('utf-8');
const WIRE_NAMES = ['varint', '64-bit', 'length-delimited', 'start-group', 'end-group', '32-bit', '6', '7'];

/** A cursor over buf[pos, end). Varints land in lo/hi (unsigned 32-bit halves). */
class Reader {
  pos: number;
  lo = 0;
  hi = 0;
  constructor(
    readonly buf: Uint8Array,
    readonly view: DataView,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  varint(what: string): void {
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new SparkplugDecodeError('MQTT_ERR_PB_TRUNCATED', `${what}: the input ends inside a varint at byte ${this.pos}`);
      const b = this.buf[this.pos++]!;
      if (i < 4) lo |= (b & 0x7f) << (7 * i);
      else if (i === 4) {
        lo |= (b & 0x0f) << 28;
        hi |= (b & 0x7f) >> 4;
      } else {
        if (i === 9 && b > 1) throw new SparkplugDecodeError('MQTT_ERR_PB_VARINT', `${what}: a varint does not fit in 64 bits at byte ${this.pos - 1}`);
        hi |= (b & 0x7f) << (7 * i - 32);
      }
      if (b < 0x80) {
        this.lo = lo >>> 0;
        this.hi = hi >>> 0;
        return;
      }
    }
    throw new SparkplugDecodeError('MQTT_ERR_PB_VARINT', `${what}: a varint is longer than 10 bytes at byte ${this.pos - 10}`);
  }

  /** The last varint as a number (exact up to 2^53). */
  u64(): number {
    return this.hi * 4294967296 + this.lo;
  }

  /** Reads a tag: returns the field number; the wire type is in `this.lo & 7` afterwards. */
  tag(msg: string): { field: number; wire: number } {
    const at = this.pos;
    this.varint(`${msg} tag`);
    if (this.hi !== 0) throw new SparkplugDecodeError('MQTT_ERR_PB_FIELD', `${msg}: a tag at byte ${at} does not fit in 32 bits`);
    const field = this.lo >>> 3;
    const wire = this.lo & 7;
    if (field === 0) throw new SparkplugDecodeError('MQTT_ERR_PB_FIELD', `${msg}: field number 0 at byte ${at}`);
    return { field, wire };
  }

  /** Reads a length prefix and checks it against the bytes left; returns it. */
  length(what: string): number {
    this.varint(`${what} length`);
    const left = this.end - this.pos;
    if (this.hi !== 0 || this.lo > left) throw new SparkplugDecodeError('MQTT_ERR_PB_TRUNCATED', `${what}: a length of ${this.u64()} bytes goes beyond the ${left} bytes left`);
    return this.lo;
  }

  need(n: number, what: string): void {
    if (this.end - this.pos < n) throw new SparkplugDecodeError('MQTT_ERR_PB_TRUNCATED', `${what}: ${n} bytes needed, ${this.end - this.pos} left`);
  }

  /** Skips one field of wire type `wire` (an unknown field). */
  skip(wire: number, what: string): void {
    switch (wire) {
      case VARINT:
        this.varint(what);
        return;
      case I64:
        this.need(8, what);
        this.pos += 8;
        return;
      case LEN:
        this.skipLength(what);
        return;
      case I32:
        this.need(4, what);
        this.pos += 4;
        return;
      default:
        throw new SparkplugDecodeError('MQTT_ERR_PB_WIRE_TYPE', `${what}: wire type ${WIRE_NAMES[wire]} is not accepted`);
    }
  }

  /** Skips a length-delimited value (reads its length first: `pos += length()` would add to the old pos). */
  skipLength(what: string): void {
    const n = this.length(what);
    this.pos += n;
  }

  string(what: string): string {
    const n = this.length(what);
    const s = utf8.decode(this.buf.subarray(this.pos, this.pos + n));
    this.pos += n;
    return s;
  }
}

function expectWire(got: number, want: number, what: string): void {
  if (got !== want) throw new SparkplugDecodeError('MQTT_ERR_PB_WIRE_TYPE', `${what}: wire type ${WIRE_NAMES[got]}, expected ${WIRE_NAMES[want]}`);
}

const METRIC_FIELDS: Record<number, string> = {
  1: 'name',
  2: 'alias',
  3: 'timestamp',
  4: 'datatype',
  5: 'is_historical',
  6: 'is_transient',
  7: 'is_null',
  8: 'metadata',
  9: 'properties',
  10: 'int_value',
  11: 'long_value',
  12: 'float_value',
  13: 'double_value',
  14: 'boolean_value',
  15: 'string_value',
  16: 'bytes_value',
  17: 'dataset_value',
  18: 'template_value',
  19: 'extension_value',
};

function decodeMetric(r: Reader, end: number, index: number): SparkplugMetric {
  const m: SparkplugMetric = {};
  const sub = new Reader(r.buf, r.view, r.pos, end);
  const msg = `metrics[${index}]`;
  while (sub.pos < sub.end) {
    const { field, wire } = sub.tag(msg);
    const name = METRIC_FIELDS[field];
    const what = `${msg}.${name ?? `field ${field}`}`;
    switch (field) {
      case 1:
        expectWire(wire, LEN, what);
        m.name = sub.string(what);
        break;
      case 2:
      case 3:
      case 4:
        expectWire(wire, VARINT, what);
        sub.varint(what);
        if (field === 2) m.alias = sub.u64();
        else if (field === 3) m.timestamp = sub.u64();
        else m.datatype = sub.lo; // uint32: the low 32 bits, as protobuf truncates
        break;
      case 5:
      case 6:
      case 7:
      case 14: {
        expectWire(wire, VARINT, what);
        sub.varint(what);
        const b = sub.lo !== 0 || sub.hi !== 0;
        if (field === 5) m.isHistorical = b;
        else if (field === 6) m.isTransient = b;
        else if (field === 7) m.isNull = b;
        else m.value = { type: 'boolean', value: b };
        break;
      }
      case 8:
      case 9:
        expectWire(wire, LEN, what);
        sub.skipLength(what);
        break;
      case 10:
        expectWire(wire, VARINT, what);
        sub.varint(what);
        m.value = { type: 'int', value: sub.lo };
        break;
      case 11:
        expectWire(wire, VARINT, what);
        sub.varint(what);
        m.value = { type: 'long', value: (BigInt(sub.hi) << 32n) | BigInt(sub.lo) };
        break;
      case 12:
        expectWire(wire, I32, what);
        sub.need(4, what);
        m.value = { type: 'float', value: sub.view.getFloat32(sub.pos, true) };
        sub.pos += 4;
        break;
      case 13:
        expectWire(wire, I64, what);
        sub.need(8, what);
        m.value = { type: 'double', value: sub.view.getFloat64(sub.pos, true) };
        sub.pos += 8;
        break;
      case 15:
        expectWire(wire, LEN, what);
        m.value = { type: 'string', value: sub.string(what) };
        break;
      case 16:
      case 17:
      case 18:
      case 19:
        expectWire(wire, LEN, what);
        sub.skipLength(what);
        m.value = { type: 'other', field };
        break;
      default:
        sub.skip(wire, what);
    }
  }
  return m;
}

/** Options of decodePayload. */
export interface DecodeOptions {
  /** Most bytes accepted (default DEFAULT_MAX_BYTES). */
  maxBytes?: number;
  /** Most metrics accepted (default DEFAULT_MAX_METRICS). */
  maxMetrics?: number;
}

/**
 * Decodes one Sparkplug B `Payload`. Pure; throws SparkplugDecodeError (see the module
 * contract) and nothing else.
 */
export function decodePayload(buf: Uint8Array, o: DecodeOptions = {}): SparkplugPayload {
  const maxBytes = o.maxBytes ?? DEFAULT_MAX_BYTES;
  const maxMetrics = o.maxMetrics ?? DEFAULT_MAX_METRICS;
  if (buf.length > maxBytes) throw new SparkplugDecodeError('MQTT_ERR_PB_TOO_LARGE', `the payload is ${buf.length} bytes, more than ${maxBytes}`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const r = new Reader(buf, view, 0, buf.length);
  const p: SparkplugPayload = { metrics: [] };
  while (r.pos < r.end) {
    const { field, wire } = r.tag('Payload');
    switch (field) {
      case 1:
        expectWire(wire, VARINT, 'Payload.timestamp');
        r.varint('Payload.timestamp');
        p.timestamp = r.u64();
        break;
      case 2: {
        expectWire(wire, LEN, 'Payload.metrics');
        const n = r.length(`metrics[${p.metrics.length}]`);
        if (p.metrics.length >= maxMetrics) throw new SparkplugDecodeError('MQTT_ERR_PB_TOO_MANY', `more than ${maxMetrics} metrics in one payload`);
        p.metrics.push(decodeMetric(r, r.pos + n, p.metrics.length));
        r.pos += n;
        break;
      }
      case 3:
        expectWire(wire, VARINT, 'Payload.seq');
        r.varint('Payload.seq');
        p.seq = r.u64();
        break;
      case 4:
        expectWire(wire, LEN, 'Payload.uuid');
        p.uuid = r.string('Payload.uuid');
        break;
      case 5:
        expectWire(wire, LEN, 'Payload.body');
        r.skipLength('Payload.body');
        break;
      default:
        r.skip(wire, `Payload field ${field}`);
    }
  }
  return p;
}

/**
 * The number a metric holds, read as its datatype says (`datatype`: the metric's own, else
 * the one its BIRTH declared): Int8/16/32 from int_value as two's complement of that width,
 * Int64 from long_value as two's complement, other integers unsigned, float and double as
 * they are. Null when the metric holds no number (boolean, string, bytes, none) or a NaN
 * or infinite one.
 */
export function metricNumber(v: MetricValue | undefined, datatype: number | undefined): number | null {
  if (!v) return null;
  let n: number;
  switch (v.type) {
    case 'int':
      n = datatype === DataType.Int8 ? (v.value << 24) >> 24 : datatype === DataType.Int16 ? (v.value << 16) >> 16 : datatype === DataType.Int32 ? v.value | 0 : v.value;
      break;
    case 'long':
      n = Number(datatype === DataType.Int64 ? BigInt.asIntN(64, v.value) : v.value);
      break;
    case 'float':
    case 'double':
      n = v.value;
      break;
    default:
      return null;
  }
  return Number.isFinite(n) ? n : null;
}

/** A growable protobuf writer (used by encodePayload, and by tests to build hostile input). */
export class PbWriter {
  private buf = new Uint8Array(64);
  private len = 0;

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const b = new Uint8Array(size);
    b.set(this.buf.subarray(0, this.len));
    this.buf = b;
  }

  /** Appends raw bytes. */
  raw(bytes: ArrayLike<number>): this {
    this.room(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
    return this;
  }

  /** A varint of an unsigned integer below 2^64 (a negative bigint is taken as its 64-bit two's complement). */
  varint(n: number | bigint): this {
    let v = typeof n === 'bigint' ? BigInt.asUintN(64, n) : BigInt(n);
    if (v < 0n) throw new RangeError('PbWriter.varint: negative number; pass a bigint for two\'s complement');
    this.room(10);
    while (v >= 0x80n) {
      this.buf[this.len++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.len++] = Number(v);
    return this;
  }

  tag(field: number, wire: number): this {
    return this.varint(field * 8 + wire);
  }

  bytes(field: number, b: Uint8Array): this {
    this.tag(field, LEN).varint(b.length);
    return this.raw(b);
  }

  string(field: number, s: string): this {
    return this.bytes(field, new TextEncoder().encode(s));
  }

  float(field: number, v: number): this {
    this.tag(field, I32);
    this.room(4);
    new DataView(this.buf.buffer).setFloat32(this.len, v, true);
    this.len += 4;
    return this;
  }

  double(field: number, v: number): this {
    this.tag(field, I64);
    this.room(8);
    new DataView(this.buf.buffer).setFloat64(this.len, v, true);
    this.len += 8;
    return this;
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

/** Encodes one metric (the fields of SparkplugMetric; an `other` value cannot be encoded). */
export function encodeMetric(m: SparkplugMetric): Uint8Array {
  const w = new PbWriter();
  if (m.name !== undefined) w.string(1, m.name);
  if (m.alias !== undefined) w.tag(2, VARINT).varint(m.alias);
  if (m.timestamp !== undefined) w.tag(3, VARINT).varint(m.timestamp);
  if (m.datatype !== undefined) w.tag(4, VARINT).varint(m.datatype);
  if (m.isHistorical !== undefined) w.tag(5, VARINT).varint(m.isHistorical ? 1 : 0);
  if (m.isTransient !== undefined) w.tag(6, VARINT).varint(m.isTransient ? 1 : 0);
  if (m.isNull !== undefined) w.tag(7, VARINT).varint(m.isNull ? 1 : 0);
  const v = m.value;
  if (v) {
    switch (v.type) {
      case 'int':
        w.tag(10, VARINT).varint(v.value >>> 0);
        break;
      case 'long':
        w.tag(11, VARINT).varint(v.value);
        break;
      case 'float':
        w.float(12, v.value);
        break;
      case 'double':
        w.double(13, v.value);
        break;
      case 'boolean':
        w.tag(14, VARINT).varint(v.value ? 1 : 0);
        break;
      case 'string':
        w.string(15, v.value);
        break;
      case 'other':
        throw new RangeError(`encodeMetric: field ${v.field} values cannot be encoded`);
    }
  }
  return w.finish();
}

/** Encodes one Sparkplug B `Payload` (fields in field-number order, as protobuf encoders write them). */
export function encodePayload(p: SparkplugPayload): Uint8Array {
  const w = new PbWriter();
  if (p.timestamp !== undefined) w.tag(1, VARINT).varint(p.timestamp);
  for (const m of p.metrics) w.bytes(2, encodeMetric(m));
  if (p.seq !== undefined) w.tag(3, VARINT).varint(p.seq);
  if (p.uuid !== undefined) w.string(4, p.uuid);
  return w.finish();
}
