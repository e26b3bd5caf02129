/**
 * GRIDSTEER_TEST_CLOCK: accepted and refused forms (case table), and a process started with a
 * malformed value stops with one clear line and exit status 2 instead of serving on a wrong clock.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { parseTestClock } from './clock.js';

const cases: [string | undefined, ReturnType<typeof parseTestClock> | RegExp][] = [
  [undefined, null],
  ['', null],
  ['1800000000000@20@1764460800000', { fake: 1_800_000_000_000, rate: 20, real: 1_764_460_800_000 }],
  ['1800000000000@1.5@1764460800000', { fake: 1_800_000_000_000, rate: 1.5, real: 1_764_460_800_000 }],
  ['1800000000000@0@1764460800000', { fake: 1_800_000_000_000, rate: 0, real: 1_764_460_800_000 }],
  ['1800000000000@0.5@1764460800000', /rate 1–1000, or 0 to stand still/],
  ['1800000000000@2000@1764460800000', /rate 1–1000, or 0 to stand still/],
  ['1800000000000@20', /<fake ms epoch>@<rate 1–1000, or 0 to stand still>@<real ms epoch>/],
  ['yesterday@20@1764460800000', /unset it to use the real clock/],
];
for (const [input, want] of cases) {
  test(`parseTestClock(${JSON.stringify(input)})`, () => {
    if (want instanceof RegExp) assert.throws(() => parseTestClock(input), want);
    else assert.deepEqual(parseTestClock(input), want);
  });
}

test('a malformed GRIDSTEER_TEST_CLOCK stops the process at start-up with one line and status 2', async () => {
  const cli = fileURLToPath(new URL('../cli/main.js', import.meta.url));
  const config = fileURLToPath(new URL('../../../gridsteer.yaml', import.meta.url));
  // serve loads the clock (check-config and version do not need it); with a good clock it would
  // keep serving until the 20 s bound kills it, and the status would not be 2.
  const args = [cli, 'serve', '--config', config, '--workers', '0', '--dns-listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0'];
  const r = await promisify(execFile)(process.execPath, args, { env: { ...process.env, GRIDSTEER_TEST_CLOCK: 'soon' }, timeout: 20_000 }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^gridsteer: GRIDSTEER_TEST_CLOCK="soon" is not <fake ms epoch>@<rate 1–1000, or 0 to stand still>@<real ms epoch>; unset it to use the real clock\n$/);
});
