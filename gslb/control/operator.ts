/**
 * Operator failover (issue 6): drain, undrain, force and freeze as the API and CLI ask for
 * them, the fleet's status now, and previews — the plan and traffic shares if an override,
 * a grid event or a freeze were applied (a dry run: nothing is written).
 * Every change goes through the StateService, so it is validated, audited (actor, time,
 * reason, before, after), durable and, with Redis, seen by every node.
 */
import { manualIngester, operatorCorrection } from './ingest-grants.js';
import type { SignalRecord } from '../model/snapshot.js';
import { FLEET, type Override, type Plan, type PlanAlert, type RegionId, type Signal } from '../model/types.js';
import { demandPerHome, gridSharesAt, operatorShareAt, plan as planOf } from '../policy/planner/index.js';
import { trafficShares } from '../policy/traffic.js';
import { reduce } from '../state/reducer.js';
import { SignalError, validateSignal } from '../state/signals.js';
import type { StoreLoss } from '../state/store.js';
import { citeLive } from '../model/cited.js';
import { OverrideError, type OverrideRequest, type StateService } from './service.js';
import { fleetView, regionStatusAt, ttlBasisOf, type FleetView, type RegionInfo, type RegionStatus } from './fleet.js';

export type { RegionStatus } from './fleet.js';

export interface DrainRequest {
  reason: string;
  /** Share to keep, [0, 1] (default 0). */
  cap?: number;
  /** Ramp length, ms (default: at once, or the policy's ramp when `by` is given). */
  ramp?: number;
  /** Deadline, ms epoch. */
  by?: number;
}

export interface FleetStatus {
  now: number;
  planVersion: string;
  frozen: Override | null;
  regions: RegionStatus[];
  unplaced?: Record<RegionId, number>;
  /** The plan's alerts (ADR 0014): losses waiting, trusted losses beyond the safety limits, held caps. */
  alerts?: PlanAlert[];
  /** The drain hooks' last calls per region (DrainHookRunner.status), when any region has one. */
  hooks?: unknown;
  /** A data loss of the store this node holds its last plan for, until an operator confirms it (null: none). */
  storeLoss?: StoreLoss | null;
  /** Planning fails and no stored record could be blamed (ADR 0020): the error; the last good plan stays (null: planning works). */
  planError?: string | null;
}

export interface PreviewRequest {
  override?: Omit<OverrideRequest, 'reason'> & { reason?: string };
  event?: { region: string; type: string; start: number; end: number; level?: number; cap?: number; limitW?: number };
  freeze?: boolean;
  /** Plan as if every shadowed grid source applied (policy.grid.shadow, mode shadow). */
  applyShadow?: boolean;
}

/** A grid event entered by hand (POST /v1/grid-events). */
export interface ManualEvent {
  region: RegionId;
  id: string;
  type: string;
  start: number;
  end: number;
  level?: number;
  cap?: number;
  limitW?: number;
  program?: string;
  cancelled?: boolean;
  /**
   * Correct another principal's event instead of entering one's own (ADR 0021): the source it
   * is stored under (e.g. openadr3/vtn.example); the event with this id must be stored there.
   * Needs `reason`; audited (`signal.correct`) with the fact before and after.
   */
  source?: string;
  reason?: string;
}

export interface Preview {
  plan: Plan;
  current: string;
  changed: RegionId[];
  shares: { at: number; regions: Record<RegionId, number>; unplaced: number }[];
}

/** Most instants a preview lists shares for. */
const PREVIEW_INSTANTS = 24;

export class OperatorService {
  constructor(
    private readonly svc: StateService,
    private readonly regions: () => ReadonlySet<string>,
    private readonly currentPlan: () => Plan,
    private readonly clock: () => number = Date.now,
    private readonly hooks: () => unknown = () => undefined,
  ) {}

  private known(region: string, field = 'params.id'): void {
    const ids = this.regions();
    if (!ids.has(region)) throw new OverrideError(field, `"${region}" is not a region of this fleet (known: ${[...ids].sort().join(', ')})`);
  }

  async drain(region: string, req: DrainRequest, actor: string): Promise<Override> {
    this.known(region);
    return this.svc.createOverride({ region, action: 'drain', value: req.cap ?? 0, ramp: req.ramp ?? 0, reason: req.reason, ...(req.by !== undefined ? { by: req.by } : {}) }, actor, this.regions());
  }

  async undrain(region: string, reason: string, actor: string): Promise<{ ended: Override[]; undrain: Override | null }> {
    this.known(region);
    return this.svc.undrain(region, actor, reason, this.svc.planInputs().settings.drain.restoreMs);
  }

  async force(region: string, state: 'up' | 'down', until: number | undefined, reason: string, actor: string): Promise<{ force: Override; ended: Override[] }> {
    this.known(region);
    return this.svc.force(region, state, until, reason, actor, this.regions());
  }

