/**
 * Bounded decoders for Prometheus remote-write 1.0 bodies: the snappy block format and the
 * protobuf messages `prometheus.WriteRequest`, `TimeSeries`, `Label` and `Sample`
 * (prometheus/prompb types.proto and remote.proto). Written for hostile input: one pass, no
 * recursion, every length checked against what is left and against the caller's limits
 * before anything is allocated. A malformed input throws WireError; input beyond a limit
 * throws TooLargeError. Nothing else is thrown.
 */

/** The input is not valid snappy or protobuf; `message` names the problem. */
export class WireError extends Error {
  override name = 'WireError';
}

/** The input declares or holds more than a limit allows. */
export class TooLargeError extends Error {
  override name = 'TooLargeError';
}

// ---- snappy (block format, https://github.com/google/snappy/blob/main/format_description.txt)

/**
 * Decompresses one snappy block (not the framed stream format). Refuses a declared
 * uncompressed length above `maxOut` bytes (TooLargeError) before allocating; refuses
 * truncated tags, copies with offset 0 or reaching before the output start, and any
 * output longer or shorter than declared (WireError). Overlapping copies are allowed.
 */
export function snappyDecode(src: Uint8Array, maxOut: number): Buffer {
  let pos = 0;
  // Preamble: the uncompressed length, a varint of at most 32 bits (5 bytes).
  let len = 0;
  for (let shift = 0; ; shift += 7) {
    if (pos >= src.length) throw new WireError('snappy: truncated length preamble');
    if (shift > 28) throw new WireError('snappy: length preamble longer than 5 bytes');
    const b = src[pos++]!;
    len += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) break;
  }
  if (len > 0xffffffff) throw new WireError('snappy: declared length above 2^32 - 1');
  if (len > maxOut) throw new TooLargeError(`snappy: declared uncompressed length ${len} bytes is more than ${maxOut}`);
  const out = Buffer.allocUnsafe(len);
  let o = 0;
  while (pos < src.length) {
    const tag = src[pos++]!;
    const type = tag & 3;
    if (type === 0) {
      let n = tag >>> 2;
      if (n >= 60) {
        const extra = n - 59; // 1 to 4 bytes, little-endian
        if (pos + extra > src.length) throw new WireError('snappy: truncated literal length');
        n = 0;
        for (let i = 0; i < extra; i++) n += src[pos + i]! * 2 ** (8 * i);
        pos += extra;
      }
      n += 1;
      if (n > src.length - pos) throw new WireError(`snappy: literal of ${n} bytes at offset ${pos - 1} runs past the input`);
      if (n > len - o) throw new WireError(`snappy: literal of ${n} bytes runs past the declared length ${len}`);
      out.set(src.subarray(pos, pos + n), o);
      pos += n;
      o += n;
      continue;
    }
    let n: number;
    let offset: number;
    if (type === 1) {
      if (pos + 1 > src.length) throw new WireError('snappy: truncated copy (1-byte offset)');
      n = 4 + ((tag >>> 2) & 7);
      offset = ((tag >>> 5) << 8) | src[pos]!;
      pos += 1;
    } else if (type === 2) {
      if (pos + 2 > src.length) throw new WireError('snappy: truncated copy (2-byte offset)');
      n = 1 + (tag >>> 2);
      offset = src[pos]! | (src[pos + 1]! << 8);
      pos += 2;
    } else {
      if (pos + 4 > src.length) throw new WireError('snappy: truncated copy (4-byte offset)');
      n = 1 + (tag >>> 2);
      offset = src[pos]! + src[pos + 1]! * 2 ** 8 + src[pos + 2]! * 2 ** 16 + src[pos + 3]! * 2 ** 24;
      pos += 4;
    }
    if (offset === 0 || offset > o) throw new WireError(`snappy: copy offset ${offset} at output byte ${o} is outside the output`);
    if (n > len - o) throw new WireError(`snappy: copy of ${n} bytes runs past the declared length ${len}`);
    if (offset >= n) {
      out.copyWithin(o, o - offset, o - offset + n);
      o += n;
    } else {
      for (let i = 0; i < n; i++, o++) out[o] = out[o - offset]!;
    }
  }
  if (o !== len) throw new WireError(`snappy: the input ends after ${o} of ${len} declared bytes`);
  return out;
}

// ---- protobuf ----------------------------------------------------------------------------

/** One decoded TimeSeries: label pairs as sent, samples as sent (value, ms epoch). */
export interface WireSeries {
  labels: Array<[name: string, value: string]>;
  samples: Array<{ value: number; timestamp: number }>;
}

export interface DecodeLimits {
  /** At most this many TimeSeries (TooLargeError beyond). */
  maxSeries: number;
  /** At most this many labels in one series (WireError beyond: no exporter sends that many). */
  maxLabels: number;
  /** At most this many samples in one series (TooLargeError beyond). */
  maxSamples: number;
}

/** A cursor over one protobuf message (bytes [pos, end)). */
class Reader {
  constructor(
    readonly buf: Uint8Array,
    public pos: number,
    readonly end: number,
    readonly what: string,
  ) {}

