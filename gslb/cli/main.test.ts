/**
 * The CLI's own usage, as a user meets it (`node dist/gslb/cli/main.js …` as a child
 * process): asked for — no arguments, --help, -h, help, help <command>, <command> --help —
 * it prints the usage on stdout and exits 0; a mistake (an unknown command, a bad option)
 * prints the message and the usage on stderr and exits 2.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run } from '../../test/helpers/dig.js';
import { cliPath } from '../../test/helpers/paths.js';
import { OPERATOR_COMMANDS } from './operator.js';

const MAIN = 'usage: gridsteer <command> [options]';

interface Case {
  args: string[];
  code: number;
  /** The stream that carries the usage; the other one is empty. */
  stream: 'stdout' | 'stderr';
  /** The usage's first line. */
  first: string;
  /** A line before the usage on stderr. */
  message?: string;
}

const CASES: Case[] = [
  { args: [], code: 0, stream: 'stdout', first: MAIN },
  { args: ['--help'], code: 0, stream: 'stdout', first: MAIN },
  { args: ['-h'], code: 0, stream: 'stdout', first: MAIN },
  { args: ['help'], code: 0, stream: 'stdout', first: MAIN },
  { args: ['help', 'help'], code: 0, stream: 'stdout', first: MAIN },
  { args: ['help', 'serve'], code: 0, stream: 'stdout', first: MAIN },
  { args: ['serve', '--help'], code: 0, stream: 'stdout', first: MAIN },
  { args: ['check-config', '-h'], code: 0, stream: 'stdout', first: MAIN },
  { args: ['help', 'explain'], code: 0, stream: 'stdout', first: 'usage: gridsteer explain <client-ip> <name> [options]' },
  { args: ['explain', '--help'], code: 0, stream: 'stdout', first: 'usage: gridsteer explain <client-ip> <name> [options]' },
  { args: ['help', 'status'], code: 0, stream: 'stdout', first: 'usage: gridsteer status' },
  { args: ['help', 'simulate'], code: 0, stream: 'stdout', first: 'usage: gridsteer simulate <scenario.yaml> [options]' },
  { args: ['help', 'check-delegation'], code: 0, stream: 'stdout', first: 'usage: gridsteer check-delegation' },
  { args: ['nope'], code: 2, stream: 'stderr', first: MAIN, message: 'gridsteer: unknown command "nope"' },
  { args: ['nope', '--help'], code: 2, stream: 'stderr', first: MAIN, message: 'gridsteer: unknown command "nope"' },
  { args: ['help', 'nope'], code: 2, stream: 'stderr', first: MAIN, message: 'gridsteer: unknown command "nope"' },
  { args: ['help', 'serve', 'status'], code: 2, stream: 'stderr', first: MAIN, message: 'gridsteer: help takes one command (got 2: serve status)' },
  { args: ['--bogus'], code: 2, stream: 'stderr', first: MAIN, message: 'gridsteer: unknown command "--bogus"' },
  { args: ['serve', '--bogus'], code: 2, stream: 'stderr', first: MAIN, message: "gridsteer: Unknown option '--bogus'" },
];

for (const c of CASES) {
  test(`gridsteer ${c.args.join(' ') || '(no arguments)'}: exit ${c.code}, usage on ${c.stream}`, async () => {
    const r = await run(process.execPath, [cliPath, ...c.args], 20_000);
    const shown = `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
    assert.equal(r.code, c.code, shown);
    const other = c.stream === 'stdout' ? r.stderr : r.stdout;
    assert.equal(other, '', shown);
    const lines = r[c.stream].split('\n');
    if (c.message !== undefined) assert.equal(lines.shift(), c.message, shown);
    assert.ok(lines[0]!.startsWith(c.first), shown);
  });
}

/** The commands main.ts dispatches itself; the operating ones come from OPERATOR_COMMANDS. */
const OWN_COMMANDS = ['serve', 'check-config', 'explain', 'simulate', 'check-delegation', 'token-hash', 'version', 'help'];

test('the main usage lists exactly the commands dispatched (OPERATOR_COMMANDS and main.ts\'s own), and each one is known to help', async () => {
  const r = await run(process.execPath, [cliPath, 'help'], 20_000);
  const listed = [...r.stdout.matchAll(/^ {2}([a-z][a-z-]*)(?: |$)/gm)].map((m) => m[1]!).sort();
  const table = [...OWN_COMMANDS, ...Object.keys(OPERATOR_COMMANDS)].sort();
  assert.deepEqual(listed, table, r.stdout);
  // Each one listed is a command `help` knows (exit 0): the usage names no command that is not there.
  const results = await Promise.all(listed.map((cmd) => run(process.execPath, [cliPath, 'help', cmd], 20_000)));
  results.forEach((h, i) => assert.equal(h.code, 0, `help ${listed[i]}: exit ${h.code}\n${h.stderr}`));
});
