/**
 * The fleet as operators look at it (GET /v1/regions, GET /v1/grid-events, the web dashboard):
 * per region its configuration (name, place, capacity, power), where the plan stands now and
 * what it does next, the traffic share it is expected to take, its power now, and every fact
 * the store holds about it with its source and age; and the grid events and alerts the store
 * knows, with when they were learned. Pure: everything comes from the arguments.
 */
import { answerTtl, nextChangeOf, regionStepAt, secondsUntil } from '../policy/decide.js';
import { STALE_MARK } from '../policy/rules/rule.js';
import { demandPerHome, healthAt, regionPowerAt, type PlannerRegion, type PlannerSettings } from '../policy/planner/index.js';
import { trafficShares } from '../policy/traffic.js';
import type { Plan, RegionId, SignalKind } from '../model/types.js';
import { KINDS } from '../model/kinds/index.js';
import { regionStateOf, visiblyDiffers, type RegionState } from '../model/region-state.js';
import { gridEventPhaseOf, isReplay, type GridEventPhase } from '../model/grid-event-phase.js';
import type { SignalRecord, DemandBucket } from '../model/snapshot.js';
import type { KindValue } from '../model/kinds/index.js';

type GridAlert = KindValue<'grid.alert'>;
type GridEvent = KindValue<'grid.event'>;

/** What the configuration says of a region (its region file). */
/** A record's principal and grant, as the views show them (absent fields: not recorded). */
function provenanceOf(r: SignalRecord): { principal?: string; grant?: string } {
  return { ...(r.principal !== undefined ? { principal: r.principal } : {}), ...(r.grant !== undefined ? { grant: r.grant } : {}) };
}

export interface RegionInfo {
  id: RegionId;
  name: string;
  location?: { lat: number; lon: number; country?: string; city?: string };
  capacityUnits?: number;
  power?: { site?: string; balancingAuthority?: string; importLimitW?: number; fullLoadW?: number };
}

/** One fact the store holds about a region. */
export interface SignalView {
  kind: SignalKind;
  source: string;
  /** Who wrote it (ADR 0021); absent on a record an earlier build wrote. */
  principal?: string;
  /** The grant it was written under; absent with a principal = without a grant. */
  grant?: string;
  key: string;
  observedAt: number;
  expiresAt: number;
  /** now − observedAt, ms. */
  ageMs: number;
  /** The fact is past its expiresAt (the stale policy of its kind decides what that does). */
  expired: boolean;
  /** The value in words, e.g. `up, 12 ms` or `queue 4, KV 0.62`. */
  summary: string;
  value: unknown;
}

/** Power at the site now (absent fields: not known). */
export interface PowerNow {
  /** Grid import limit (under a grid event's limit) + on-site generation + storage discharge (while storage holds energy), W. */
  availableW?: number;
  drawW?: number;
  /** availableW − drawW, W. */
  headroomW?: number;
  /** The budget's source and age. */
  source?: string;
  ageMs?: number;
}

/** A region as decide sees it now, and its next scheduled change (GET /v1/status, /v1/regions). */
export interface RegionStatus {
  id: RegionId;
  /** Admission share now (0 when down). */
  share: number;
  down: boolean;
  refuse: boolean;
  /** Its state in the words of gslb/model/region-state.ts. */
  state: RegionState;
  ttlCap?: number;
  /**
   * The TTL an answer naming it carries now, s, at most: the TTL of its names, bounded by its
   * TTL cap and by its next change (decide bounds it also by the changes of regions ranked
   * before it), never below minTtl. Absent when no answer names it (down, or a share of 0).
   */
  ttl?: number;
  reasons: string[];
  /**
   * Its next change; `ifNotRefreshed`: a fact it depends on goes stale then (its stale policy
   * caps or downs it) — a collector that keeps reporting moves it on, so it is not scheduled.
   */
  next?: { at: number; share: number; down: boolean; ifNotRefreshed?: true };
}

/** What a region's answer TTL is made of: the TTL of its names (TTL0) and minTtl, s. */
export interface TtlBasis {
  ttl0S: number;
  minTtlS: number;
}

/** The TTL basis of a region under planner settings (its own TTL0 when its names set one). */
export function ttlBasisOf(settings: PlannerSettings, id: RegionId): TtlBasis {
  const r = settings.regions.find((x) => x.id === id);
  return { ttl0S: r?.ttl0S ?? settings.drain.ttl0S, minTtlS: settings.drain.minTtlS };
}

/** Steps looked at past `now` for the next visible change (a plan holds far fewer per region). */
const NEXT_LOOKAHEAD = 1000;

/**
 * The next step after `now` that changes what a region's status shows (down, or its share),
 * skipping steps that change only its TTL cap, its per-home weights or its reasons.
 */
