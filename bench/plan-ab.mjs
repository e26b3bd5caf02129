// The planner of two builds in one process, timed in turns (A, B, A, B … per plan), so that a
// noisy, shared machine slows both alike: a finer A/B than bench/ab.mjs's alternating
// processes. Each build is a checkout with dist/ built (e.g. a `git worktree` of the commit
// before a change). Both plan the same fleet (bench/fleet.ts of each build, equal by
// construction; the script checks their plans are byte-identical).
//
// usage: node bench/plan-ab.mjs --a <checkout> --b <checkout> [--regions 1000] [--rounds 200]
// Prints the median ms of a cold plan and of a plan after one signal per build, B ÷ A of the
// medians, and the spread of B ÷ A taken round by round (the two plans of a round ran back to
// back, so a round's ratio shares its noise): p10, p25, median, p75, p90.
// Read the cold figure: the one-signal figure is skewed by the other build's retained heap
// (each keeps 1,000 regions' schedules for reuse), and flips with the order of --a and --b;
// for it, bench/ab.mjs (a process per run) is the fairer A/B.
// Bounded: rounds × 4 plans.
import { pathToFileURL } from 'node:url';
import { resolve, join } from 'node:path';
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const argv = process.argv.slice(2);
const opt = { a: null, b: null, regions: 1000, rounds: 200 };
while (argv.length) {
  const k = argv.shift().replace(/^--/, '');
  const v = argv.shift();
  if (!(k in opt) || v === undefined) usage();
  opt[k] = k === 'a' || k === 'b' ? v : Number(v);
}
if (!opt.a || !opt.b || !(opt.regions >= 1 && opt.regions <= 10_000) || !(opt.rounds >= 1 && opt.rounds <= 10_000)) usage();
function usage() {
  console.error('usage: node bench/plan-ab.mjs --a <checkout> --b <checkout> [--regions 1-10000] [--rounds 1-10000]');
  process.exit(2);
}

async function load(dir) {
  const d = join(resolve(dir), 'dist');
  const planner = [join(d, 'gslb/policy/planner/index.js'), join(d, 'gslb/policy/planner.js')].find(existsSync);
  const [p, r, f] = await Promise.all([import(pathToFileURL(planner).href), import(pathToFileURL(join(d, 'gslb/state/reducer.js')).href), import(pathToFileURL(join(d, 'bench/fleet.js')).href)]);
  const { settings, snapshot } = f.benchFleet(opt.regions);
  const records = [...snapshot.records];
  const loads = records.flatMap((x, i) => (x.signal.kind === 'load.metrics' ? [i] : []));
  p.plan({ configHash: 'bench', snapshot, settings });
  let i = 0;
  return {
    p,
    cold: () => p.plan({ configHash: 'bench', snapshot, settings: { ...settings } }),
    warm: () => {
      const at = loads[(i * 7919) % loads.length];
      const prev = records[at];
      const next = r.reduce(prev, { ...prev.signal, observedAt: prev.signal.observedAt + 1 + i, value: { kvCacheUse: ((i * 37) % 100) / 100 } });
      if (next) records[at] = next;
      i++;
      return p.plan({ configHash: 'bench', snapshot: { ...snapshot, revision: snapshot.revision + i, records: [...records] }, settings });
    },
  };
}

const A = await load(opt.a);
const B = await load(opt.b);
if (JSON.stringify(A.cold()) !== JSON.stringify(B.cold())) {
  console.error('plan-ab: the two builds plan the fleet differently; this compares speed, not behaviour (run bench/plan-digest.js)');
  process.exit(1);
}
const t = { a: { cold: [], warm: [] }, b: { cold: [], warm: [] } };
const time = (fn) => {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
};
for (let k = 0; k < opt.rounds; k++) {
  // Swap who goes first every round, so neither always runs right after a GC of the other.
  const order = k % 2 === 0 ? [['a', A], ['b', B]] : [['b', B], ['a', A]];
  for (const [n, x] of order) t[n].cold.push(time(x.cold));
  for (const [n, x] of order) t[n].warm.push(time(x.warm));
}
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)];
};
const q = (xs, f) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(s.length * f))];
};
const spread = (what) => {
  const r = t.a[what].map((a, k) => t.b[what][k] / a);
  return [0.1, 0.25, 0.5, 0.75, 0.9].map((f) => q(r, f));
};
console.log(`plan() at ${opt.regions} regions, ${opt.rounds} rounds in turns, one process; A = ${opt.a}, B = ${opt.b}`);
for (const what of ['cold', 'warm']) {
  const a = median(t.a[what]);
  const b = median(t.b[what]);
  const [p10, p25, p50, p75, p90] = spread(what).map((x) => x.toFixed(3));
  console.log(`${what === 'cold' ? 'cold              ' : 'after one signal  '} A ${a.toFixed(2).padStart(8)} ms  B ${b.toFixed(2).padStart(8)} ms  B/A ${(b / a).toFixed(3)}  per round p10 ${p10} p25 ${p25} p50 ${p50} p75 ${p75} p90 ${p90}`);
}
console.log(JSON.stringify({ regions: opt.regions, rounds: opt.rounds, coldA: median(t.a.cold), coldB: median(t.b.cold), warmA: median(t.a.warm), warmB: median(t.b.warm), coldRatio: spread('cold'), warmRatio: spread('warm') }));
