/**
 * A seeded random walk over a small fleet with every kind of planner input (probes with
 * slow starts, load, capacity, power budgets, grid events and cancellations, operator
 * drains, forces and weights, fleet freezes, static weights, measured demand), folded by
 * the real reducer as a store would. Shared by the planner's memo test (reuse must not
 * change a plan) and bench/plan-digest.ts (a refactor must not change a plan). Test
 * scaffolding: no production module imports it.
 */
import { defaultSettings, type PlannerSettings } from '../../gslb/policy/planner/index.js';
import { reduce } from '../../gslb/state/reducer.js';
import type { SignalRecord, DemandBucket, StoreSnapshot } from '../../gslb/model/snapshot.js';
import type { Override, Signal } from '../../gslb/model/types.js';

export const T = 1_800_000_000_000;
export const MIN = 60_000;
export const IDS = ['r00', 'r01', 'r02', 'r03', 'r04', 'r05', 'r06', 'r07', 'r08', 'r09', 'r10', 'r11'];

/** `health`: how stale probes count (a short keep puts stale votes inside slow starts). */
export function fleetSettings(health?: PlannerSettings['stale']['health.probe']): PlannerSettings {
  const s = defaultSettings(IDS.map((id, i) => ({ id, location: { lat: 10 + i * 3, lon: -100 + i * 9 }, capacityUnits: 50 + i * 10, fullLoadW: 10e6, importLimitW: 11e6 })));
  return {
    ...s,
    ...(health ? { stale: { ...s.stale, 'health.probe': health } } : {}),
    staticWeights: { r00: { r01: 0.5 }, r03: { r03: 0.8, r04: 0.2 } },
    names: [
      { name: 'api', regions: IDS.slice(0, 8) },
      { name: 'batch', regions: IDS.slice(4) },
    ],
  };
}

/** A store that folds signals with the real reducer, as the memory store does. */
export class World {
  readonly recs = new Map<string, SignalRecord>();
  overrides: Override[] = [];
  demand: DemandBucket[] = [];
  revision = 1;
  private seq = 0;
  constructor(readonly r: () => number) {}

  put(s: Signal): void {
    const key = `${s.region}|${s.kind}|${s.source}|${s.key}`;
    const rec = reduce(this.recs.get(key), s);
    if (rec) this.recs.set(key, rec);
    this.revision++;
  }

  /** Every record, newest content, in key order (a store's snapshot). */
  snapshot(): StoreSnapshot {
    const records = [...this.recs.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([, v]) => v);
    return { revision: this.revision, records, overrides: [...this.overrides], demand: [...this.demand] };
  }

  pick<X>(xs: readonly X[]): X {
    return xs[this.r() % xs.length]!;
  }

  at(): number {
    return T + ++this.seq * 1000;
  }

  probe(region: string, ep: string, vantage: string, up: boolean): void {
    const at = this.at();
    this.put({ region, kind: 'health.probe', source: `health/${vantage}`, key: ep, observedAt: at, expiresAt: at + 10_000 + (this.r() % 40_000), value: { up } });
  }

  load(region: string): void {
    const at = this.at();
    const kv = (this.r() % 100) / 100;
    const throttled = this.r() % 4 === 0 ? (this.r() % 50) / 100 : undefined;
    this.put({ region, kind: 'load.metrics', source: 'prometheus/a', key: 'pool', observedAt: at, expiresAt: at + MIN, value: { kvCacheUse: kv, queueDepth: this.r() % 8, ...(throttled !== undefined ? { throttledShare: throttled } : {}) } });
  }

  capacity(region: string): void {
    const at = this.at();
    this.put({ region, kind: 'capacity', source: 'inventory', key: 'gpus', observedAt: at, expiresAt: at + 5 * MIN, value: { fraction: 0.6 + (this.r() % 40) / 100 } });
  }

  power(region: string): void {
    const at = this.at();
    this.put({ region, kind: 'power.budget', source: 'bms', key: 'site', observedAt: at, expiresAt: at + 5 * MIN, value: { importLimitW: 6e6 + (this.r() % 6e6), generationW: this.r() % 2e6, drawW: 7e6 } });
  }

  event(region: string, cancelled = false): void {
    const at = this.at();
    const start = at + (this.r() % 90) * MIN;
    const type = this.pick(['load-shed', 'grid-emergency', 'cap']);
    this.put({
      region,
      kind: 'grid.event',
      source: 'openadr3/vtn',
      key: `ev-${region}`,
      observedAt: at,
      expiresAt: start + 3 * 3_600_000,
      value: { id: `ev-${region}`, start, end: start + 30 * MIN, type, cap: 0.5, ...(cancelled ? { cancelled: true } : {}) },
    });
  }

