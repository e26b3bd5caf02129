/**
 * `gridsteer check-config --config FILE`: exit 0 and `ok …` for a good config; exit 1 and
 * one line per problem, `  FILE:LINE:COL: path.to.key: message`, naming the file, the
 * line, the path and the fix. `serve` refuses the same config the same way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, type ToolRun } from './helpers/dig.js';
import { cliPath, exampleConfig, exampleRegions } from './helpers/paths.js';

function checkConfig(file: string): Promise<ToolRun> {
  return run(process.execPath, [cliPath, 'check-config', '--config', file], 30000);
}

function output(r: ToolRun): string {
  return `${r.stdout}${r.stderr}`;
}

function show(r: ToolRun): string {
  return `$ ${r.cmd}\n(exit ${r.code})\n${output(r)}`;
}

/** A temp dir with gridsteer.yaml (the given text) and a regions folder (a copy, or a symlink). */
function tempConfig(t: { after(fn: () => void): void }, text: string, opts: { copyRegions?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-check-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const regions = join(dir, 'regions');
  if (opts.copyRegions) cpSync(exampleRegions, regions, { recursive: true });
  else symlinkSync(exampleRegions, regions, 'dir');
  const file = join(dir, 'gridsteer.yaml');
  writeFileSync(file, text);
  return { dir, file, regions };
}

/** The 1-based number of the first line of `text` that contains `needle`. */
function lineOf(text: string, needle: string): number {
  const i = text.split('\n').findIndex((l) => l.includes(needle));
  assert.ok(i >= 0, `test setup: ${JSON.stringify(needle)} not in the file`);
  return i + 1;
}

/** Finds the problem line for `file` at `line` and `path`; returns its message. */
function problem(r: ToolRun, file: string, line: number, path: string): string {
  const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`^  (?:\\S*/)?${escaped(file.split('/').pop()!)}:${line}:\\d+: ${escaped(path)}: (.+)$`, 'm');
  const m = output(r).match(re);
  assert.ok(m, `expected a line "  …${file.split('/').pop()}:${line}:COL: ${path}: …"\n${show(r)}`);
  const full = output(r).split('\n').find((l) => re.test(l))!;
  assert.ok(full.includes(file), `the problem line names the file ${file}:\n${full}`);
  return m[1]!;
}

const example = readFileSync(exampleConfig, 'utf8');

test('check-config: the example config is ok (exit 0, "ok …")', async () => {
  const r = await checkConfig(exampleConfig);
  assert.equal(r.code, 0, show(r));
  assert.match(r.stdout, /^ok\b/m, show(r));
});

test('check-config: a config with extra records (a 1500-byte TXT, a list of A data) is ok', async (t) => {
  const text = example.replace(
    '      - { name: "@", type: CAA, data: \'0 issue "ca.example.net"\' }',
    '      - { name: "@", type: CAA, data: \'0 issue "ca.example.net"\' }\n' +
      '      - { name: big, type: TXT, data: "' + 'x'.repeat(1500) + '" }\n' +
      '      - { name: many, type: A, data: ["192.0.2.1", "192.0.2.2"] }',
  );
  assert.notEqual(text, example, 'test setup: the CAA line was found');
  const { file } = tempConfig(t, text);
  const r = await checkConfig(file);
  assert.equal(r.code, 0, show(r));
  assert.match(r.stdout, /^ok\b/m, show(r));
});

test('check-config: an unknown key and a wrong type in gridsteer.yaml are both reported with file:line, path and fix', async (t) => {
  let text = example.replace('  listen: ["127.0.0.1:5353"]', '  listen: ["127.0.0.1:5353"]\n  listn: ["127.0.0.1:5354"]');
  text = text.replace('  minTtl: 5', '  minTtl: five');
  assert.ok(text.includes('listn') && text.includes('minTtl: five'), 'test setup');
  const { file } = tempConfig(t, text);
  const r = await checkConfig(file);
  assert.equal(r.code, 1, show(r));

  const unknown = problem(r, file, lineOf(text, 'listn:'), 'dns.listn');
  assert.match(unknown, /unknown key/i, show(r));
  assert.match(unknown, /remove|spelling/i, `the message says how to fix it\n${show(r)}`);

  const wrongType = problem(r, file, lineOf(text, 'minTtl: five'), 'policy.minTtl');
  assert.match(wrongType, /integer/i, show(r));
  assert.match(wrongType, /five/, `the message shows the value found\n${show(r)}`);
});

test('check-config: a bad IP address and an unknown key in region files are reported with the region file, line and path', async (t) => {
  const { file, regions } = tempConfig(t, example, { copyRegions: true });
  const va = join(regions, 'us-va.yaml');
  const vaText = readFileSync(va, 'utf8').replace('  - address: 192.0.2.11', '  - address: 192.0.2.300');
  assert.ok(vaText.includes('192.0.2.300'), 'test setup');
  writeFileSync(va, vaText);
  const sin = join(regions, 'ap-sin.yaml');
  const sinText = readFileSync(sin, 'utf8') + 'colour: blue\n';
  writeFileSync(sin, sinText);

  const r = await checkConfig(file);
  assert.equal(r.code, 1, show(r));
  const badIp = problem(r, va, lineOf(vaText, '192.0.2.300'), 'endpoints[1].address');
  assert.match(badIp, /IPv4 or IPv6|IP address|valid/i, show(r));
  assert.match(badIp, /192\.0\.2\.300/, show(r));
  const unknown = problem(r, sin, lineOf(sinText, 'colour:'), 'colour');
  assert.match(unknown, /unknown key/i, show(r));
});

test('check-config: bad record data is reported at the record\'s line and path', async (t) => {
  const marker = '      - { name: status, type: TXT';
  const text = example.replace(marker, '      - { name: broken, type: A, data: "192.0.2.300" }\n' + marker);
  assert.notEqual(text, example, 'test setup');
  const { file } = tempConfig(t, text);
  const r = await checkConfig(file);
  assert.equal(r.code, 1, show(r));
  // records: www (0), apex TXT (1), broken (2).
  const msg = problem(r, file, lineOf(text, 'name: broken'), 'zones[0].records[2].data');
  assert.match(msg, /192\.0\.2\.300|address|IPv4/i, show(r));
});

test('check-config: a YAML syntax error names the file and line', async (t) => {
  const text = example.replace('http:\n  listen: "127.0.0.1:8053"', 'http:\n  listen: [127.0.0.1:8053');
  assert.notEqual(text, example, 'test setup');
  const { file } = tempConfig(t, text);
  const r = await checkConfig(file);
  assert.equal(r.code, 1, show(r));
  assert.match(output(r), new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: `), show(r));
});

test('check-config: a missing file is an error naming the file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-check-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'nope.yaml');
  const r = await checkConfig(file);
  assert.equal(r.code, 1, show(r));
  assert.ok(output(r).includes(file), show(r));
});

test('serve refuses a broken config: exit 1, the problem printed, never ready', async (t) => {
  const text = example.replace('  minTtl: 5', '  minTtl: five').replace('127.0.0.1:5353', '127.0.0.1:0').replace('127.0.0.1:8053', '127.0.0.1:0');
  const { file } = tempConfig(t, text);
  const r = await run(process.execPath, [cliPath, 'serve', '--config', file, '--workers', '0', '--dns-listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0'], 30000);
  assert.equal(r.code, 1, show(r));
  assert.doesNotMatch(r.stdout, /"msg":"ready"/, show(r));
  assert.match(output(r), /policy\.minTtl/, show(r));
  assert.ok(output(r).includes(`${file}:${lineOf(text, 'minTtl: five')}:`), show(r));
});
