/**
 * The per-region and per-collector metrics of the primary (docs/api.md "GET /metrics"), read
 * at scrape time from the plan in force, the signal records it was planned from and the
 * collectors' counts: region share, next change, state, health and power, signal age, grid
 * facts in force, collector freshness.
 * Every label set is bounded by configuration (regions × states, regions × signal kinds,
 * collectors). The pure parts are exported for the case tables beside this file.
 */
import client, { type Registry } from 'prom-client';
import { nextChangeOf, regionStepAt } from '../policy/decide.js';
import { healthAt, regionPowerAt, type PlannerRegion, type PlannerSettings } from '../policy/planner/index.js';
import type { SignalRecord } from '../model/snapshot.js';
import { REGION_STATES, type RegionState } from '../model/region-state.js';
import { regionStatusAt } from './fleet.js';
import type { Plan, RegionId, SignalKind } from '../model/types.js';

/** A region's state as `gridsteer status` shows it: the one table of gslb/model/region-state.ts. */
export { REGION_STATES, type RegionState };

/** The state of region `id` at `now` from the plan (gslb/model/region-state.ts), as GET /v1/status says it. */
export function regionStateAt(plan: Plan, id: RegionId, now: number): RegionState {
  return regionStatusAt(plan, id, now).state;
}

/**
 * Health by probes at `now`: true when some probed endpoint is up by a majority of its
 * vantages, false when every probed endpoint is down (the planner's health down, before any
 * operator force), undefined without probes.
 */
export function regionHealthyAt(records: readonly SignalRecord[], s: PlannerSettings, now: number): boolean | undefined {
  const h = healthAt(
    records.filter((r) => r.signal.kind === 'health.probe'),
    now,
    s.stale['health.probe'],
  );
  return h.probed === 0 ? undefined : !h.down;
}

/**
 * Grid facts in force at `now` per (region, kind) for the regions in `regions`: grid.event
 * facts not cancelled with start ≤ now < end, and grid.alert facts not expired whose
 * announced window (if any) holds now. Regions without any are listed with 0.
 */
export function gridFactsInForce(records: readonly SignalRecord[], regions: ReadonlySet<RegionId>, now: number): { region: RegionId; kind: 'grid.event' | 'grid.alert'; n: number }[] {
  const count = new Map<string, number>();
  for (const id of regions) for (const kind of ['grid.event', 'grid.alert']) count.set(`${id}|${kind}`, 0);
  for (const r of records) {
    const { region, kind } = r.signal;
    if (!regions.has(region)) continue;
    let holds = false;
    if (kind === 'grid.event') {
      const v = r.signal.value as { start: number; end: number; cancelled?: boolean };
      holds = v.cancelled !== true && v.start <= now && now < v.end;
    } else if (kind === 'grid.alert') {
      const v = r.signal.value as { start?: number; end?: number };
      holds = r.signal.expiresAt > now && (v.start ?? -Infinity) <= now && now < (v.end ?? Infinity);
    }
    if (holds) count.set(`${region}|${kind}`, (count.get(`${region}|${kind}`) ?? 0) + 1);
  }
  return [...count].map(([k, n]) => {
    const [region, kind] = k.split('|') as [RegionId, 'grid.event' | 'grid.alert'];
    return { region, kind, n };
  });
}

/**
 * Seconds since the newest signal of each (region, kind) was observed, for the regions in
 * `regions` (a record of another region is left out: the label set stays the configured fleet's).
 */
export function signalAges(records: readonly SignalRecord[], regions: ReadonlySet<RegionId>, now: number): { region: RegionId; kind: SignalKind; ageS: number }[] {
  const newest = new Map<string, { region: RegionId; kind: SignalKind; at: number }>();
  for (const r of records) {
    const { region, kind, observedAt } = r.signal;
    if (!regions.has(region)) continue;
    const k = `${region}|${kind}`;
    const cur = newest.get(k);
    if (!cur || observedAt > cur.at) newest.set(k, { region, kind, at: observedAt });
  }
  return [...newest.values()].map((n) => ({ region: n.region, kind: n.kind, ageS: Math.max(0, now - n.at) / 1000 }));
}

/** What the fleet metrics read, each call at scrape time. */
export interface FleetMetricsSource {
  /** The planner's settings in force (its regions are the fleet). */
  settings(): PlannerSettings;
  plan(): Plan;
  /** StateService.planRecords(). */
  records(): { records: SignalRecord[]; frozen: boolean } | null;
  /** ms epoch. */
  now(): number;
  /** Per collector running on this node, when a signal of it was last stored (ms epoch). */
  collectorsLastStored(): ReadonlyMap<string, number>;
}

