/**
 * Grid obligations: which gridPolicy rule a grid fact matches, the facts in force with their drain curves, and a fact's import limit as a share.
 * A rule of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import { grantedRecord, principalOf } from '../../model/principal.js';
import type { SignalRecord } from '../../model/snapshot.js';
import type { KindValue } from '../../model/kinds/index.js';
import { curveWords, drainCurve, type CurvePhase, type CurvePoint } from '../drain.js';
import { type ViewAcc, type ViewRule, automationCap, capTtl, refuseNew } from './rule.js';
import type { GridFact, LossClaim } from './shared.js';
import { gridImportW, siteAvailableW } from './watts.js';
import type { GridRule } from '../../model/policy.js';
import { type PlannerRegion, type PlannerSettings, round } from '../settings.js';
import { isoOf } from '../../model/domains.js';

/** A drain curve's phases after its event's end (hysteresis, then the restore ramp): soft holds (RegionView.firm). */
function softPhase(phase: CurvePhase): boolean {
  return phase === 'hold' || phase === 'restore';
}

/** The first rule matching a grid fact, or undefined. */
export function matchGridRule(rules: GridRule[], kind: string, source: string, type: string, level: number | undefined): GridRule | undefined {
  return rules.find(
    (r) =>
      r.kind === kind &&
      (r.types === undefined || r.types.includes(type)) &&
      (r.minLevel === undefined || (level ?? 0) >= r.minLevel) &&
      (r.maxLevel === undefined || (level ?? 0) <= r.maxLevel) &&
      (r.source === undefined || source.startsWith(r.source)),
  );
}

/** The trust of a source: the longest matching prefix in gridTrust, else full. */
export function trustOf(s: PlannerSettings, source: string): 'full' | 'cap' {
  let best = '';
  let t: 'full' | 'cap' = 'full';
  for (const [prefix, v] of Object.entries(s.gridTrust)) {
    if (source.startsWith(prefix) && prefix.length >= best.length) {
      best = prefix;
      t = v;
    }
  }
  return t;
}

/**
 * The share an import limit of `limitW` leaves the region (its full-load draw against the
 * limited import plus on-site generation and storage from its power budget), or 1 when the
 * region has no fullLoadW.
 */
function importShare(region: PlannerRegion, power: readonly SignalRecord[], limitW: number): number {
  if (!region.fullLoadW) return 1;
  return Math.min(1, importAvailableW(region, power, limitW) / region.fullLoadW);
}

/** The W a site has under an import limit: the limited import plus on-site generation and storage (the last applied budget). */
function importAvailableW(region: PlannerRegion, power: readonly SignalRecord[], limitW: number): number {
  // The last applied budget counts (not the least of several, as the power rule takes, nor
  // skipping a stale one): kept as it was, see ADR 0012.
  let avail = gridImportW(region, limitW);
  for (const r of power) {
    if (r.fold.kind !== 'applied') continue;
    avail = siteAvailableW(r.fold.value as KindValue<'power.budget'>, region, limitW).availableW;
  }
  return avail;
}