export function nextVisibleChangeOf(plan: Plan, id: RegionId, now: number): { at: number; step: ReturnType<typeof regionStepAt> } | undefined {
  const st = regionStepAt(plan, id, now);
  let at = nextChangeOf(plan, id, now);
  for (let i = 0; i < NEXT_LOOKAHEAD && Number.isFinite(at); i++) {
    const nx = regionStepAt(plan, id, at);
    if (visiblyDiffers(st, nx)) return { at, step: nx };
    at = nextChangeOf(plan, id, at);
  }
  return undefined;
}

/** Whether a change brings a cap from a fact gone stale that was not there before. */
function goesStale(before: readonly string[], after: readonly string[]): boolean {
  return after.some((r) => r.includes(STALE_MARK) && !before.includes(r));
}

/** The plan's step in force for a region at `now`, its state and its next visible change. */
export function regionStatusAt(plan: Plan, id: RegionId, now: number, basis?: TtlBasis): RegionStatus {
  const st = regionStepAt(plan, id, now);
  const n = nextVisibleChangeOf(plan, id, now);
  const nextAt = n?.at ?? Infinity;
  const nx = n?.step;
  let ttl: number | undefined;
  if (basis && !st.down && st.share > 0) {
    ttl = answerTtl(basis.minTtlS, basis.ttl0S, st.ttlCap ?? Infinity, secondsUntil(nextChangeOf(plan, id, now), now));
  }
  return {
    id,
    share: st.down ? 0 : st.share,
    down: st.down,
    refuse: st.refuse === true,
    state: regionStateOf(st, nx),
    ...(st.ttlCap !== undefined ? { ttlCap: st.ttlCap } : {}),
    ...(ttl !== undefined ? { ttl } : {}),
    reasons: st.reasons,
    ...(nx ? { next: { at: nextAt, share: nx.down ? 0 : nx.share, down: nx.down, ...(goesStale(st.reasons, nx.reasons) ? { ifNotRefreshed: true as const } : {}) } } : {}),
  };
}

export interface RegionView extends RegionStatus {
  name: string;
  location?: RegionInfo['location'];
  capacityUnits?: number;
  power: NonNullable<RegionInfo['power']> & PowerNow;
  /** Expected fraction of all measured demand this region takes now (every home weighed the same before any demand is measured). */
  traffic: number;
  /** Health now as the planner counts it: endpoints not down (by a majority of vantages), of the endpoints probed (absent: none). */
  health?: { up: number; total: number };
  signals: SignalView[];
}

export interface GridEventView {
  region: RegionId;
  kind: 'grid.event' | 'grid.alert';
  source: string;
  /** Who wrote it (ADR 0021); absent on a record an earlier build wrote. */
  principal?: string;
  grant?: string;
  key: string;
  /** grid.event: its type; grid.alert: its type (eea when absent). */
  type: string;
  level?: number;
  /** When it starts and ends (alerts: when announced; absent = now / open). */
  start?: number;
  end?: number;
  cancelled: boolean;
  /** Where it stands now (gslb/model/grid-event-phase.ts): in-force, announced, over (history), cancelled. */
  phase: GridEventPhase;
  /** Learned when its end had already passed (a collector replaying a feed's history): stored as history, never acted on. */
  replay: boolean;
  program?: string;
  message?: string;
  /** When its current content was first learned (the notice a drain had). */
  learnedAt: number;
  observedAt: number;
  expiresAt: number;
}

export interface FleetView {
  now: number;
  planVersion: string;
  regions: RegionView[];
  /** Expected fraction of all demand no region admits now. */
  unplaced: number;
  events: GridEventView[];
}

export interface FleetInput {
  regions: RegionInfo[];
  records: SignalRecord[];
  plan: Plan;
  settings: PlannerSettings;
  demand: DemandBucket[];
  now: number;
}

/** A signal's value in a few words (each kind's summary, gslb/model/kinds/). */
export function summarize(kind: SignalKind, value: unknown): string {
  const parts = KINDS[kind]?.summary((value ?? {}) as Record<string, unknown>) ?? [];
  return parts.map((s) => s.trim()).filter((s) => s !== '').join(', ');
}

/**
 * Power now: availability, draw and headroom as the planner weighs them (regionPowerAt: not
 * stale budgets, a grid event's import limit in force, the smallest availability when several
 * meters report; else the configured import limit), and the newest budget's source and age.
 */
export function powerNow(region: PlannerRegion, records: readonly SignalRecord[], s: PlannerSettings, now: number): PowerNow {
  const out: PowerNow = { ...regionPowerAt(region, records, s, now) };
  let newest: SignalRecord | undefined;
  for (const r of records) {
    if (r.signal.kind !== 'power.budget' || r.signal.region !== region.id) continue;
    if (!newest || r.signal.observedAt > newest.signal.observedAt) newest = r;
  }
  if (newest) {
    out.source = newest.signal.source;
    out.ageMs = Math.max(0, now - newest.signal.observedAt);
  }
  return out;
}