  async unforce(region: string, reason: string, actor: string): Promise<{ ended: Override[] }> {
    this.known(region);
    return this.svc.unforce(region, reason, actor);
  }

  async freeze(frozen: boolean, reason: string, until: number | undefined, actor: string): Promise<{ frozen: Override | null; ended: Override[] }> {
    return this.svc.freeze(frozen, reason, actor, until);
  }

  async distrust(distrusted: boolean, target: { source?: string; principal?: string }, reason: string, until: number | undefined, actor: string): Promise<{ distrusted: Override | null; ended: Override[] }> {
    return this.svc.distrust(distrusted, target, reason, actor, until);
  }

  async status(): Promise<FleetStatus> {
    const now = this.clock();
    const p = this.currentPlan();
    const overrides = await this.svc.overrides();
    const frozen = overrides.find((o) => o.action === 'freeze' && o.start <= now && (o.end === undefined || now < o.end)) ?? null;
    const settings = this.svc.currentSettings();
    const live = new Set(overrides.map((o) => o.id));
    const regions: RegionStatus[] = [...this.regions()].sort().map((id) => {
      const r = regionStatusAt(p, id, now, ttlBasisOf(settings, id));
      return { ...r, reasons: r.reasons.map((x) => citeLive(x, live)) };
    });
    const alerts = p.alerts?.map((a) => ({ ...a, message: citeLive(a.message, live) }));
    const hooks = this.hooks();
    const st = this.svc.status();
    const storeLoss = st.loss ?? null;
    return { now, planVersion: p.version, frozen, regions, ...(p.unplaced ? { unplaced: p.unplaced } : {}), ...(alerts ? { alerts } : {}), ...(hooks !== undefined ? { hooks } : {}), storeLoss, planError: st.quarantine.planError };
  }

  /**
   * A grid event entered by hand (a utility's phone call, an ISO notice read by a person):
   * stored as a `grid.event` signal from source `manual/<actor>`, key = its id, so gridPolicy
   * treats it as any event (a source rule may match `manual/*`). Entering the same id again
   * modifies it; `cancelled: true` cancels it (the reducer remembers what it said, so traffic
   * restores with a ramp). Known until an hour after its end. Fields are validated as a signal's
   * (OverrideError naming `body.<field>`).
   */
  async enterEvent(req: ManualEvent, actor: string): Promise<{ stored: boolean; reason?: string; signal: Signal }> {
    const now = this.clock();
    const { region, id, source, reason, ...rest } = req;
    const own = `manual/${actor}`;
    const correcting = source !== undefined && source !== own;
    let before: SignalRecord | undefined;
    if (correcting) {
      if (reason === undefined || reason.trim() === '') throw new OverrideError('body.reason', 'must say why, in words, when correcting another principal\'s event (audited)');
      before = (await this.svc.snapshot()).records.find((r) => r.id === `${region}|grid.event|${source}|${id}`);
      if (!before) throw new OverrideError('body.source', `no grid event ${id} of ${source} about ${region} is stored (GET /v1/grid-events lists them); leave source out to enter your own`);
    } else if (reason !== undefined) throw new OverrideError('body.reason', 'is for a correction of another principal\'s event (with source); leave it out');
    const value = Object.fromEntries(Object.entries({ id, ...rest }).filter(([, v]) => v !== undefined));
    const sig: Signal = { region, kind: 'grid.event', source: correcting ? source : own, key: id, observedAt: now, expiresAt: Math.max(req.end, now) + 3_600_000, value };
    try {
      validateSignal(sig, now, this.regions(), { refuseEnded: !(correcting && req.cancelled === true) });
    } catch (err) {
      // expiresAt is made from end here: a validity too long is the end's.
      if (err instanceof SignalError) throw new OverrideError(`body.${err.field.replace(/^value\./, '').replace(/^expiresAt$/, 'end')}`, err.message.slice(err.field.length + 2));
      throw err;
    }
    const r = await this.svc.ingest([sig], this.regions(), undefined, { by: correcting ? operatorCorrection(actor, source) : manualIngester(actor) });
    const res = r.results[0] ?? { stored: false, reason: 'not stored' };
    // An event entered by hand is an operator's action: planned now, not after the burst interval.
    if (res.stored) this.svc.planSoon();
    if (correcting && res.stored) {
      await this.svc.appendAudit({
        at: now,
        actor,
        action: 'signal.correct',
        target: `signal:${region}|grid.event|${source}|${id}`,
        reason: reason!,
        before: { principal: before!.principal ?? null, value: before!.signal.value },
        after: { principal: `token:${actor}`, value: sig.value },
      });
    }
    return { ...res, signal: sig };
  }