export function gridFacts(region: PlannerRegion, grid: readonly SignalRecord[], power: readonly SignalRecord[], s: PlannerSettings): GridFact[] {
  const out: GridFact[] = [];
  const iso = (t: number) => (Number.isFinite(t) ? isoOf(t) : '…');
  for (const r of grid) {
    const fold = r.fold.kind === 'grid' ? r.fold : undefined;
    // Who wrote it, in the fact's words (reasons, alerts, explain): ADR 0021. An earlier build's record names none.
    const by = r.principal !== undefined ? ` by ${r.principal}` : '';
    const contents: { value: unknown; learnedAt: number; until?: number; previous: boolean }[] = [
      { value: r.signal.value, learnedAt: fold?.learnedAt ?? r.signal.observedAt, previous: false },
    ];
    if (fold?.last) contents.push({ value: fold.last.value, learnedAt: fold.last.learnedAt, until: fold.last.until, previous: true });
    for (const c of contents) {
      let kind: 'grid.event' | 'grid.alert';
      let type: string;
      let level: number | undefined;
      let start: number;
      let end: number;
      let what: string;
      let factCap: number | undefined;
      let limitW: number | undefined;
      let priority: number | undefined;
      let program = '';
      let eventId: string;
      if (r.signal.kind === 'grid.event') {
        const v = c.value as KindValue<'grid.event'>;
        if (v.cancelled) continue;
        kind = 'grid.event';
        ({ type, level, start, end, cap: factCap, limitW, priority } = v);
        program = v.program ?? '';
        eventId = v.id;
        what = `grid event ${v.id} from ${r.signal.source}${by}: ${v.type}${v.level !== undefined ? ` level ${v.level}` : ''}${v.limitW !== undefined ? ` ${Math.round(v.limitW)} W` : ''}${v.cap !== undefined ? ` ${v.cap}` : ''}, ${iso(v.start)}–${iso(v.end)}`;
      } else {
        const v = c.value as KindValue<'grid.alert'>;
        kind = 'grid.alert';
        eventId = r.signal.key;
        type = v.type ?? 'eea';
        level = v.level;
        start = v.start ?? c.learnedAt;
        end = v.end ?? Infinity;
        // The current content stops counting when its stale policy says so.
        if (!c.previous) end = Math.min(end, r.signal.expiresAt + s.stale['grid.alert'].keepMs);
        what = `grid alert ${type} level ${v.level}${v.zone ? ` in ${v.zone}` : ''} from ${r.signal.source}${by}`;
      }
      if (c.previous) what += ` (until it changed at ${iso(c.until!)})`;
      const rule = matchGridRule(s.gridRules, kind, r.signal.source, type, level);
      if (!rule) continue;
      const shadow = s.gridMode === 'shadow' || s.gridShadow.some((p) => r.signal.source.startsWith(p));
      let cap = rule.then.drain ? 0 : rule.then.capFromFact ? (factCap ?? 1) : (rule.then.cap ?? 1);
      // A claim of physical loss: a drain, or an import limit that leaves the site less than it needs to serve at all.
      const lossClaimed =
        rule.then.loss === true &&
        (rule.then.importLimit && limitW !== undefined ? importAvailableW(region, power, limitW) < Math.max(region.minServingW ?? 0, 1e-9) : cap === 0);
      let note = '';
      if (cap < s.gridCapFloor && trustOf(s, r.signal.source) === 'cap') {
        note = ` (source trusted to cap only: a drain needs an operator's confirmation, so capped at ${s.gridCapFloor})`;
        cap = s.gridCapFloor;
      }
      // An import limit is planned ahead like a cap: the share it will leave.
      let curveCap = cap;
      if (rule.then.importLimit && limitW !== undefined) curveCap = Math.min(curveCap, importShare(region, power, limitW));
      const effect = [
        cap < 1 ? `cap ${round(cap)}` : '',
        rule.then.ttlCap !== undefined ? `TTL ≤ ${rule.then.ttlCap} s` : '',
        rule.then.importLimit && limitW !== undefined ? `import limit ${Math.round(limitW)} W` : '',
      ]
        .filter((x) => x !== '')
        .join(', ');
      const until = c.until;
      const curveOf = (x: number) =>
        drainCurve({ start, end, learnedAt: c.learnedAt, cap: round(x), ttl0S: region.ttl0S ?? s.drain.ttl0S, gridDrain: true, ...(until !== undefined ? { until } : {}) }, s.drain);
      const curve = curveCap < 1 && Number.isFinite(start) ? curveOf(curveCap) : undefined;
      const loss: LossClaim | undefined =
        lossClaimed && Number.isFinite(start)
          ? { source: r.signal.source, principal: principalOf(r), granted: grantedRecord(r), cancelled: c.previous && (r.signal.value as { cancelled?: boolean }).cancelled === true, eventId, observedAt: r.signal.observedAt, learnedAt: c.learnedAt, curve: curve && curveCap === 0 ? curve : curveOf(0) }
          : undefined;
      out.push({
        rule,
        what,
        start,
        from: Math.max(start, c.learnedAt),
        end: Math.min(end, until ?? Infinity),
        cap,
        ...(limitW !== undefined ? { limitW } : {}),
        note,
        effect,
        shadow,
        previous: c.previous,
        ...(priority !== undefined ? { priority } : {}),
        ...(kind === 'grid.alert' && !c.previous ? { keptFrom: r.signal.expiresAt } : {}),
        priorityKey: `${r.signal.source}|${program}`,
        ...(curve ? { curve } : {}),
        ...(loss ? { loss } : {}),
      });
    }
  }
  return out;
}

