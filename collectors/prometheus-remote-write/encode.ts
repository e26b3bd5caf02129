/**
 * Encoders used only by the tests (and handy for a manual `curl --data-binary`): a snappy
 * block encoder that emits literals only (a valid stream that any decoder must accept) and a
 * protobuf encoder of `prometheus.WriteRequest`. Never imported by the collector itself.
 */

/** A varint of a non-negative integer below 2^53, or of a negative int64 (10 bytes). */
export function varint(n: number): number[] {
  const out: number[] = [];
  if (n < 0) {
    let v = BigInt.asUintN(64, BigInt(n));
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    return out;
  }
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return out;
}

/** Snappy block format with literals only (chunks of at most 65 536 bytes). */
export function snappyEncodeLiterals(data: Uint8Array): Buffer {
  const parts: Buffer[] = [Buffer.from(varint(data.length))];
  for (let i = 0; i < data.length; i += 65536) {
    const chunk = data.subarray(i, Math.min(i + 65536, data.length));
    const n = chunk.length - 1;
    if (n < 60) parts.push(Buffer.from([n << 2]));
    else if (n < 256) parts.push(Buffer.from([60 << 2, n]));
    else parts.push(Buffer.from([61 << 2, n & 0xff, n >>> 8]));
    parts.push(Buffer.from(chunk));
  }
  return Buffer.concat(parts);
}

const tag = (field: number, wire: number): number[] => varint(field * 8 + wire);
const lenField = (field: number, body: Uint8Array): Buffer => Buffer.concat([Buffer.from([...tag(field, 2), ...varint(body.length)]), body]);

export interface SeriesIn {
  /** Label pairs; `__name__` is the metric name. Sent in the order given. */
  labels: Record<string, string>;
  samples: Array<{ value: number; timestamp: number }>;
}

export function encodeSeries(s: SeriesIn): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(s.labels)) parts.push(lenField(1, Buffer.concat([lenField(1, Buffer.from(k)), lenField(2, Buffer.from(v))])));
  for (const x of s.samples) {
    const d = Buffer.alloc(8);
    d.writeDoubleLE(x.value);
    parts.push(lenField(2, Buffer.concat([Buffer.from(tag(1, 1)), d, Buffer.from([...tag(2, 0), ...varint(x.timestamp)])])));
  }
  return Buffer.concat(parts);
}

/** A WriteRequest of these series (field 1 each). */
export function encodeWriteRequest(series: readonly SeriesIn[]): Buffer {
  return Buffer.concat(series.map((s) => lenField(1, encodeSeries(s))));
}

/** The body a remote-write 1.0 client sends: snappy (literals) of the WriteRequest. */
export function remoteWriteBody(series: readonly SeriesIn[]): Buffer {
  return snappyEncodeLiterals(encodeWriteRequest(series));
}