  /** A varint up to 64 bits as a JS number (exact below 2^53; int64 negatives come out negative). */
  varint(): number {
    let lo = 0;
    let hi = 0;
    const b = this.buf;
    for (let i = 0; ; i++) {
      if (this.pos >= this.end) throw new WireError(`protobuf: truncated varint in ${this.what}`);
      if (i >= 10) throw new WireError(`protobuf: varint longer than 10 bytes in ${this.what}`);
      const x = b[this.pos++]!;
      if (i < 4) lo += (x & 0x7f) * 2 ** (7 * i);
      else if (i === 4) {
        lo += (x & 0x0f) * 2 ** 28;
        hi += (x & 0x7f) >>> 4;
      } else hi += (x & 0x7f) * 2 ** (7 * (i - 5) + 3);
      if (x < 0x80) break;
    }
    hi = hi % 2 ** 32;
    return hi >= 2 ** 31 ? (hi - 2 ** 32) * 2 ** 32 + lo : hi * 2 ** 32 + lo;
  }

  /** A length-delimited field's [start, end). */
  bytes(): [number, number] {
    const n = this.varint();
    if (n < 0 || n > this.end - this.pos) throw new WireError(`protobuf: length ${n} in ${this.what} runs past the end of the message`);
    const s = this.pos;
    this.pos += n;
    return [s, this.pos];
  }

  double(): number {
    if (this.end - this.pos < 8) throw new WireError(`protobuf: truncated double in ${this.what}`);
    const v = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.pos, 8).readDoubleLE(0);
    this.pos += 8;
    return v;
  }

  /** Skips a field of an unknown number; groups (wire types 3, 4) and types 6, 7 are refused. */
  skip(wire: number, field: number): void {
    switch (wire) {
      case 0:
        this.varint();
        return;
      case 1:
        if (this.end - this.pos < 8) throw new WireError(`protobuf: truncated fixed64 field ${field} in ${this.what}`);
        this.pos += 8;
        return;
      case 2:
        this.bytes();
        return;
      case 5:
        if (this.end - this.pos < 4) throw new WireError(`protobuf: truncated fixed32 field ${field} in ${this.what}`);
        this.pos += 4;
        return;
      default:
        throw new WireError(`protobuf: wire type ${wire} (field ${field}) in ${this.what} is not supported`);
    }
  }

  /** The next tag as [field, wire type]. */
  tag(): [number, number] {
    const t = this.varint();
    const field = Math.floor(t / 8);
    if (t < 0 || field === 0 || field > 536_870_911) throw new WireError(`protobuf: invalid field number ${field} in ${this.what}`);
    return [field, t % 8];
  }
}

function expectWire(got: number, want: number, field: number, what: string): void {
  if (got !== want) throw new WireError(`protobuf: field ${field} of ${what} has wire type ${got}, expected ${want}`);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
function str(buf: Uint8Array, s: number, e: number, what: string): string {
  try {
    return utf8.decode(buf.subarray(s, e));
  } catch {
    throw new WireError(`protobuf: ${what} is not valid UTF-8`);
  }
}

/**
 * Decodes a `prometheus.WriteRequest` (remote-write 1.0): field 1 TimeSeries, field 3
 * metadata (skipped), unknown fields skipped. In a TimeSeries: 1 Label, 2 Sample; exemplars
 * and native histograms (3, 4) are skipped. A known field with the wrong wire type, a
 * truncated field, or a group is a WireError; more than `maxSeries` series or `maxSamples`
 * samples in one series is a TooLargeError.
 */
export function decodeWriteRequest(buf: Uint8Array, lim: DecodeLimits): WireSeries[] {
  const out: WireSeries[] = [];
  const r = new Reader(buf, 0, buf.length, 'WriteRequest');
  while (r.pos < r.end) {
    const [f, w] = r.tag();
    if (f !== 1) {
      r.skip(w, f);
      continue;
    }
    expectWire(w, 2, f, 'WriteRequest');
    if (out.length >= lim.maxSeries) throw new TooLargeError(`protobuf: more than ${lim.maxSeries} time series in one request`);
    const [s, e] = r.bytes();
    out.push(decodeSeries(buf, s, e, lim));
  }
  return out;
}

function decodeSeries(buf: Uint8Array, start: number, end: number, lim: DecodeLimits): WireSeries {
  const ts: WireSeries = { labels: [], samples: [] };
  const r = new Reader(buf, start, end, 'TimeSeries');
  while (r.pos < r.end) {
    const [f, w] = r.tag();
    if (f === 1) {
      expectWire(w, 2, f, 'TimeSeries');
      if (ts.labels.length >= lim.maxLabels) throw new WireError(`protobuf: more than ${lim.maxLabels} labels in one time series`);
      const [s, e] = r.bytes();
      const l = new Reader(buf, s, e, 'Label');
      let name = '';
      let value = '';
      while (l.pos < l.end) {
        const [lf, lw] = l.tag();
        if (lf === 1 || lf === 2) {
          expectWire(lw, 2, lf, 'Label');
          const [a, b] = l.bytes();
          if (lf === 1) name = str(buf, a, b, 'a label name');
          else value = str(buf, a, b, 'a label value');
        } else l.skip(lw, lf);
      }
      ts.labels.push([name, value]);
    } else if (f === 2) {
      expectWire(w, 2, f, 'TimeSeries');
      if (ts.samples.length >= lim.maxSamples) throw new TooLargeError(`protobuf: more than ${lim.maxSamples} samples in one time series`);
      const [s, e] = r.bytes();
      const sr = new Reader(buf, s, e, 'Sample');
      let value = 0;
      let timestamp = 0;
      while (sr.pos < sr.end) {
        const [sf, sw] = sr.tag();
        if (sf === 1) {
          expectWire(sw, 1, sf, 'Sample');
          value = sr.double();
        } else if (sf === 2) {
          expectWire(sw, 0, sf, 'Sample');
          timestamp = sr.varint();
        } else sr.skip(sw, sf);
      }
      ts.samples.push({ value, timestamp });
    } else r.skip(w, f);
  }
  return ts;
}