/** Registers the gauges of this module on `registry`. */
export function registerFleetMetrics(registry: Registry, src: FleetMetricsSource): void {
  /** The records per region (expiry frozen when the plan was), for one scrape. */
  const byRegion = (regions: readonly PlannerRegion[]): Map<RegionId, SignalRecord[]> => {
    const out = new Map<RegionId, SignalRecord[]>(regions.map((r) => [r.id, []]));
    const rs = src.records();
    for (const r of rs?.records ?? []) {
      const list = out.get(r.signal.region);
      if (list) list.push(rs!.frozen ? { ...r, signal: { ...r.signal, expiresAt: Infinity } } : r);
    }
    return out;
  };
  new client.Gauge({
    name: 'gridsteer_region_state',
    help: 'the state of each region now from the plan in force, as gridsteer status shows it: 1 for its state (up, draining, drained, restoring, refusing, down), 0 for the others',
    labelNames: ['region', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      const plan = src.plan();
      const now = src.now();
      for (const r of src.settings().regions) {
        const st = regionStateAt(plan, r.id, now);
        for (const state of REGION_STATES) this.set({ region: r.id, state }, state === st ? 1 : 0);
      }
    },
  });
  /**
   * A gauge per configured region, read at scrape time: `valueOf` gets the region, its records
   * (as byRegion gives them), the settings and now; undefined = no series for that region.
   */
  const regionGauge = (
    name: string,
    help: string,
    valueOf: (r: PlannerRegion, ctx: { recs: SignalRecord[]; s: PlannerSettings; plan: Plan; now: number }) => number | undefined,
  ) =>
    new client.Gauge({
      name,
      help,
      labelNames: ['region'],
      registers: [registry],
      collect() {
        this.reset();
        const s = src.settings();
        const ctx = { s, plan: src.plan(), now: src.now() };
        const recs = byRegion(s.regions);
        for (const r of s.regions) {
          const v = valueOf(r, { ...ctx, recs: recs.get(r.id) ?? [] });
          if (v !== undefined) this.set({ region: r.id }, v);
        }
      },
    });
  regionGauge('gridsteer_region_share', 'admission share of each region now (0 when down), from the plan in force', (r, { plan, now }) => {
    const st = regionStepAt(plan, r.id, now);
    return st.down ? 0 : st.share;
  });
  regionGauge('gridsteer_region_next_change_timestamp_seconds', "when the region's plan next changes (Unix seconds); absent when nothing is scheduled", (r, { plan, now }) => {
    const t = nextChangeOf(plan, r.id, now);
    return Number.isFinite(t) ? t / 1000 : undefined;
  });
  regionGauge(
    'gridsteer_region_healthy',
    "health probes of each region now, as the planner counts them: 1 while some probed endpoint is up by a majority of its vantages, 0 when every one is down (the region is down unless forced up); absent without probes",
    (_r, { recs, s, now }) => {
      const h = regionHealthyAt(recs, s, now);
      return h === undefined ? undefined : h ? 1 : 0;
    },
  );
  regionGauge(
    'gridsteer_region_power_available_watts',
    "power the site can draw now, W: its grid import limit (power budget, else the region file's power.importLimitW), lowered by a grid event's import limit in force, plus on-site generation and storage discharge while storage holds energy; absent when no import limit is known",
    (r, { recs, s, now }) => regionPowerAt(r, recs, s, now).availableW,
  );
  regionGauge(
    'gridsteer_region_power_headroom_watts',
    "available power minus the site's draw reported by its power budget, W (negative: drawing more than is available); absent without a reported draw",
    (r, { recs, s, now }) => regionPowerAt(r, recs, s, now).headroomW,
  );
  /** A gauge per configured region and signal kind, from the records the plan was computed from. */
  const kindGauge = (name: string, help: string, rows: (records: SignalRecord[], ids: ReadonlySet<RegionId>, now: number) => { region: RegionId; kind: string; value: number }[]) =>
    new client.Gauge({
      name,
      help,
      labelNames: ['region', 'kind'],
      registers: [registry],
      collect() {
        this.reset();
        const ids = new Set(src.settings().regions.map((r) => r.id));
        for (const x of rows(src.records()?.records ?? [], ids, src.now())) this.set({ region: x.region, kind: x.kind }, x.value);
      },
    });
  kindGauge('gridsteer_signal_age_seconds', 'seconds since the newest signal of each region and kind the plan in force was computed from was observed at its source', (recs, ids, now) =>
    signalAges(recs, ids, now).map((a) => ({ region: a.region, kind: a.kind, value: a.ageS })),
  );
  kindGauge(
    'gridsteer_grid_facts_in_force',
    'grid events (not cancelled, between start and end) and grid alerts (unexpired, within any announced window) in force now, per region and kind',
    (recs, ids, now) => gridFactsInForce(recs, ids, now).map((f) => ({ region: f.region, kind: f.kind, value: f.n })),
  );
  new client.Gauge({
    name: 'gridsteer_collector_last_success_timestamp_seconds',
    help: 'when a signal of each collector running on this node was last stored (Unix seconds); absent before the first (a poller runs on one node at a time)',
    labelNames: ['collector'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [collector, at] of src.collectorsLastStored()) this.set({ collector }, at / 1000);
    },
  });
}
