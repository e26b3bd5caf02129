/**
 * `gridsteer simulate`: usage errors exit 2, a bad scenario exits 1 with the file and path,
 * a tiny scenario writes its report and chart and exits 0.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runSimulate } from './simulate.js';
import { tempDir, tinyScenario } from '../sim/testing.js';

/** Runs the command with stdout and stderr captured. */
async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const o = process.stdout.write.bind(process.stdout);
  const e = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((s: string) => ((out += s), true)) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => ((err += s), true)) as typeof process.stderr.write;
  try {
    const code = await runSimulate(args);
    return { code, out, err };
  } finally {
    process.stdout.write = o;
    process.stderr.write = e;
  }
}

test('usage errors exit 2 and say what is wrong', async (t) => {
  const dir = tempDir(t, { 'tiny.yaml': tinyScenario() });
  const f = join(dir, 'tiny.yaml');
  const cases: [string[], RegExp][] = [
    [[], /give one scenario file/],
    [[f, f], /give one scenario file \(got 2/],
    [[f, '--seed', 'abc'], /--seed takes an integer/],
    [[f, '--hours', '0'], /--hours takes a number of hours above 0/],
    [[f, '--scale', 'abc'], /--scale takes a number above 0/],
    [[f, '--policy', 'magic'], /--policy takes static, reactive, gridsteer \(got "magic"\)/],
    [[f, '--set', 'novalue'], /--set takes PATH=VALUE/],
    [[f, '--bogus'], /Unknown option '--bogus'/],
  ];
  for (const [args, want] of cases) {
    const r = await run(args);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.err, want, args.join(' '));
    assert.match(r.err, /usage: gridsteer simulate/);
  }
  const help = await run(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.out, /usage: gridsteer simulate <scenario.yaml>/);
});

test('a bad scenario exits 1 naming the file, the line, the path and the fix', async (t) => {
  const dir = tempDir(t, { 'bad.yaml': tinyScenario().replace('region: east', 'region: north') });
  const r = await run([join(dir, 'bad.yaml'), '--quiet']);
  assert.equal(r.code, 1);
  assert.match(r.err, /bad\.yaml:\d+:\d+: events\[0\]\.region: "north" is not a region of the fleet: use one of east, south, west/);
  const missing = await run([join(dir, 'missing.yaml')]);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /missing\.yaml: \(top level\): cannot read the file \(it does not exist\)/);
});

test('a tiny scenario writes DIR/<scenario>.md, .json and .svg and exits 0; progress goes to stderr', async (t) => {
  const dir = tempDir(t, { 'tiny.yaml': tinyScenario() });
  const out = join(dir, 'out');
  const r = await run([join(dir, 'tiny.yaml'), '--out', out, '--scale', '0.3', '--seed', '2', '--hours', '0.5']);
  assert.equal(r.code, 0, r.err);
  assert.ok(existsSync(join(out, 'tiny.md')) && existsSync(join(out, 'tiny.svg')) && existsSync(join(out, 'tiny.json')));
  const js = JSON.parse(readFileSync(join(out, 'tiny.json'), 'utf8')) as { seed: number; scale: number; results: { policy: string }[]; targets: unknown[] };
  assert.deepEqual([js.seed, js.scale, js.results.map((x) => x.policy)], [2, 0.3, ['static', 'reactive', 'gridsteer']]);
  assert.ok(js.targets.length > 0);
  const md = readFileSync(join(out, 'tiny.md'), 'utf8');
  assert.match(md, /Made with `gridsteer simulate .*tiny\.yaml --out .* --scale 0\.3 --seed 2 --hours 0\.5`/);
  assert.match(md, /seed 2, scale 0\.3/);
  assert.match(md, /Shortened from 1h with --hours/);
  assert.match(readFileSync(join(out, 'tiny.svg'), 'utf8'), /^<svg /);
  assert.match(r.out, /wrote .*tiny\.md\nwrote .*tiny\.json\nwrote .*tiny\.svg\n/);
  assert.match(r.out, /GridSteer .*sent-to-dark .*\(bound /);
  assert.match(readFileSync(join(out, 'tiny.md'), 'utf8'), /\[tiny\.json\]\(tiny\.json\)/);
  // Not a terminal here: a progress line every 10 %.
  assert.match(r.err, /simulate: 10 % \(static\)/);
  assert.match(r.err, /simulate: 100 % \(gridsteer\)/);
  const quiet = await run([join(dir, 'tiny.yaml'), '--scale', '0.2', '--hours', '0.5', '--quiet', '--policy', 'static']);
  assert.equal(quiet.code, 0);
  assert.equal(quiet.err, '');
  assert.match(quiet.out, /^# tiny test fleet/);
  assert.ok(!quiet.out.includes('reactive failover'), 'only the policy asked for');
});
