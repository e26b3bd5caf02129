// A/B of one benchmark between two builds, run alternately (A, B, A, B …) so that a noisy,
// shared machine drifts both alike; prints the median of each figure per build and B ÷ A.
// Each build is a checkout with dist/ built (e.g. a `git worktree` of the commit before a change).
// The benchmark must print a JSON line last (bench/plan.js and bench/decide.js do).
//
// usage: node bench/ab.mjs --a <checkout> --b <checkout> [--runs 10] [--cpu 0] <bench/x.js> [args …]
//   e.g. node bench/ab.mjs --a ../before --b . --runs 10 bench/plan.js --sizes 1000 --runs 20
// Bounded: runs × 2 invocations, each killed after 10 minutes.
import { spawnSync } from 'node:child_process';
import { resolve, join } from 'node:path';

const argv = process.argv.slice(2);
const opt = { a: null, b: null, runs: 10, cpu: '0' };
while (argv[0]?.startsWith('--')) {
  const k = argv.shift().slice(2);
  const v = argv.shift();
  if (!(k in opt) || v === undefined) usage();
  opt[k] = k === 'runs' ? Number(v) : v;
}
const [bench, ...args] = argv;
if (!opt.a || !opt.b || !bench || !(opt.runs >= 1 && opt.runs <= 100)) usage();

function usage() {
  console.error('usage: node bench/ab.mjs --a <checkout> --b <checkout> [--runs 1-100] [--cpu N] <bench/x.js> [args …]');
  process.exit(2);
}

/** Every numeric leaf of a JSON value, by path ("results.2.medianMs"). */
function leaves(v, prefix = '', out = {}) {
  if (typeof v === 'number') out[prefix] = v;
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) leaves(x, prefix ? `${prefix}.${k}` : k, out);
  return out;
}

function once(dir) {
  const file = join(resolve(dir), 'dist', bench.replace(/\.ts$/, '.js').replace(/^dist\//, ''));
  const r = spawnSync('taskset', ['-c', opt.cpu, process.execPath, file, ...args], { cwd: resolve(dir), encoding: 'utf8', timeout: 600_000 });
  if (r.status !== 0) {
    console.error(`${file}: exit ${r.status ?? r.signal}\n${r.stderr}`);
    process.exit(1);
  }
  const last = r.stdout.trim().split('\n').pop();
  return leaves(JSON.parse(last));
}

const seen = { a: [], b: [] };
for (let i = 0; i < opt.runs; i++) {
  for (const side of ['a', 'b']) seen[side].push(once(opt[side]));
  process.stderr.write(`run ${i + 1}/${opt.runs}\n`);
}
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const keys = Object.keys(seen.a[0]).filter((k) => !/(^|\.)(runs|regions|names|records|overrides|steps|jsonBytes|n)$/.test(k));
console.log(`${bench} ${args.join(' ')}: median of ${opt.runs} alternating runs, A = ${opt.a}, B = ${opt.b}`);
for (const k of keys) {
  const a = median(seen.a.map((x) => x[k]));
  const b = median(seen.b.map((x) => x[k]));
  console.log(`${k.padEnd(34)} A ${String(+a.toFixed(3)).padStart(12)}  B ${String(+b.toFixed(3)).padStart(12)}  B/A ${(b / a).toFixed(3)}`);
}
