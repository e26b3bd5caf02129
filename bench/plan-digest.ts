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
 * A plan's `version` hashes the settings too (gslb/policy/planner/plan.ts), so a change that only
 * adds a setting would move every section's digest although no plan says anything new. The
 * sections therefore digest each plan without its `version`; the settings get a line of their
 * own (`settings`: the digest of every settings object planned with, canonical JSON), and
 * `versions` digests the versions themselves. A refactor that keeps behaviour keeps every
 * section line and `all`; adding a setting may move `settings` and `versions` only.
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
const settingsDigest = createHash('sha256');
const versionsDigest = createHash('sha256');

/** JSON with sorted keys (a settings object's key order is not part of what it says). */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));
}

/** A plan input's settings, seen once per object (the walk plans with one shared object many times). */
const seenSettings = new WeakSet<object>();
function planOf(input: Parameters<typeof plan>[0]): unknown {
  if (!seenSettings.has(input.settings)) {
    seenSettings.add(input.settings);
    settingsDigest.update(canonical(input.settings)).update('\n');
  }
  const { version, ...content } = plan(input);
  versionsDigest.update(`${version}\n`);
  return content;
}

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
    yield planOf({ configHash: 'bench', snapshot, settings: { ...settings } });
    const records = [...snapshot.records];
    const loads = records.flatMap((r, i) => (r.signal.kind === 'load.metrics' ? [i] : []));
    for (let i = 0; i < 20; i++) {
      const at = loads[(i * 7919) % loads.length]!;
      const prev = records[at]!;
      const next = reduce(prev, { ...prev.signal, observedAt: prev.signal.observedAt + 1 + i, value: { kvCacheUse: ((i * 37) % 100) / 100 } });
      if (next) records[at] = next;
      yield planOf({ configHash: 'bench', snapshot: { ...snapshot, revision: snapshot.revision + 1 + i, records: [...records] }, settings });
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
      yield planOf({ configHash: 'cfg', snapshot, settings: shared });
      yield planOf({ configHash: 'cfg', snapshot, settings: { ...shared } });
      if (i % 10 === 0) yield planOf({ configHash: 'cfg', snapshot, settings: shared, frozen: true });
    }
  });
}

console.log(`all        ${all.digest('hex')}`);
console.log(`settings   ${settingsDigest.digest('hex')}`);
console.log(`versions   ${versionsDigest.digest('hex')}`);
