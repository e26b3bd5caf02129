/**
 * Plan digest: a fingerprint of what the planner produces, for refactors that must not
 * change it (issue "the house, redesigned": "the planner's output is byte-identical").
 * Prints one line per section with the SHA-256 of the JSON of every plan made in it, and a
 * last line with the digest of them all. Run it on the commit before a change and after;
 * the lines must be equal.
 *
 * Sections:
 * - `bench-<n>`: bench/plan.ts's fleet of n regions (10, 100, 1,000), planned cold, then
 *   after each of 20 single-signal changes with the same settings (the reuse path);
 * - `walk-<seed>`: test/helpers/plan-walk.ts's seeded walk of 200 changes of every input
 *   kind; each snapshot planned with shared settings (reuse), with a fresh copy (from
 *   scratch) and, every tenth change, with frozen inputs.
 *
 * Bounded (fixed counts); no clock reads enter a plan. usage: node dist/bench/plan-digest.js
 */
import { createHash } from 'node:crypto';
import { plan } from '../gslb/policy/planner/index.js';
import { reduce } from '../gslb/state/reducer.js';
import { xorshift32 } from '../test/helpers/policy.js';
import { benchFleet } from './fleet.js';
import { World, fleetSettings, populate, step } from '../test/helpers/plan-walk.js';

const all = createHash('sha256');

function section(name: string, plans: () => Iterable<unknown>): void {
  const h = createHash('sha256');
  let n = 0;
  for (const p of plans()) {
    h.update(JSON.stringify(p));
    h.update('\n');
    n++;
  }
  const d = h.digest('hex');
  all.update(`${name} ${d}\n`);
  console.log(`${name.padEnd(10)} ${String(n).padStart(4)} plans  ${d}`);
}

for (const n of [10, 100, 1000]) {
  section(`bench-${n}`, function* () {
    const { settings, snapshot } = benchFleet(n);
    yield plan({ configHash: 'bench', snapshot, settings: { ...settings } });
    const records = [...snapshot.records];
    const loads = records.flatMap((r, i) => (r.signal.kind === 'load.metrics' ? [i] : []));
    for (let i = 0; i < 20; i++) {
      const at = loads[(i * 7919) % loads.length]!;
      const prev = records[at]!;
      const next = reduce(prev, { ...prev.signal, observedAt: prev.signal.observedAt + 1 + i, value: { kvCacheUse: ((i * 37) % 100) / 100 } });
      if (next) records[at] = next;
      yield plan({ configHash: 'bench', snapshot: { ...snapshot, revision: snapshot.revision + 1 + i, records: [...records] }, settings });
    }
  });
}

for (const seed of [1, 7, 42, 99, 2024]) {
  section(`walk-${seed}`, function* () {
    const w = new World(xorshift32(seed));
    populate(w);
    const shared = fleetSettings(seed === 1 ? { keepMs: 5_000, then: 'ignore' } : seed === 7 ? { keepMs: 15_000, then: 'down' } : undefined);
    for (let i = 0; i < 200; i++) {
      step(w);
      const snapshot = w.snapshot();
      yield plan({ configHash: 'cfg', snapshot, settings: shared });
      yield plan({ configHash: 'cfg', snapshot, settings: { ...shared } });
      if (i % 10 === 0) yield plan({ configHash: 'cfg', snapshot, settings: shared, frozen: true });
    }
  });
}

console.log(`all        ${all.digest('hex')}`);
