/**
 * The planner benchmark's fleet (bench/plan.ts, bench/plan-digest.ts): n regions with a
 * realistic store snapshot. Per region: two endpoints probed from three vantages (expiring
 * 30–90 s ahead), one load reading, one capacity and one power budget; every 20th region
 * has a grid event within the hour and every 20th (others) an operator drain with a
 * 2-minute ramp. Records are folded by the real reducer. Deterministic in n.
 */
import { defaultSettings, type PlannerSettings } from '../gslb/policy/planner/index.js';
import { reduce } from '../gslb/state/reducer.js';
import type { SignalRecord, StoreSnapshot } from '../gslb/model/snapshot.js';
import type { Override, Signal } from '../gslb/model/types.js';
import { xorshift32 } from '../test/helpers/policy.js';

export const NOW = 1_800_000_000_000;

export function benchFleet(n: number): { settings: PlannerSettings; snapshot: StoreSnapshot } {
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