interface LiveFact {
  f: GridFact;
  /** Its drain curve's point at t (undefined: no curve). */
  p: CurvePoint | undefined;
  inWindow: boolean;
}

/** liveFacts when nothing acts (shared: never written to). */
const NO_LIVE: { live: LiveFact[]; bestPriority: ReadonlyMap<string, number> } = { live: [], bestPriority: new Map() };

/**
 * The grid facts acting at t (in their window, or on their drain curve below 1) and, per
 * source and program, the lowest priority number among them (OpenADR: that one wins).
 */
export function liveFacts(facts: readonly GridFact[], t: number): { live: LiveFact[]; bestPriority: ReadonlyMap<string, number> } {
  if (facts.length === 0) return NO_LIVE;
  const live: LiveFact[] = [];
  for (const f of facts) {
    const p = f.curve?.at(t);
    const inWindow = t >= f.from && t < f.end;
    if (inWindow || (p !== undefined && p.cap < 1)) live.push({ f, p, inWindow });
  }
  if (live.length === 0) return NO_LIVE;
  const bestPriority = new Map<string, number>();
  for (const { f } of live) {
    if (f.priority === undefined) continue;
    bestPriority.set(f.priorityKey, Math.min(bestPriority.get(f.priorityKey) ?? Infinity, f.priority));
  }
  return { live, bestPriority };
}

/**
 * The lowest grid-event import limit in force at t, W (Infinity: none), as viewAt applies
 * it: a fact in its window whose gridPolicy rule sets `importLimit`, not shadowed and not
 * yielding to a lower priority number of its source and program.
 */
export function eventImportLimitAt(facts: readonly GridFact[], t: number): number {
  const { live, bestPriority } = liveFacts(facts, t);
  let limitW = Infinity;
  for (const { f, inWindow } of live) {
    const best = bestPriority.get(f.priorityKey);
    if (!inWindow || f.shadow || (f.priority !== undefined && best !== undefined && f.priority > best)) continue;
    if (f.rule.then.importLimit && f.limitW !== undefined && f.limitW < limitW) limitW = f.limitW;
  }
  return limitW;
}

/**
 * The grid rule: every grid fact read through gridPolicy (first matching rule), with its drain
 * curve (drain.ts): the ramp ahead of its start, the hold, the restore after it. A fact lowers
 * gridPolicy's discretionary share (automationCap); the automation limits (rules/limits.ts)
 * then apply the safety floor or the operator's freeze to it. A trusted physical loss (the
 * loss pass's verdict) is kept apart: no limit lifts it.
 */
