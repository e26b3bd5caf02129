/**
 * Payload fuzz (issue 27, test/helpers/payload-fuzz.ts) of the probe answers: a raw TCP server
 * on 127.0.0.1 answers each http check with a mutated HTTP response (status lines of every
 * kind, bad and huge headers, lying Content-Length, broken chunking, cut short, control and
 * unicode characters in the body, then the connection closed). Invariants: probeCoded always
 * resolves (never rejects) with null or a failure whose code is one of HEALTH_ERRORS; the
 * health.probe fact made of it (probeValue) passes validateSignal at `now`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { HEALTH_ERRORS, probeCoded, probeValue, type HealthCheck } from './index.js';
import { BAD_NUMBER_TEXT, BAD_STRINGS, FuzzTally, HUGE, caseName, fuzzRng, mutateText } from '../../test/helpers/payload-fuzz.js';

const NOW = 1_796_000_000_000;
const REGIONS = new Set(['us-va']);
const SEED = 27_014;
const CASES = 400; // one TCP connection each: bounded
const GOOD = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 41\r\n\r\n{"object":"list","data":[{"id":"llama"}]}';

test('payload fuzz: health probe answers from a raw loopback server', async (tc) => {
  const r = fuzzRng(SEED);
  let answer = Buffer.from(GOOD);
  const server = net.createServer((sock) => {
    sock.on('error', () => undefined);
    sock.once('data', () => sock.end(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const check: HealthCheck = { type: 'http', port, path: '/v1/models', expectStatus: [200], bodyMatch: 'llama', insecure: false };
  const t = new FuzzTally('health probe answers', SEED);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  try {
    for (let i = 0; i < CASES; i++) {
      const x = r();
      let text: string;
      let mutations: string[];
      if (x < 0.2) {
        text = GOOD.replace('200 OK', `${pick([...BAD_NUMBER_TEXT, '099', '600', '2000', '20', '-200', '200.5'])} ${pick(BAD_STRINGS).replace(/[\r\n]/g, '')}`);
        mutations = ['status'];
      } else if (x < 0.35) {
        text = GOOD.replace('Content-Length: 41', `Content-Length: ${pick(BAD_NUMBER_TEXT)}`);
        mutations = ['content-length'];
      } else if (x < 0.45) {
        text = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${pick(['ffffffffffffffff', 'zz', '-1', '5'])}\r\n{"da${pick(['', '\r\n0\r\n\r\n', '\r\n'])}`;
        mutations = ['chunked'];
      } else if (x < 0.55) {
        text = `HTTP/1.1 200 OK\r\nX-Big: ${'h'.repeat(pick([100, 20_000, HUGE]))}\r\nContent-Length: 5\r\n\r\nllama`;
        mutations = ['header'];
      } else if (x < 0.65) {
        text = `HTTP/1.1 200 OK\r\nContent-Length: ${HUGE}\r\n\r\n${pick(BAD_STRINGS).repeat(Math.floor(HUGE / 10))}llama`;
        mutations = ['body'];
      } else {
        const m = mutateText(r, GOOD);
        text = m.text;
        mutations = m.mutations;
      }
      t.case(mutations);
      answer = Buffer.from(text, 'latin1');
      const name = caseName(SEED, i, [mutations, text.slice(0, 80)]);
      let failure;
      try {
        failure = await probeCoded('127.0.0.1', check, 2000);
      } catch (e) {
        t.fail(name, `probeCoded rejected: ${(e as Error).message}`);
        continue;
      }
      if (failure !== null && !Object.hasOwn(HEALTH_ERRORS, failure.code)) t.fail(name, `unknown code ${failure.code}`);
      t.saw(failure?.code ?? 'up');
      const fact = { region: 'us-va', kind: 'health.probe', source: 'health/test-node', key: '127.0.0.1', observedAt: NOW, expiresAt: NOW + 15_000, value: probeValue(failure, 1.25) };
      t.emitted(name, [fact], [], NOW, REGIONS);
    }
  } finally {
    server.close();
  }
  assert.deepEqual(t.report(tc), []);
  assert.ok((t.outcomes.up ?? 0) > 0 && Object.keys(t.outcomes).length > 3, 'answers both up and failing of several kinds');
});
