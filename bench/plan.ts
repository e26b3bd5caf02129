/**
 * Planner benchmark: how long plan() takes for fleets of 10, 100 and 1,000 regions with a
 * realistic store snapshot, on one core, in process. Per region: two endpoints probed from
 * three vantages (expiring 30–90 s ahead), one load reading, one capacity and one power
 * budget; every 20th region has a grid event within the hour and every 20th (others) an
 * operator drain with a 2-minute ramp. Records are folded by the real reducer.
 *
 * The plan has no per-name dimension (weights are per home and target; names only select
 * which regions serve them, in decide), so the number of steered names does not change the
 * planner's work: the "× 100 names" is printed for the record, not simulated.
 *
 * Two figures per fleet: cold (a settings object of its own each run, so no region's
 * schedule is reused: a start, a reload) and after one signal (one region's load reading
 * replaced by a newer one, then plan() with the same settings, as the service re-plans after
 * each store change: the regions whose inputs did not change keep their schedules).
 *
 * Prints one line per fleet size and a JSON line at the end. Bounded: fixed counts.
 * usage: node dist/bench/plan.js [--runs 20] [--sizes 10,100,1000]
 */
import { parseArgs } from 'node:util';
import { plan, planCounting } from '../gslb/policy/planner/index.js';
import { reduce } from '../gslb/state/reducer.js';
import { benchFleet as fleet } from './fleet.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '20' }, sizes: { type: 'string', default: '10,100,1000' } } });
const RUNS = Number(values.runs);
const SIZES = values.sizes.split(',').map(Number);
if (!(RUNS >= 1) || SIZES.some((n) => !Number.isInteger(n) || n < 1 || n > 10_000)) {
  console.error('usage: node dist/bench/plan.js [--runs N ≥ 1] [--sizes 10,100,1000 (1 to 10000 regions each)]');
  process.exit(2);
}
/** Median and max of `ms`. */
function stats(ms: number[]): { med: number; max: number } {
  const xs = [...ms].sort((a, b) => a - b);
  return { med: xs[Math.floor(xs.length / 2)]!, max: xs[xs.length - 1]! };
}

const out: Record<string, unknown>[] = [];
for (const n of SIZES) {
  const { settings, snapshot } = fleet(n);
  // Cold: a settings object of its own each run, so nothing is reused from an earlier plan
  // (a start, a reload, or every region's inputs changed at once).
  plan({ configHash: 'bench', snapshot, settings: { ...settings } }); // warm-up
  const cold: number[] = [];
  let p = plan({ configHash: 'bench', snapshot, settings: { ...settings } });
  for (let i = 0; i < RUNS; i++) {
    const s = { ...settings };
    const t0 = performance.now();
    p = plan({ configHash: 'bench', snapshot, settings: s });
    cold.push(performance.now() - t0);
  }
  // After one signal: one region's load reading is replaced by a newer one, then plan()
  // with the same settings, as the service re-plans after each (debounced) store change.
  const records = [...snapshot.records];
  const loads = records.flatMap((r, i) => (r.signal.kind === 'load.metrics' ? [i] : []));
  plan({ configHash: 'bench', snapshot, settings });
  const warm: number[] = [];
  let made = 0;
  for (let i = 0; i < RUNS; i++) {
    const at = loads[(i * 7919) % loads.length]!;
    const prev = records[at]!;
    const next = reduce(prev, { ...prev.signal, observedAt: prev.signal.observedAt + 1 + i, value: { kvCacheUse: ((i * 37) % 100) / 100 } });
    if (next) records[at] = next;
    const snap = { ...snapshot, revision: snapshot.revision + 1 + i, records: [...records] };
    const t0 = performance.now();
    const r = planCounting({ configHash: 'bench', snapshot: snap, settings });
    warm.push(performance.now() - t0);
    made = Math.max(made, r.made);
  }
  const c = stats(cold);
  const w = stats(warm);
  const bytes = JSON.stringify(p).length;
  const nsteps = Object.values(p.regions).reduce((k, xs) => k + xs.length, 0);
  console.log(
    `${String(n).padStart(5)} regions × 100 names: plan() cold median ${c.med.toFixed(1)} ms, max ${c.max.toFixed(1)} ms; ` +
      `after one signal median ${w.med.toFixed(1)} ms, max ${w.max.toFixed(1)} ms (at most ${made} region${made === 1 ? '' : 's'} made again); over ${RUNS} runs each; ` +
      `${snapshot.records.length} records, ${snapshot.overrides.length} overrides → ${nsteps} region steps, ${(bytes / 1024).toFixed(0)} KiB of JSON`,
  );
  out.push({
    regions: n,
    names: 100,
    records: snapshot.records.length,
    overrides: snapshot.overrides.length,
    steps: nsteps,
    medianMs: +c.med.toFixed(2),
    maxMs: +c.max.toFixed(2),
    oneSignalMedianMs: +w.med.toFixed(2),
    oneSignalMaxMs: +w.max.toFixed(2),
    oneSignalMade: made,
    jsonBytes: bytes,
  });
}
console.log(JSON.stringify({ date: new Date().toISOString(), runs: RUNS, results: out }));