export const gridRule: ViewRule = {
  name: 'grid obligations',
  module: 'rules/grid.ts',
  kinds: ['grid.alert', 'grid.event', 'power.budget'],
  derived: ['facts'],
  reads: 'grid.event and grid.alert through gridPolicy (power.budget for an import limit\'s share); the loss pass\'s verdicts',
  changesAt: "a fact's window (from, end), each step of its drain curve",
  sets: "gridPolicy's share (its hold and restore after an event's end soft, ADR 0018); a trusted physical loss's cap; TTL cap (pre-arm, late notice); refuse (an obligation to take nothing); the import limit the power rule reads",
  instants(x, at): void {
    for (const f of x.rr.facts) {
      at(f.from);
      at(f.end);
      for (const t of f.curve?.instants ?? []) at(t);
    }
  },
  apply(a: ViewAcc): void {
    const id = a.region.id;
    const t = a.t;
    const s = a.s;
    const reasons = a.reasons;
    const verdicts = a.ctx.loss;
    // Trusted physical losses (the loss pass, rules/loss.ts): planned whatever the safety limits and the freeze say.
    if (verdicts !== undefined) {
      for (const f of a.rr.facts) {
        if (f.loss === undefined || f.shadow || verdicts.get(f)?.status !== 'trusted') continue;
        const c = f.loss.curve;
        const p = c.at(t);
        if (p.cap < a.loss) a.loss = p.cap;
        if (p.cap < a.lossFirm && !softPhase(p.phase)) a.lossFirm = p.cap;
        if (p.cap < 1) {
          reasons.push(`${id}: physical loss: rule ${f.rule.name} (${f.what}), trusted: ${verdicts.get(f)!.why}: ${curveWords(c, p)} → cap ${p.cap}`);
          if (!a.lossSources.includes(f.loss.source)) a.lossSources += `${a.lossSources ? ', ' : ''}${f.loss.source}`;
        }
        if (t >= c.refuseAt && t < c.endAt) refuseNew(a, `physical loss: ${f.what}`);
        else if (t >= c.reach && t < c.refuseAt && c.refuseAt < a.lossGoaway) a.lossGoaway = c.refuseAt;
      }
    }
    // OpenADR: among overlapping events of one source and program, the lowest priority number wins.
    const { live, bestPriority } = liveFacts(a.rr.facts, t);
    for (const { f: f0, p, inWindow } of live) {
      if (f0.loss !== undefined && verdicts !== undefined && !f0.shadow && verdicts.get(f0)?.status === 'trusted') continue;
      const f = f0.keptFrom !== undefined && t >= f0.keptFrom ? { ...f0, what: `${f0.what} (expired, kept)` } : f0;
      const best = bestPriority.get(f.priorityKey);
      if (f.priority !== undefined && best !== undefined && f.priority > best) {
        reasons.push(`${id}: ${f.what} (priority ${f.priority}) yields to priority ${best} of the same program`);
        continue;
      }
      const phase = p && p.cap < 1 && f.curve ? `: ${curveWords(f.curve, p)}` : '';
      if (f.shadow) {
        reasons.push(`${id}: shadow: rule ${f.rule.name} (${f.what}) would apply: ${f.effect || 'nothing'}${f.note}${phase ? ` — now${phase}` : ''}`);
        continue;
      }
      if (p && p.cap < 1) automationCap(a, p.cap, `${id}: rule ${f.rule.name} (${f.what})${f.note}${phase} → cap ${p.cap}`, softPhase(p.phase));
      const c = f.curve;
      if (c && c.shortfallMs > 0 && !f.previous && t >= c.input.learnedAt && t < f.start) {
        capTtl(
          a,
          s.drain.minTtlS,
          `${id}: ${f.what} was learned ${Math.round(c.shortfallMs / 1000)} s later than the lead it needs (${Math.round((c.input.start - c.noticeStart) / 1000)} s): TTL ${s.drain.minTtlS} s until it starts`,
        );
      }
      // The drain-hook contract: GOAWAY from the instant the weight reaches 0, new streams refused from T − S.
      if (f.cap === 0 && t < f.end) {
        if (c ? t >= c.refuseAt && t < c.endAt : inWindow) refuseNew(a, `rule ${f.rule.name} (${f.what})`, true);
        else if (c && t >= c.reach && t < c.refuseAt && c.refuseAt < a.autoGoaway) a.autoGoaway = c.refuseAt;
      }
      if (!inWindow) continue;
      if (f.rule.then.ttlCap !== undefined) capTtl(a, f.rule.then.ttlCap, `${id}: rule ${f.rule.name} (${f.what}) → TTL ≤ ${f.rule.then.ttlCap} s`);
      if (f.rule.then.importLimit && f.limitW !== undefined && f.limitW < a.eventLimitW) {
        a.eventLimitW = f.limitW;
        a.eventLimitWhy = `rule ${f.rule.name} (${f.what})`;
      }
    }
  },
};
