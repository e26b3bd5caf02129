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
import { plan, planCounting, defaultSettings, type PlannerSettings } from '../gslb/policy/planner.js';
import { reduce, type SignalRecord } from '../gslb/state/reducer.js';
import type { StoreSnapshot } from '../gslb/state/store.js';
import type { Override, Signal } from '../gslb/types.js';
import { xorshift32 } from '../gslb/policy/testing.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '20' }, sizes: { type: 'string', default: '10,100,1000' } } });
const RUNS = Number(values.runs);
const SIZES = values.sizes.split(',').map(Number);
if (!(RUNS >= 1) || SIZES.some((n) => !Number.isInteger(n) || n < 1 || n > 10_000)) {
  console.error('usage: node dist/bench/plan.js [--runs N ≥ 1] [--sizes 10,100,1000 (1 to 10000 regions each)]');
  process.exit(2);
}
const NOW = 1_800_000_000_000;

function fleet(n: number): { settings: PlannerSettings; snapshot: StoreSnapshot } {
  const r = xorshift32(n);
  const ids = Array.from({ length: n }, (_, i) => `r${String(i).padStart(4, '0')}`);
  const records: SignalRecord[] = [];
  const overrides: Override[] = [];
  const put = (s: Signal) => {
    const rec = reduce(undefined, s);
    if (rec) records.push(rec);
  };
  ids.forEach((id, i) => {
    for (const ep of ['e1', 'e2'])
      for (const v of ['n1', 'n2', 'n3']) {
        const at = NOW - (r() % 10_000);
        put({ region: id, kind: 'health.probe', source: `health/${v}`, key: ep, observedAt: at, expiresAt: at + 30_000 + (r() % 60_000), value: { up: r() % 50 !== 0 } });
      }
    put({ region: id, kind: 'load.metrics', source: 'prometheus/a', key: 'pool', observedAt: NOW, expiresAt: NOW + 60_000, value: { kvCacheUse: (r() % 100) / 100, throttledShare: (r() % 10) / 100 } });
    put({ region: id, kind: 'capacity', source: 'inventory', key: 'gpus', observedAt: NOW, expiresAt: NOW + 300_000, value: { fraction: 0.8 + (r() % 20) / 100 } });
    put({ region: id, kind: 'power.budget', source: 'bms', key: 'site', observedAt: NOW, expiresAt: NOW + 300_000, value: { importLimitW: 8e6 + (r() % 4e6), generationW: r() % 2e6 } });
    if (i % 20 === 3) {
      const start = NOW + (r() % 3_600_000);
      put({ region: id, kind: 'grid.event', source: 'openadr3/vtn', key: `ev-${i}`, observedAt: NOW, expiresAt: start + 7_200_000, value: { id: `ev-${i}`, start, end: start + 3_600_000, type: 'cap', cap: 0.5 } });
    }
    if (i % 20 === 11) overrides.push({ id: `ov-${i}`, region: id, action: 'drain', value: 0, ramp: 120_000, actor: 'bench', reason: 'maintenance', start: NOW + (r() % 600_000), end: NOW + 3_600_000 });
  });
  records.sort((a, b) => (a.id < b.id ? -1 : 1));
  const settings: PlannerSettings = defaultSettings(ids.map((id) => ({ id, capacityUnits: 100, fullLoadW: 10e6 })));
  return { settings, snapshot: { revision: 42, records, overrides, demand: [] } };
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
