/**
 * Case tables for the bounded decoders: snappy block (literals, hand-made copy tags with
 * 1-, 2- and 4-byte offsets, overlapping copies, truncation, bad offsets, huge declared
 * lengths) and protobuf WriteRequest (valid, truncated, wrong wire types, groups, 10^6 series).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeWriteRequest, snappyDecode, TooLargeError, WireError } from './wire.js';
import { countByteReads } from '../../test/helpers/work.js';
import { encodeWriteRequest, snappyEncodeLiterals, varint } from './encode.js';

const MiB = 1024 * 1024;
const LIM = { maxSeries: 100_000, maxLabels: 256, maxSamples: 100_000 };
const b = (...x: number[]) => Uint8Array.from(x);
const ascii = (s: string) => [...Buffer.from(s)];

test('snappy: valid streams', () => {
  const cases: Array<[string, Uint8Array, string]> = [
    ['empty', b(0), ''],
    ['one literal', b(5, 4 << 2, ...ascii('hello')), 'hello'],
    // "abcd" then copy1 len 4 offset 4 → "abcdabcd"
    ['copy, 1-byte offset', b(8, 3 << 2, ...ascii('abcd'), 0x01 | (0 << 2) | (0 << 5), 4), 'abcdabcd'],
    // "ab" then copy2 len 6 offset 2 (overlapping) → "abababab"
    ['copy, 2-byte offset, overlapping', b(8, 1 << 2, ...ascii('ab'), 0x02 | ((6 - 1) << 2), 2, 0), 'abababab'],
    // "xyz" then copy4 len 3 offset 3 → "xyzxyz"
    ['copy, 4-byte offset', b(6, 2 << 2, ...ascii('xyz'), 0x03 | ((3 - 1) << 2), 3, 0, 0, 0), 'xyzxyz'],
    // a 1-byte-offset copy with offset high bits: 300 literal bytes then copy len 5 offset     ['copy, 1-byte offset with high bits', b(...varint(305), 61 << 2, 299 & 0xff, 299 >> 8, ...ascii('ABCDE' + 'q'.repeat(295)), 0x01 | (1 << 2) | (1 << 5), 44), 'ABCDE' + 'q'.repeat(295) + 'ABCDE'],
    ['run of one byte (offset 1)', b(10, 0 << 2, ...ascii('z'), 0x02 | (8 << 2), 1, 0), 'z'.repeat(10)],
  ];
  for (const [name, input, want] of cases) assert.equal(snappyDecode(input, MiB).toString('latin1'), want, name);
  const big = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251));
  assert.deepEqual(snappyDecode(snappyEncodeLiterals(big), MiB), big, 'literal-only encoder, several chunks');
});

test('snappy: malformed and hostile streams', () => {
  const cases: Array<[string, Uint8Array, RegExp, typeof WireError | typeof TooLargeError]> = [
    ['no preamble', b(), /truncated length preamble/, WireError],
    ['preamble cut', b(0x80), /truncated length preamble/, WireError],
    ['preamble too long', b(0x80, 0x80, 0x80, 0x80, 0x80, 0x01), /longer than 5 bytes/, WireError],
    ['huge declared length', b(0xff, 0xff, 0xff, 0xff, 0x0f), /more than/, TooLargeError],
    ['declared just above the limit', b(...varint(MiB + 1), 0), /more than 1048576/, TooLargeError],
    ['literal cut short', b(5, 4 << 2, ...ascii('hel')), /runs past the input/, WireError],
    ['literal length bytes cut', b(100, 62 << 2, 1), /truncated literal length/, WireError],
    ['literal beyond declared', b(2, 4 << 2, ...ascii('hello')), /past the declared length/, WireError],
    ['output shorter than declared', b(9, 4 << 2, ...ascii('hello')), /ends after 5 of 9/, WireError],
    ['copy before any output', b(4, 0x01, 1), /outside the output/, WireError],
    ['copy offset 0', b(8, 3 << 2, ...ascii('abcd'), 0x01, 0), /offset 0/, WireError],
    ['copy offset beyond output', b(8, 3 << 2, ...ascii('abcd'), 0x01, 5), /offset 5 .* outside/, WireError],
    ['copy4 offset huge', b(8, 3 << 2, ...ascii('abcd'), 0x03 | (3 << 2), 0xff, 0xff, 0xff, 0xff), /outside the output/, WireError],
    ['copy beyond declared', b(6, 3 << 2, ...ascii('abcd'), 0x01, 4), /past the declared length/, WireError],
    ['copy1 cut', b(8, 3 << 2, ...ascii('abcd'), 0x01), /truncated copy \(1-byte/, WireError],
    ['copy2 cut', b(8, 3 << 2, ...ascii('abcd'), 0x02, 4), /truncated copy \(2-byte/, WireError],
    ['copy4 cut', b(8, 3 << 2, ...ascii('abcd'), 0x03, 4, 0, 0), /truncated copy \(4-byte/, WireError],
  ];
  for (const [name, input, re, cls] of cases) {
    assert.throws(() => snappyDecode(input, MiB), (e: unknown) => e instanceof cls && re.test((e as Error).message), name);
  }
});

const series = (name: string, labels: Record<string, string>, value: number, timestamp: number) => ({ labels: { __name__: name, ...labels }, samples: [{ value, timestamp }] });

test('protobuf: valid WriteRequests', () => {
  const w = encodeWriteRequest([series('vllm:num_requests_waiting', { job: 'vllm' }, 3, 1_800_000_000_000), { labels: { __name__: 'x', é: 'ü' }, samples: [{ value: -1.5, timestamp: -5 }, { value: NaN, timestamp: 7 }] }]);
  const got = decodeWriteRequest(w, LIM);
  assert.equal(got.length, 2);
  assert.deepEqual(got[0], { labels: [['__name__', 'vllm:num_requests_waiting'], ['job', 'vllm']], samples: [{ value: 3, timestamp: 1_800_000_000_000 }] });
  assert.deepEqual(got[1]!.labels, [['__name__', 'x'], ['é', 'ü']]);
  assert.equal(got[1]!.samples[0]!.timestamp, -5);
  assert.ok(Number.isNaN(got[1]!.samples[1]!.value));
  assert.deepEqual(decodeWriteRequest(b(), LIM), [], 'empty request');
  // Metadata (field 3) and unknown fields of every wire type are skipped.
  const extra = Buffer.concat([b(0x1a, 3, 1, 2, 3), w, b(0x28, 0x96, 0x01), b(0x31, 1, 2, 3, 4, 5, 6, 7, 8), b(0x3d, 1, 2, 3, 4)]);
  assert.equal(decodeWriteRequest(extra, LIM).length, 2);
  // Exemplars (3) and histograms (4) inside a TimeSeries are skipped.
  const ts = Buffer.concat([b(0x0a, 5, 0x0a, 1, 0x61, 0x12, 0), b(0x1a, 2, 0, 0), b(0x22, 0)]);
  assert.deepEqual(decodeWriteRequest(Buffer.concat([b(0x0a, ts.length), ts]), LIM), [{ labels: [['a', '']], samples: [] }]);
});

test('protobuf: malformed and hostile WriteRequests', () => {
  const w = encodeWriteRequest([series('m', { a: 'b' }, 1, 2)]);
  const cases: Array<[string, Uint8Array, RegExp]> = [
    ['truncated in the middle', w.subarray(0, w.length - 3), /runs past the end|truncated/],
    ['truncated tag varint', b(0x80), /truncated varint/],
    ['varint too long', b(0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), /longer than 10 bytes/],
    ['field number 0', b(0x02, 0), /invalid field number 0/],
    ['series as varint', b(0x08, 1), /field 1 of WriteRequest has wire type 0, expected 2/],
    ['label as fixed64', b(0x0a, 9, 0x09, 1, 2, 3, 4, 5, 6, 7, 8), /field 1 of TimeSeries has wire type 1/],
    ['label name as varint', b(0x0a, 4, 0x0a, 2, 0x08, 1), /field 1 of Label has wire type 0/],
    ['sample value as varint', b(0x0a, 4, 0x12, 2, 0x08, 1), /field 1 of Sample has wire type 0, expected 1/],
    ['sample timestamp as fixed32', b(0x0a, 7, 0x12, 5, 0x15, 1, 2, 3, 4), /field 2 of Sample has wire type 5, expected 0/],
    ['double cut', b(0x0a, 6, 0x12, 4, 0x09, 1, 2, 3), /truncated double/],
    ['length past the message', b(0x0a, 0x7f, 1, 2), /runs past the end/],
    ['inner length past the series', b(0x0a, 3, 0x0a, 9, 0), /runs past the end/],
    ['start group', b(0x0b), /wire type 3/],
    ['wire type 7', b(0x0f), /wire type 7/],
    ['bad UTF-8 label', b(0x0a, 5, 0x0a, 3, 0x0a, 1, 0xff), /not valid UTF-8/],
    ['fixed32 cut', b(0x15, 1, 2), /truncated fixed32/],
    ['fixed64 cut', b(0x11, 1, 2), /truncated fixed64/],
  ];
  for (const [name, input, re] of cases) {
    assert.throws(() => decodeWriteRequest(input, LIM), (e: unknown) => e instanceof WireError && re.test((e as Error).message), name);
  }
  const manyLabels = encodeWriteRequest([{ labels: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`l${i}`, 'v'])), samples: [] }]);
  assert.throws(() => decodeWriteRequest(manyLabels, LIM), /more than 256 labels/);
});

test('protobuf: 10^6 series are refused at the bound, reading nothing past it', () => {
  const one = encodeWriteRequest([series('m', {}, 1, 1)]);
  const million = Buffer.alloc(one.length * 1_000_000);
  for (let i = 0; i < 1_000_000; i++) one.copy(million, i * one.length);
  // Work is counted in bytes read, not timed: series 100 001's tag is the last thing read.
  const counted = countByteReads(million);
  assert.throws(() => decodeWriteRequest(counted.buf, LIM), (e: unknown) => e instanceof TooLargeError && /more than 100000 time series/.test((e as Error).message));
  assert.ok(counted.reads() <= 100_001 * one.length, `${counted.reads()} bytes read to refuse series 100 001 (${one.length} bytes each)`);
  // The same million empty series are refused too (no per-series allocation dodge).
  assert.throws(() => decodeWriteRequest(Buffer.alloc(2_000_000, 0).fill(Buffer.from([0x0a, 0])), LIM), TooLargeError);
  const samples = encodeWriteRequest([{ labels: { __name__: 'm' }, samples: Array.from({ length: 11 }, (_, i) => ({ value: i, timestamp: i })) }]);
  assert.throws(() => decodeWriteRequest(samples, { ...LIM, maxSamples: 10 }), /more than 10 samples/);
});