  /**
   * The fleet now for operators (GET /v1/regions, /v1/grid-events, the dashboard): `regions`
   * says what the configuration holds of each region. `revision` is the store's.
   */
  async fleet(regions: RegionInfo[]): Promise<FleetView & { revision: number }> {
    const now = this.clock();
    // The snapshot the plan was computed from (no store read, and the view agrees with the
    // plan); without one (before the first read, failing static) the store is asked, and its
    // failure is the caller's 503.
    const snap = this.svc.planSnapshot() ?? (await this.svc.snapshot());
    const view = fleetView({ regions, records: snap.records, plan: this.currentPlan(), settings: this.svc.planInputs().settings, demand: snap.demand, now });
    return { ...view, revision: snap.revision };
  }

  /** The plan with `req` applied to the live snapshot, and traffic shares over its schedule. */
  async preview(req: PreviewRequest, actor: string): Promise<Preview> {
    const now = this.clock();
    const { configHash, settings, horizonEpoch } = this.svc.planInputs();
    const snap = await this.svc.snapshot();
    const before = planOf({ configHash, snapshot: snap, settings, horizonEpoch });
    const overrides = [...snap.overrides];
    let records = snap.records;
    if (!req.override && !req.event && !req.freeze && !req.applyShadow) throw new OverrideError('body', 'must hold override, event, freeze or applyShadow: what to preview');
    if (req.override) {
      const o = req.override;
      this.known(o.region, 'body.override.region');
      if (o.action === 'freeze') throw new OverrideError('body.override.action', 'freeze is previewed with {"freeze": true}');
      if (o.by !== undefined && o.action !== 'drain') throw new OverrideError('body.override.by', `is a drain's deadline; it does not apply to ${o.action}`);
      if (o.action === 'force-up' && o.end === undefined) throw new OverrideError('body.override.end', 'is required for force-up');
      if (o.action === 'weight' && o.value === undefined) throw new OverrideError('body.override.value', 'is required for weight');
      let value = o.action === 'drain' ? (o.value ?? 0) : o.value;
      let ramp = o.ramp ?? 0;
      if (o.action === 'undrain') {
        // As DELETE …/drain would: the region's drains end and it ramps back from their level.
        const live = overrides.filter((x) => x.region === o.region && (x.action === 'drain' || x.action === 'undrain'));
        value = operatorShareAt(settings, o.region, live, now);
        ramp = o.ramp ?? settings.drain.restoreMs;
        for (const x of live) overrides.splice(overrides.indexOf(x), 1);
      }
      overrides.push({
        id: '~preview',
        region: o.region,
        action: o.action,
        ...(value !== undefined ? { value } : {}),
        ramp,
        ...(o.by !== undefined ? { by: o.by } : {}),
        actor,
        reason: o.reason ?? 'preview',
        start: o.start ?? now,
        ...(o.end !== undefined ? { end: o.end } : o.action === 'undrain' ? { end: now + ramp } : {}),
      });
    }
    if (req.event) {
      const e = req.event;
      const sig: Signal = {
        region: e.region,
        kind: 'grid.event',
        source: 'preview/operator',
        key: 'preview',
        observedAt: now,
        expiresAt: Math.max(e.end, now + 1),
        value: { id: 'preview', type: e.type, start: e.start, end: e.end, ...(e.level !== undefined ? { level: e.level } : {}), ...(e.cap !== undefined ? { cap: e.cap } : {}), ...(e.limitW !== undefined ? { limitW: e.limitW } : {}) },
      };
      try {
        validateSignal(sig, now, this.regions());
      } catch (err) {
        if (err instanceof SignalError) throw new OverrideError(`body.event.${err.field.replace(/^value\./, '').replace(/^expiresAt$/, 'end')}`, err.message.slice(err.field.length + 2));
        throw err;
      }
      records = [...records, reduce(undefined, sig)!];
    }
    if (req.freeze) {
      const hold = gridSharesAt({ configHash, snapshot: snap, settings, horizonEpoch }, now);
      overrides.push({ id: '~preview-freeze', region: FLEET, action: 'freeze', ramp: 0, hold, actor, reason: 'preview', start: now });
    }
    const applied = req.applyShadow ? { ...settings, gridMode: 'apply' as const, gridShadow: [] } : settings;
    const after = planOf({ configHash, snapshot: { ...snap, records, overrides }, settings: applied, horizonEpoch });
    const changed = [...this.regions()].sort().filter((r) => JSON.stringify(before.regions[r] ?? null) !== JSON.stringify(after.regions[r] ?? null));
    const instants = [now, ...new Set(changed.flatMap((r) => (after.regions[r] ?? []).map((s) => s.at)).filter((t) => t > now))].sort((a, b) => a - b).slice(0, PREVIEW_INSTANTS);
    const demand = demandPerHome(snap.demand);
    return { plan: after, current: this.currentPlan().version, changed, shares: instants.map((at) => ({ at, ...trafficShares(after, settings, demand, at) })) };
  }
}