/** The fleet now (see the module comment). Regions in id order; events by start, then region. */
export function fleetView(input: FleetInput): FleetView {
  const { plan, now } = input;
  const byRegion = new Map<RegionId, SignalRecord[]>();
  for (const r of input.records) {
    if (r.signal.kind === 'demand') continue;
    const list = byRegion.get(r.signal.region) ?? [];
    list.push(r);
    byRegion.set(r.signal.region, list);
  }
  const traffic = trafficShares(plan, input.settings, demandPerHome(input.demand), now);
  const regions = [...input.regions]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((info): RegionView => {
      const recs = byRegion.get(info.id) ?? [];
      const planned = input.settings.regions.find((x) => x.id === info.id) ?? { id: info.id, ...(info.power?.importLimitW !== undefined ? { importLimitW: info.power.importLimitW } : {}) };
      const tally = healthAt(
        recs.filter((r) => r.signal.kind === 'health.probe'),
        now,
        input.settings.stale['health.probe'],
      );
      const signals = recs
        .map(
          (r): SignalView => ({
            kind: r.signal.kind,
            source: r.signal.source,
            ...provenanceOf(r),
            key: r.signal.key,
            observedAt: r.signal.observedAt,
            expiresAt: r.signal.expiresAt,
            ageMs: Math.max(0, now - r.signal.observedAt),
            expired: r.signal.expiresAt <= now,
            summary: summarize(r.signal.kind, r.signal.value),
            value: r.signal.value,
          }),
        )
        .sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : b.observedAt - a.observedAt));
      const status = regionStatusAt(plan, info.id, now, ttlBasisOf(input.settings, info.id));
      return {
        id: info.id,
        name: info.name,
        ...(info.location ? { location: info.location } : {}),
        ...(info.capacityUnits !== undefined ? { capacityUnits: info.capacityUnits } : {}),
        power: { ...(info.power ?? {}), ...powerNow(planned, recs, input.settings, now) },
        share: status.share,
        down: status.down,
        refuse: status.refuse,
        state: status.state,
        ...(status.ttlCap !== undefined ? { ttlCap: status.ttlCap } : {}),
        ...(status.ttl !== undefined ? { ttl: status.ttl } : {}),
        reasons: status.reasons,
        ...(status.next ? { next: status.next } : {}),
        traffic: traffic.regions[info.id] ?? 0,
        ...(tally.probed > 0 ? { health: { up: tally.probed - tally.downEps.length, total: tally.probed } } : {}),
        signals,
      };
    });
  const events: GridEventView[] = [];
  for (const r of input.records) {
    const s = r.signal;
    if (s.kind !== 'grid.event' && s.kind !== 'grid.alert') continue;
    const learnedAt = r.fold.kind === 'grid' ? r.fold.learnedAt : s.observedAt;
    const base = { region: s.region, kind: s.kind, source: s.source, ...provenanceOf(r), key: s.key, learnedAt, observedAt: s.observedAt, expiresAt: s.expiresAt };
    if (s.kind === 'grid.event') {
      const v = s.value as GridEvent;
      const cancelled = v.cancelled === true;
      events.push({
        ...base,
        type: v.type,
        ...(v.level !== undefined ? { level: v.level } : {}),
        start: v.start,
        end: v.end,
        cancelled,
        phase: gridEventPhaseOf({ start: v.start, end: v.end, cancelled }, now),
        replay: isReplay({ end: v.end, learnedAt }),
        ...(v.program !== undefined ? { program: v.program } : {}),
      });
    } else {
      const v = s.value as GridAlert;
      events.push({
        ...base,
        type: v.type ?? 'eea',
        level: v.level,
        ...(v.start !== undefined ? { start: v.start } : {}),
        ...(v.end !== undefined ? { end: v.end } : {}),
        cancelled: false,
        phase: gridEventPhaseOf({ ...(v.start !== undefined ? { start: v.start } : {}), ...(v.end !== undefined ? { end: v.end } : {}), cancelled: false }, now),
        replay: isReplay({ ...(v.end !== undefined ? { end: v.end } : {}), learnedAt }),
        ...(v.program !== undefined ? { program: v.program } : {}),
        ...(v.message !== undefined ? { message: v.message } : {}),
      });
    }
  }
  events.sort((a, b) => (a.start ?? a.observedAt) - (b.start ?? b.observedAt) || (a.region < b.region ? -1 : a.region > b.region ? 1 : 0));
  return { now, planVersion: plan.version, regions, unplaced: traffic.unplaced, events };
}
