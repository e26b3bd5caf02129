/**
 * Payload fuzz (issue 27, test/helpers/payload-fuzz.ts): remote-write requests built from the
 * prometheus collector's vLLM and DCGM fixtures, mutated — sample values NaN, ±Inf, 1e308, -1,
 * -0, 2^53 + 1, above MAX_COUNT; timestamps negative, in seconds, in µs, 2^63 − 1, far past and
 * future; extra and huge labels; series repeated; bytes flipped, cut or appended — POSTed to the
 * receiver started on 127.0.0.1 (port 0). Invariants: every request is answered (204 or a
 * failure status counted in its counter), never an internal error; every emitted fact passes
 * validateSignal at the receiver's `now`; every refused sample is counted in `rejectedSamples`
 * and logged naming the metric and the field. The clock moves past expireMs between cases so
 * that no case's series outlive it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Value } from '@sinclair/typebox/value';
import { prometheusRemoteWrite, remoteWriteCounters, RemoteWriteConfigSchema, type RemoteWriteConfig } from './index.js';
import { encodeWriteRequest, snappyEncodeLiterals, type SeriesIn } from './encode.js';
import { parseExposition } from '../prometheus/parse.js';
import { DCGM, KV_METRICS, QUEUE_METRICS, RUNNING_METRICS } from '../prometheus/index.js';
import type { CounterFamily } from '../kit/counters.js';
import { BAD_EPOCHS, BAD_NUMBERS, BAD_STRINGS, FuzzTally, HUGE, caseName, fuzzContext, fuzzRng } from '../../test/helpers/payload-fuzz.js';

const dir = fileURLToPath(new URL('../../../collectors/prometheus/fixtures/', import.meta.url));
const REGIONS = new Set(['us-va', 'eu-ie']);
const SEED = 27_006;
const CASES = 1500;
const T0 = 1_796_000_000_000;
const EXPIRE = 60_000;
const KNOWN = new Set<string>([...QUEUE_METRICS, ...RUNNING_METRICS, ...KV_METRICS, ...Object.values(DCGM)]);
const FIELD = /\((queueDepth|runningRequests|kvCacheUse|gpuMemoryUse)\)/;

function seriesOf(file: string, labels: Record<string, string>): SeriesIn[] {
  return parseExposition(readFileSync(dir + file, 'utf8')).samples.map((s) => ({ labels: { __name__: s.name, ...s.labels, ...labels }, samples: [{ value: s.value, timestamp: 0 }] }));
}

function post(port: number, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: '/api/v1/write', method: 'POST', headers: { 'content-encoding': 'snappy', 'content-type': 'application/x-protobuf', 'content-length': String(body.length) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end(body);
  });
}

test('payload fuzz: remote-write samples through the receiver on loopback', async (tc) => {
  const cfg = Value.Default(
    RemoteWriteConfigSchema,
    structuredClone({
      listen: '127.0.0.1:0',
      expireMs: EXPIRE,
      sources: [
        { region: 'us-va', match: { job: 'vllm', cluster: 'va-1' } },
        { region: 'eu-ie', match: { job: 'dcgm', cluster: 'ie-1' }, key: 'gpu-node-07' },
      ],
    }),
  ) as RemoteWriteConfig;
  assert.ok(Value.Check(RemoteWriteConfigSchema, cfg));
  let now = T0;
  const { ctx, emitted, logs } = fuzzContext(cfg, () => now, REGIONS);
  let stats: ReturnType<typeof remoteWriteCounters.create> | null = null;
  ctx.counters = <T extends object>(family: CounterFamily<T>): T => (stats = family.create() as never) as T;
  const stop = await prometheusRemoteWrite.start(ctx);
  try {
    const st = stats!;
    const port = Number(String(st.listening).split(':').pop());
    const base = [...seriesOf('vllm.prom', { job: 'vllm', cluster: 'va-1' }), ...seriesOf('dcgm-exporter.prom', { job: 'dcgm', cluster: 'ie-1' })];
    const r = fuzzRng(SEED);
    const t = new FuzzTally('prometheus-remote-write', SEED);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    for (let i = 0; i < CASES; i++) {
      now += EXPIRE + 1;
      const series: SeriesIn[] = base.map((s) => ({ labels: { ...s.labels }, samples: [{ value: s.samples[0]!.value, timestamp: now - 1000 }] }));
      const mutations: string[] = [];
      for (let k = 0, n = 1 + Math.floor(r() * 4); k < n; k++) {
        // Mostly a series of a metric the receiver reads (most of the DCGM fixture's are not).
        const s = r() < 0.8 ? pick(series.filter((x) => KNOWN.has(x.labels.__name__!))) : pick(series);
        const x = r();
        if (x < 0.5) {
          s.samples[0]!.value = pick(BAD_NUMBERS);
          mutations.push('value');
        } else if (x < 0.7) {
          s.samples[0]!.timestamp = pick([...BAD_EPOCHS.filter((e) => Number.isSafeInteger(e)), -1_796_000_000_000, 2 ** 53 - 1]);
          mutations.push('timestamp');
        } else if (x < 0.8) {
          s.samples.push({ value: pick(BAD_NUMBERS), timestamp: now - 500 }, { value: 1, timestamp: now + 10 ** 12 });
          mutations.push('samples');
        } else if (x < 0.9) {
          s.labels[pick(['extra', 'model_name', 'gpu', 'UUID'])] = r() < 0.5 ? pick(BAD_STRINGS).replace(/[\ud800-\udfff]/g, '?') : 'x'.repeat(HUGE / 10);
          mutations.push('label');
        } else {
          for (let j = 0; j < 50; j++) series.push(structuredClone(s));
          mutations.push('repeat');
        }
      }
      let body = snappyEncodeLiterals(encodeWriteRequest(series));
      if (r() < 0.15) {
        const b = Buffer.from(body);
        const y = r();
        if (y < 0.4) for (let k = 0; k < 1 + Math.floor(r() * 8); k++) b[Math.floor(r() * b.length)]! ^= 1 << Math.floor(r() * 8);
        body = y < 0.4 ? b : y < 0.7 ? b.subarray(0, Math.floor(r() * b.length)) : Buffer.concat([b, Buffer.from([0xff, 0x01, 0x00])]);
        mutations.push('bytes');
      }
      t.case(mutations);
      const name = caseName(SEED, i, mutations);
      const before = { ...st };
      const emittedBefore = emitted.length;
      const logsBefore = logs.length;
      const status = await post(port, body);
      t.saw(`HTTP ${status}`);
      if (status !== 204 && st.malformed + st.tooLarge === before.malformed + before.tooLarge) t.fail(name, `HTTP ${status} counted in no failure counter`);
      t.emitted(name, emitted.slice(emittedBefore), logs.slice(logsBefore), now, REGIONS);
      const lines = logs.slice(logsBefore).filter((l) => /samples refused/.test(l.msg));
      t.refusals(name, 'samples refused', st.rejectedSamples - before.rejectedSamples, lines, FIELD);
    }
    assert.deepEqual(t.report(tc), []);
    assert.ok((t.outcomes['samples refused'] ?? 0) > CASES / 20, 'the mutations reached the known metrics (most DCGM ones are log-only or unbounded)');
    assert.ok((t.outcomes.signals ?? 0) > CASES, 'most requests still made facts');
  } finally {
    await stop();
  }
});