  override(region: string): void {
    const at = this.at();
    const n = this.r() % 4;
    const base = { id: `ov-${this.seq}`, region, ramp: 0, actor: 'alice', reason: 'test', start: at };
    const o: Override =
      n === 0
        ? { ...base, action: 'drain', value: 0, ramp: 2 * MIN, end: at + 40 * MIN }
        : n === 1
          ? { ...base, action: 'drain', value: 0.25, by: at + 30 * MIN }
          : n === 2
            ? { ...base, action: 'force-down', end: at + 20 * MIN }
            : { ...base, action: 'weight', value: 0.4 };
    this.overrides.push(o);
  }
}

export function populate(w: World): void {
  for (const id of IDS) {
    for (const ep of ['e1', 'e2'])
      for (const v of ['n1', 'n2', 'n3']) {
        // Down, then up twice (the reducer's rise): the probe turned up, a slow start.
        const back = w.r() % 3 === 0;
        w.probe(id, ep, v, !back);
        if (back) {
          w.probe(id, ep, v, true);
          w.probe(id, ep, v, true);
        }
      }
    w.load(id);
    w.capacity(id);
    w.power(id);
  }
  for (const id of ['r02', 'r05', 'r06', 'r09']) w.event(id);
  w.override('r07');
  w.override('r10');
  for (const bucket of [T, T + 10_000, T + 20_000, T + 30_000]) for (const home of IDS) w.demand.push({ bucket, home, name: 'api', queries: 200 + (w.r() % 800) });
}

/** One random change to the world, and how many regions' inputs it changed at most. */
export function step(w: World): { what: string; regions: number } {
  const id = w.pick(IDS);
  switch (w.r() % 12) {
    case 10: {
      // Half the time the whole region fails (every endpoint on every vantage: down, and
      // once back, a slow start), else one endpoint on some vantages. Three failures in a
      // row turn a vote down.
      const whole = w.r() % 2 === 0;
      const eps = whole ? ['e1', 'e2'] : [w.pick(['e1', 'e2'])];
      const vs = whole ? ['n1', 'n2', 'n3'] : ['n1', 'n2', 'n3'].slice(0, 1 + (w.r() % 3));
      for (const ep of eps) for (const v of vs) for (let k = 0; k < 3; k++) w.probe(id, ep, v, false);
      return { what: `${whole ? 'all' : eps[0]} fails at ${id}`, regions: 1 };
    }
    case 11: {
      // The region's endpoints come back (two passes turn a vote up).
      for (const ep of ['e1', 'e2']) for (const v of ['n1', 'n2', 'n3']) for (let k = 0; k < 2; k++) w.probe(id, ep, v, true);
      return { what: `back at ${id}`, regions: 1 };
    }
    case 0:
      return { what: 'nothing', regions: 0 };
    case 1:
      w.probe(id, w.pick(['e1', 'e2']), w.pick(['n1', 'n2', 'n3']), w.r() % 3 !== 0);
      return { what: `probe ${id}`, regions: 1 };
    case 2:
      w.load(id);
      return { what: `load ${id}`, regions: 1 };
    case 3:
      w.power(id);
      return { what: `power ${id}`, regions: 1 };
    case 4:
      w.event(id, w.r() % 3 === 0);
      return { what: `event ${id}`, regions: 1 };
    case 5:
      w.override(id);
      return { what: `override ${id}`, regions: 1 };
    case 6: {
      const regional = w.overrides.filter((o) => o.action !== 'freeze');
      if (regional.length > 0) w.overrides.splice(w.overrides.indexOf(w.pick(regional)), 1);
      return { what: 'override removed', regions: 1 };
    }
    case 7: {
      const at = w.at();
      const frozen = w.overrides.findIndex((o) => o.action === 'freeze');
      if (frozen >= 0) w.overrides.splice(frozen, 1);
      else w.overrides.push({ id: `fz-${at}`, region: '*', action: 'freeze', ramp: 0, actor: 'bob', reason: 'storm', start: at, end: at + 15 * MIN, hold: { r05: 1 } });
      return { what: 'freeze toggled', regions: IDS.length };
    }
    case 8: {
      const last = w.demand[w.demand.length - 1]!.bucket + 10_000;
      for (const home of IDS) w.demand.push({ bucket: last, home, name: 'api', queries: 100 + (w.r() % 1500) });
      return { what: 'demand', regions: 0 };
    }
    default:
      w.capacity(id);
      return { what: `capacity ${id}`, regions: 1 };
  }
}
