/**
 * Payload fuzz (issue 27, test/helpers/payload-fuzz.ts): the exporters' exposition fixtures
 * (vLLM, SGLang, TGI, TensorRT-LLM, DCGM), mutated as text, through what a scrape does with a
 * body: parseExposition, readTarget, noteRejected (the counting and logging of refused
 * samples), and the load.metrics and capacity facts a scrape emits. Invariants: the parser
 * throws nothing but ExpositionError (the scrape's PROM_ERR_FORMAT); every fact passes
 * validateSignal; every refused sample is counted in `rejectedSamples` and logged naming the
 * metric and the field.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { noteRejected, prometheusCounters, readTarget, QUEUE_METRICS, RUNNING_METRICS, KV_METRICS, DCGM } from './index.js';
import { ExpositionError, parseExposition } from './parse.js';
import { BAD_NUMBER_TEXT, FuzzTally, caseName, fuzzContext, fuzzRng, mutateText, signalProblem } from '../../test/helpers/payload-fuzz.js';

const dir = fileURLToPath(new URL('../../../collectors/prometheus/fixtures/', import.meta.url));
const FIXTURES = readdirSync(dir)
  .filter((f) => f.endsWith('.prom'))
  .sort()
  .map((f) => ({ name: f, text: readFileSync(dir + f, 'utf8') }));
const NOW = 1_796_000_000_000;
const REGIONS = new Set(['us-va']);
const SEED = 27_003;
const CASES = 3000;
const KNOWN = new Set<string>([...QUEUE_METRICS, ...RUNNING_METRICS, ...KV_METRICS, ...Object.values(DCGM)]);
const FIELD = /\((queueDepth|runningRequests|kvCacheUse|gpuMemoryUse)\)/;

test('payload fuzz: exposition text through parseExposition, readTarget and noteRejected', (tc) => {
  const r = fuzzRng(SEED);
  const t = new FuzzTally('prometheus exposition', SEED);
  const { ctx, logs } = fuzzContext({}, NOW, REGIONS);
  for (let i = 0; i < CASES; i++) {
    const fx = FIXTURES[i % FIXTURES.length]!;
    // Half the cases first give one sample of a known metric a bad value (the generator's number
    // mutation alone mostly hits buckets and label values).
    let text = fx.text;
    const known = text.split('\n').filter((l) => KNOWN.has(l.split(/[{ ]/)[0]!));
    const pre: string[] = [];
    if (known.length > 0 && r() < 0.5) {
      const line = known[Math.floor(r() * known.length)]!;
      text = text.replace(line, line.replace(/ \S+$/, ` ${BAD_NUMBER_TEXT[Math.floor(r() * BAD_NUMBER_TEXT.length)]!}`));
      pre.push('known-value');
    }
    const m = mutateText(r, text, { open: '{', close: '}' });
    m.mutations.unshift(...(pre as typeof m.mutations));
    t.case(m.mutations);
    const name = caseName(SEED, i, [fx.name, ...m.mutations]);
    let samples;
    try {
      samples = parseExposition(m.text, { maxSeries: 100_000, keep: (n) => KNOWN.has(n) }).samples;
    } catch (e) {
      if (e instanceof ExpositionError) t.saw('format refused');
      else t.fail(name, `parseExposition threw ${(e as Error).name}: ${(e as Error).message}`);
      continue;
    }
    let reading;
    try {
      reading = readTarget(samples, undefined, null, { throttleTempC: 87, xidBurst: 3 });
    } catch (e) {
      t.fail(name, `readTarget threw: ${(e as Error).message}`);
      continue;
    }
    const stats = prometheusCounters.create();
    const logsBefore = logs.length;
    noteRejected(ctx.log, stats, { rejected: '' }, 'collectors/prometheus: fuzz', { target: fx.name }, reading);
    if (stats.rejectedSamples !== reading.rejectedCount) t.fail(name, `rejectedSamples ${stats.rejectedSamples}, the reading rejected ${reading.rejectedCount}`);
    if (reading.rejectedCount > 0) {
      t.saw('samples refused', reading.rejectedCount);
      const line = logs.slice(logsBefore).find((l) => l.level === 40);
      if (!line) t.fail(name, 'refused samples were not logged');
      for (const why of reading.rejected) if (!FIELD.test(why)) t.fail(name, `a refusal does not name the field: ${why}`);
    }
    const base = { region: 'us-va', source: 'prometheus/127.0.0.1:8000', key: fx.name, observedAt: NOW, expiresAt: NOW + 30_000 };
    const facts: unknown[] = [];
    if (Object.keys(reading.load).length > 0) facts.push({ ...base, kind: 'load.metrics', value: reading.load });
    if (reading.gpus > 0) facts.push({ ...base, kind: 'capacity', value: { fraction: Math.max(0, reading.gpus - reading.unusable.length) / reading.gpus } });
    t.saw('facts', facts.length);
    for (const f of facts) {
      const why = signalProblem(f, NOW, REGIONS);
      if (why !== null) t.fail(name, `a fact the state layer refuses (${why}): ${JSON.stringify(f).slice(0, 300)}`);
    }
  }
  assert.deepEqual(t.report(tc), []);
  assert.ok((t.outcomes['samples refused'] ?? 0) > CASES / 10, 'the mutations reached the known metrics');
  assert.ok((t.outcomes.facts ?? 0) > CASES / 2, 'most cases still made facts');
});
