/**
 * Payload fuzz of the subscription webhook (issue 27, test/helpers/payload-fuzz.ts): the VTN's
 * notification fixtures (3.0.1 and 3.1 spellings), mutated and sometimes written as a broken
 * encoder would (bare NaN, cut short), POSTed with the right bearer token to a real listener on
 * loopback. Invariants: every answer is 200 (a notification read) or 400 (refused, naming why),
 * never a 5xx or a dropped connection; each 200 counts a notification and each refusal a
 * refused one; the log never has an error line; the listener still answers its health path
 * after the run. Bounded: 300 cases per spelling, one at a time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { startWebhook } from './webhook.js';
import { FuzzTally, caseName, fuzzRng, jsonText, mutateJson, type LogLine } from '../../test/helpers/payload-fuzz.js';

const fixtures = fileURLToPath(new URL('../../../collectors/openadr3/fixtures/', import.meta.url));
const TOKEN = 'webhook-fuzz-bearer-token-0123';
const CASES = 300;

for (const version of ['3.0.1', '3.1'] as const) {
  test(`payload fuzz: OpenADR ${version} notifications through the webhook`, async (tc) => {
    const fixture = JSON.parse(readFileSync(`${fixtures}notification-${version}.json`, 'utf8')) as unknown;
    const logs: LogLine[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
    const stats = { notifications: 0, notificationsRefused: 0 };
    let polls = 0;
    const hook = await startWebhook({ listen: '127.0.0.1:0', path: '/openadr3/callback', bearerToken: TOKEN }, log, () => polls++, stats);
    tc.after(() => hook.close());
    const url = `http://127.0.0.1:${hook.port}/openadr3/callback`;
    const seed = 27_101 + (version === '3.1' ? 1 : 0);
    const r = fuzzRng(seed);
    const t = new FuzzTally(`openadr3 webhook ${version}`, seed);
    let ok = 0;
    let refused = 0;
    for (let i = 0; i < CASES; i++) {
      const m = mutateJson(r, fixture);
      t.case(m.mutations);
      const body = i % 4 === 3 ? jsonText(r, m.value) : JSON.stringify(m.value);
      let status: number;
      let answer = '';
      try {
        const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) });
        status = res.status;
        answer = await res.text();
      } catch (e) {
        assert.fail(`${caseName(seed, i, m.mutations)}: the request failed: ${(e as Error).message}`);
      }
      assert.ok(status === 200 || status === 400, `${caseName(seed, i, m.mutations)}: answered ${status} ${answer.slice(0, 200)}`);
      if (status === 200) ok++;
      else {
        refused++;
        assert.match(answer, /"title":"(the body is not valid JSON|not a notification: .+)"/, caseName(seed, i, m.mutations));
      }
      t.saw(status === 200 ? 'read' : 'refused');
    }
    assert.equal(stats.notifications, ok, 'every 200 counted as a notification');
    assert.equal(stats.notificationsRefused, refused, 'every refusal counted');
    assert.ok(polls <= ok, 'a poll is asked only for a notification read');
    assert.ok(ok > 0 && refused > 0, `both outcomes seen (read ${ok}, refused ${refused}): the mutations reach the parser`);
    assert.deepEqual(logs.filter((l) => (l.level as number) >= 50).map((l) => l.msg), [], 'no error lines');
    const health = await fetch(`http://127.0.0.1:${hook.port}/healthz`, { signal: AbortSignal.timeout(5000) });
    assert.equal(health.status, 200, 'the listener still answers after the run');
    tc.diagnostic(t.summary());
  });
}
