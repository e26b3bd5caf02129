/**
 * bin/gridsteer.js, the command that `npx gridsteer` and `npm link` run: with a build it
 * runs the compiled CLI; without one (a checkout where nothing is built yet) it says in one
 * line what to run and exits 1, rather than a module-not-found stack trace.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from './helpers/dig.js';
import { repoRoot } from './helpers/paths.js';

const bin = join(repoRoot, 'bin', 'gridsteer.js');

test('bin/gridsteer.js runs the built CLI', async () => {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
  assert.equal(pkg.bin.gridsteer, 'bin/gridsteer.js');
  const r = await run(process.execPath, [bin, 'version'], 20_000);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `gridsteer ${pkg.version}\n`);
  const h = await run(process.execPath, [bin, '--help'], 20_000);
  assert.equal(h.code, 0, h.stderr);
  assert.match(h.stdout, /^usage: gridsteer <command>/);
});

test('bin/gridsteer.js reached through a symlink (npm link, node_modules/.bin) finds its own dist/', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-bin-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const link = join(dir, 'gridsteer');
  symlinkSync(bin, link);
  const r = await run(process.execPath, [link, 'version'], 20_000);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^gridsteer \d/);
});

test('bin/gridsteer.js without a build: one line naming `npm run build`, exit 1, no stack trace', async (t) => {
  // A checkout laid out like this one, with nothing built: package.json and bin/, no dist/.
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-nobuild-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'bin'));
  copyFileSync(bin, join(dir, 'bin', 'gridsteer.js'));
  copyFileSync(join(repoRoot, 'package.json'), join(dir, 'package.json'));
  for (const args of [['version'], ['simulate', 'bench/scenarios/x.yaml'], []]) {
    const r = await run(process.execPath, [join(dir, 'bin', 'gridsteer.js'), ...args], 20_000);
    const shown = `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
    assert.equal(r.code, 1, shown);
    assert.equal(r.stdout, '', shown);
    assert.equal(r.stderr, `gridsteer: not built (no dist/gslb/cli/main.js): run \`npm run build\` in ${dir}\n`, shown);
    assert.doesNotMatch(r.stderr, /ERR_MODULE_NOT_FOUND|\n\s+at /, shown);
  }
  // A dist/ without the CLI (a build interrupted early) is no build either.
  mkdirSync(join(dir, 'dist', 'gslb'), { recursive: true });
  writeFileSync(join(dir, 'dist', 'gslb', 'main.js'), '');
  const r = await run(process.execPath, [join(dir, 'bin', 'gridsteer.js'), 'version'], 20_000);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /run `npm run build`/);
});
