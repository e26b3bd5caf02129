/**
 * `gridsteer simulate <scenario.yaml>`: runs the grid-event simulator (gslb/sim/) on a
 * scenario and reports static geo, reactive failover and GridSteer on the same seed.
 *
 * Exit codes: 0 done, 1 failure (a bad scenario file: every problem is printed with its
 * file, line, path and fix; an output folder that cannot be written), 2 usage error.
 * Results go to stdout (the Markdown report, or with --out the files written and a summary),
 * progress and errors to stderr. Also runnable on its own: node dist/gslb/cli/simulate.js.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { renderSvg } from '../sim/chart.js';
import { POLICY_NAMES, type PolicyName } from '../sim/policies.js';
import { renderMarkdown, reportJsonText, summaryLines } from '../sim/report.js';
import { runScenario } from '../sim/run.js';
import { loadScenario, ScenarioError, type ScenarioOverride } from '../sim/scenario.js';

const USAGE = `usage: gridsteer simulate <scenario.yaml> [options]

Simulates a grid event against the fleet and compares three policies on the same seed:
static geo, reactive failover (Route 53 style) and GridSteer (the real planner and decide).

options:
  --out DIR          write DIR/<scenario>.md, .json and .svg (default: the Markdown report to stdout)
  --seed N           random seed (default: the scenario's seed, else 1)
  --hours H          simulate only H hours (kept around the first event) for quick runs
  --scale X          multiply sessions per hour, client /24s and resolvers by X (e.g. 0.1)
  --policy NAME      run only this policy (static, reactive, gridsteer); repeatable
  --set PATH=VALUE   override one scenario setting, e.g. --set events[0].notice=30m
                     or --set policies.gridsteer.planner.drain.sessionAllowanceMs=3600000; repeatable
  --quiet            no progress on stderr
  -h, --help         this text

Bundled scenarios: bench/scenarios/*.yaml (see bench/scenarios/README.md).
`;

function usage(msg?: string): number {
  if (msg) process.stderr.write(`gridsteer simulate: ${msg}\n`);
  process.stderr.write(USAGE);
  return 2;
}

/** A shell-safe rendering of the arguments, for the report's "Made with" line. */
function shellQuote(a: string): string {
  return /^[A-Za-z0-9_./=:,@%+-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** Progress on stderr: a bar redrawn in place on a terminal, else a line every 10 %. */
function progressReporter(quiet: boolean): { update: (f: number, p: PolicyName) => void; done: () => void } {
  if (quiet) return { update: () => {}, done: () => {} };
  const tty = process.stderr.isTTY === true;
  let last = -1;
  return {
    update(f, p) {
      const pc = Math.floor(f * 100);
      if (tty) {
        if (pc === last) return;
        last = pc;
        const width = 30;
        const fill = Math.round((pc / 100) * width);
        process.stderr.write(`\rsimulate [${'#'.repeat(fill)}${'-'.repeat(width - fill)}] ${String(pc).padStart(3)} % ${p.padEnd(10)}`);
      } else {
        const decile = Math.floor(pc / 10) * 10;
        if (decile <= last || decile === 0) return;
        last = decile;
        process.stderr.write(`simulate: ${decile} % (${p})\n`);
      }
    },
    done() {
      if (tty && last >= 0) process.stderr.write('\n');
    },
  };
}

function parseSet(s: string): ScenarioOverride | string {
  const eq = s.indexOf('=');
  if (eq <= 0) return `--set takes PATH=VALUE (got "${s}")`;
  return { path: s.slice(0, eq).trim(), value: s.slice(eq + 1) };
}

export async function runSimulate(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        out: { type: 'string' },
        seed: { type: 'string' },
        hours: { type: 'string' },
        scale: { type: 'string' },
        policy: { type: 'string', multiple: true },
        set: { type: 'string', multiple: true },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: true,
    });
  } catch (e) {
    return usage((e as Error).message);
  }
  const v = parsed.values;
  if (v.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (parsed.positionals.length !== 1) return usage(parsed.positionals.length === 0 ? 'give one scenario file' : `give one scenario file (got ${parsed.positionals.length}: ${parsed.positionals.join(' ')})`);
  const file = parsed.positionals[0]!;
  let seed: number | undefined;
  if (v.seed !== undefined) {
    if (!/^\d{1,10}$/.test(v.seed) || Number(v.seed) > 0xffffffff) return usage(`--seed takes an integer from 0 to 4294967295 (got "${v.seed}")`);
    seed = Number(v.seed);
  }
  let hoursMs: number | undefined;
  if (v.hours !== undefined) {
    const h = Number(v.hours);
    if (!(h > 0) || h > 48 || !Number.isFinite(h)) return usage(`--hours takes a number of hours above 0, at most 48 (got "${v.hours}")`);
    hoursMs = Math.round(h * 3_600_000);
  }
  let scale: number | undefined;
  if (v.scale !== undefined) {
    const x = Number(v.scale);
    if (!(x > 0) || x > 10 || !Number.isFinite(x)) return usage(`--scale takes a number above 0, at most 10 (got "${v.scale}")`);
    scale = x;
  }
  let policies: PolicyName[] | undefined;
  if (v.policy !== undefined) {
    const bad = v.policy.filter((p) => !POLICY_NAMES.includes(p as PolicyName));
    if (bad.length > 0) return usage(`--policy takes ${POLICY_NAMES.join(', ')} (got "${bad.join('", "')}")`);
    policies = POLICY_NAMES.filter((p) => v.policy!.includes(p));
  }
  const overrides: ScenarioOverride[] = [];
  for (const s of v.set ?? []) {
    const o = parseSet(s);
    if (typeof o === 'string') return usage(o);
    overrides.push(o);
  }

  let sc;
  try {
    sc = loadScenario(file, overrides);
  } catch (e) {
    if (e instanceof ScenarioError) {
      process.stderr.write(e.message + '\n');
      return 1;
    }
    throw e;
  }

  const progress = progressReporter(v.quiet === true);
  const began = performance.now();
  const rep = runScenario(sc, { seed, scale, hoursMs, policies, onProgress: progress.update });
  progress.done();
  const command = `gridsteer simulate ${args.map(shellQuote).join(' ')}`;
  if (v.out === undefined) {
    process.stdout.write(renderMarkdown(rep, { command }));
  } else {
    const dir = resolve(v.out);
    const md = join(dir, `${sc.name}.md`);
    const svg = join(dir, `${sc.name}.svg`);
    const json = join(dir, `${sc.name}.json`);
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(svg, renderSvg(rep));
      writeFileSync(json, reportJsonText(rep, { command }));
      writeFileSync(md, renderMarkdown(rep, { command, chart: `${sc.name}.svg`, json: `${sc.name}.json` }));
    } catch (e) {
      process.stderr.write(`gridsteer simulate: cannot write the report in ${dir}: ${(e as Error).message}\n`);
      return 1;
    }
    process.stdout.write(`wrote ${md}\nwrote ${json}\nwrote ${svg}\n`);
    for (const l of summaryLines(rep)) process.stdout.write(l + '\n');
  }
  if (!v.quiet) process.stderr.write(`simulate: done in ${((performance.now() - began) / 1000).toFixed(1)} s\n`);
  return 0;
}

// Run on its own: node dist/gslb/cli/simulate.js <scenario.yaml> [options]
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  runSimulate(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (e: unknown) => {
      process.stderr.write(`gridsteer simulate: ${(e as Error)?.stack ?? String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
