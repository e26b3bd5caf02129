/**
 * Physical loss (ADR 0014): which claims that a region goes dark are trusted — planned whatever the safety limits and the freeze say — and the bounds on that trust.
 * A rule of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import { FLEET, type Override, type PlanAlert, type RegionId, type TrustDecision } from '../../model/types.js';
import type { SignalRecord } from '../../model/snapshot.js';
import type { KindValue } from '../../model/kinds/index.js';
import type { PlannerSettings } from '../settings.js';
import { trustOf } from './grid.js';
import type { GridFact, LossVerdict } from './shared.js';
import type { PlanPass } from './rule.js';
import { isoOf } from '../../model/domains.js';
import { principalOf } from '../../model/principal.js';

/** The longest prefix of `source` among `keys`, or undefined. */
function longestPrefix(keys: readonly string[], source: string): string | undefined {
  let best: string | undefined;
  for (const k of keys) if (source.startsWith(k) && (best === undefined || k.length > best.length)) best = k;
  return best;
}

interface Claim {
  region: RegionId;
  f: GridFact;
  source: string;
  /** Who wrote it: the bounds count principals (ADR 0021). */
  principal: string;
  /** When the loss acts: from the first ramp step to its end (the window the bound counts). */
  from: number;
  to: number;
}

const iso = (t: number) => (Number.isFinite(t) ? isoOf(t) : '…');

/** A claim's writer in words: its source, with its principal when one was recorded (an earlier build's record counts as its source's). */
const said = (c: { source: string; principal: string }) => (c.principal.startsWith('source:') ? c.source : `${c.source} (${c.principal})`);
/** A principal in words: as recorded, or (an earlier build's record) its source. */
const whom = (c: { source: string; principal: string }) => (c.principal.startsWith('source:') ? c.source : c.principal);

/**
 * The verdict on every claim of physical loss of the plan (GridFact.loss). In order:
 * shadowed facts are not claims; a source trusted to cap only, distrusted by an operator
 * (a fleet `distrust` override overlapping the claim), not bound to the region
 * (policy.grid.loss.bindings, longest prefix), or replaying an event it has cancelled
 * (observed before that source's latest cancellation of the same event id) is untrusted.
 * The rest, per source and per name, in order of their drain's start then region id: each is
 * trusted on its source's word while the source's trusted losses overlapping it stay within
 * maxTrustedLossShare of the name's capacity units and leave at least one region of the name;
 * beyond that a claim is trusted only where another source's claim on the region overlaps
 * (corroborated) or an operator drains the region to 0 over it (acknowledged), else it waits.
 */
export function lossVerdicts(
  s: PlannerSettings,
  facts: ReadonlyMap<RegionId, readonly GridFact[]>,
  grid: ReadonlyMap<RegionId, readonly SignalRecord[]>,
  overrides: readonly Override[],
): Map<GridFact, LossVerdict> {
  const out = new Map<GridFact, LossVerdict>();
  const claims: Claim[] = [];
  for (const [region, fs] of facts) for (const f of fs) if (f.loss !== undefined && !f.shadow) claims.push({ region, f, source: f.loss.source, principal: f.loss.principal, from: f.loss.curve.rampStart, to: f.loss.curve.endAt });
  if (claims.length === 0) return out;
  // The latest cancellation of each event id per principal and source: one principal's cancel never speaks for another's claim.
  const cancelled = new Map<string, number>();
  for (const recs of grid.values())
    for (const r of recs) {
      if (r.signal.kind !== 'grid.event') continue;
      const v = r.signal.value as KindValue<'grid.event'>;
      if (!v.cancelled) continue;
      const k = `${principalOf(r)}|${r.signal.source}|${v.id}`;
      cancelled.set(k, Math.max(cancelled.get(k) ?? -Infinity, r.signal.observedAt));
    }
  const distrusts = overrides.filter((o) => o.region === FLEET && o.action === 'distrust' && (o.source !== undefined || o.principal !== undefined));
  const bindingKeys = Object.keys(s.gridLoss.bindings);
  const candidates: Claim[] = [];
  for (const c of claims) {
    const l = c.f.loss!;
    const untrusted = (why: string) => out.set(c.f, { status: 'untrusted', why, region: c.region });
    const d = distrusts.find(
      (o) => (o.source !== undefined ? c.source.startsWith(o.source) : o.principal === c.principal) && o.start < c.to && (o.end === undefined || o.end > c.from),
    );
    const bound = longestPrefix(bindingKeys, c.source);
    const cancelledAt = cancelled.get(`${c.principal}|${c.source}|${l.eventId}`);
    if (trustOf(s, c.source) === 'cap') untrusted(`${c.source} is trusted to cap only (policy.grid.trust)`);
    else if (d) out.set(c.f, { status: 'untrusted', why: `${d.source ?? d.principal} distrusted by ${d.actor} (${d.reason}) [${d.id}]`, region: c.region, distrusted: true });
    else if (!l.granted) untrusted(`${c.source} was written by ${c.principal} without a grant for it: a principal without a grant is never trusted for a physical loss (ADR 0021)`);
    else if (bound === undefined || !s.gridLoss.bindings[bound]!.includes(c.region)) untrusted(`${c.source} is not bound to ${c.region} (policy.grid.loss.bindings)`);
    else if (cancelledAt !== undefined && l.observedAt < cancelledAt) untrusted(`replayed: observed at ${iso(l.observedAt)}, before ${whom(c)} cancelled event ${l.eventId}${whom(c) === c.source ? '' : ` of ${c.source}`} at ${iso(cancelledAt)}`);
    else if (c.f.end <= l.learnedAt) untrusted(`stale: it ended (${iso(c.f.end)}) before it was learned (${iso(l.learnedAt)})`);
    else candidates.push(c);
  }
  const units = new Map(s.regions.map((r) => [r.id, r.capacityUnits ?? 1]));
  const names = s.names ?? [{ name: 'the fleet', regions: s.regions.map((r) => r.id) }];
  const share = s.gridLoss.maxTrustedLossShare;
  candidates.sort((a, b) => a.from - b.from || (a.region < b.region ? -1 : a.region > b.region ? 1 : 0) || a.f.start - b.f.start);
  /** Per principal, the claims trusted on its word alone so far: two sources of one principal are one witness. */
  const alone = new Map<string, Claim[]>();
  const over: { c: Claim; why: string }[] = [];
  for (const c of candidates) {
    const mine = alone.get(c.principal) ?? [];
    let why = '';
    for (const n of names) {
      if (!n.regions.includes(c.region)) continue;
      const total = n.regions.reduce((x, r) => x + (units.get(r) ?? 0), 0);
      const others = mine.filter((o) => n.regions.includes(o.region) && o.from < c.to && o.to > c.from);
      // The worst instant is at c's start or at a start of another within c's window.
      for (const t of [c.from, ...others.map((o) => o.from).filter((x) => x > c.from && x < c.to)]) {
        const at = others.filter((o) => o.from <= t && o.to > t);
        const regions = new Set([c.region, ...at.map((o) => o.region)]);
        const taken = [...regions].reduce((x, r) => x + (units.get(r) ?? 0), 0);
        if (regions.size >= n.regions.length) why = `it would leave none of ${n.name}'s regions`;
        else if (taken > share * total + 1e-9) why = `one principal (${whom(c)}) may take at most ${Math.round(share * 100)} % of ${n.name}'s capacity on its own (policy.grid.loss.maxTrustedLossShare)`;
        if (why) break;
      }
      if (why) break;
    }
    if (!why) {
      mine.push(c);
      alone.set(c.principal, mine);
      out.set(c.f, { status: 'trusted', why: `${said(c)} is bound to ${c.region}`, region: c.region });
    } else over.push({ c, why });
  }
  const trustedOrCandidate = new Set(candidates.map((c) => c.f));
  for (const { c, why } of over) {
    // A second witness is another principal: another source of the same one says nothing new.
    // It must say the region is dark while c does: the events' windows overlap, not only their drain curves' ramps and restores.
    const second = candidates.find((o) => o.region === c.region && o.principal !== c.principal && trustedOrCandidate.has(o.f) && o.f.start < c.f.end && o.f.end > c.f.start);
    const ack = overrides.find((o) => o.region === c.region && o.action === 'drain' && (o.value ?? 0) === 0 && o.start < c.to && (o.end === undefined || o.end > c.from));
    if (second) out.set(c.f, { status: 'trusted', why: `${said(c)} is bound to ${c.region}, corroborated by ${said(second)} (${why})`, region: c.region });
    else if (ack) out.set(c.f, { status: 'trusted', why: `${said(c)} is bound to ${c.region}, acknowledged by ${ack.actor}'s drain [${ack.id}] (${why})`, region: c.region });
    else
      out.set(c.f, {
        status: 'waiting',
        why: `${why}: waits for a second principal or an operator (gridsteer drain ${c.region} --by ${iso(c.f.start)}); meanwhile the safety limits apply`,
        region: c.region,
      });
  }
  return out;
}

/** A key for the verdicts on one region's facts (the plan reuses a region's schedule only when it is the same). */
export function verdictKey(facts: readonly GridFact[], v: ReadonlyMap<GridFact, LossVerdict>): string {
  let k = '';
  for (let i = 0; i < facts.length; i++) {
    const x = v.get(facts[i]!);
    if (x) k += `${i}:${x.status}:${x.why}\n`;
  }
  return k;
}

/**
 * The plan's alerts on losses and held caps (ADR 0014), for facts not over by `now` (the
 * newest input): waiting and untrusted claims, trusted ones planned beyond the safety limits
 * (`pierced`: regions the limits would have held) or during a freeze, and caps the limits hold.
 */
export function lossAlerts(
  facts: ReadonlyMap<RegionId, readonly GridFact[]>,
  v: ReadonlyMap<GridFact, LossVerdict>,
  held: ReadonlyMap<RegionId, { from: number; floor: number; why: string }[]>,
  pierced: ReadonlyMap<RegionId, string>,
  freezes: readonly Override[],
  now: number,
): PlanAlert[] {
  const out: PlanAlert[] = [];
  for (const [region, fs] of facts) {
    for (const f of fs) {
      if (f.shadow || f.previous || f.end <= now) continue;
      const verdict = v.get(f);
      const c = f.loss?.curve ?? f.curve;
      const actBy = c ? { actBy: c.noticeStart } : {};
      const base = { regions: [region], events: [f.what], at: f.start, ...actBy };
      if (verdict?.status === 'waiting') {
        out.push({ id: `loss-waiting:${region}:${f.what}`, severity: 'critical', kind: 'loss-waiting', ...base, message: `${region}: ${f.what} declares the region dark from ${iso(f.start)}, but ${verdict.why}` });
        continue;
      }
      if (verdict?.status === 'untrusted') out.push({ id: `loss-untrusted:${region}:${f.what}`, severity: 'warning', kind: 'loss-untrusted', ...base, message: `${region}: ${f.what} declares the region dark from ${iso(f.start)}; not trusted: ${verdict.why}; it counts as any cap` });
      if (verdict?.status === 'trusted') {
        const p = pierced.get(region);
        if (p) out.push({ id: `trusted-loss-over-limit:${region}:${f.what}`, severity: 'warning', kind: 'trusted-loss-over-limit', ...base, message: `${region}: ${f.what} is a trusted physical loss (${verdict.why}), planned beyond the safety limits (${p}); gridsteer distrust ${f.loss!.source} stops it` });
        const fr = freezes.find((o) => o.start < f.end && (o.end === undefined || o.end > (c?.rampStart ?? f.from)));
        if (fr) out.push({ id: `loss-during-freeze:${region}:${f.what}`, severity: 'warning', kind: 'loss-during-freeze', ...base, message: `${region}: ${f.what} is a trusted physical loss: it acts although automation is frozen by ${fr.actor} [${fr.id}]; gridsteer distrust ${f.loss!.source} stops it` });
        continue;
      }
      // Not a trusted loss: held by the safety limits while it would act?
      if (f.cap >= 1 || !c) continue;
      const segs = held.get(region) ?? [];
      const h = segs.find((g, i) => g.floor > 0 && g.from < f.end && (segs[i + 1]?.from ?? Infinity) > c.rampStart);
      if (h)
        out.push({
          id: `held-by-safety:${region}:${f.what}`,
          severity: f.loss ? 'critical' : 'warning',
          kind: 'held-by-safety',
          ...base,
          message: `${region}: ${f.what} is held by the safety limits (${h.why}); it waits for an operator, before ${iso(c.noticeStart)} for a full proactive drain (the event starts ${iso(f.start)})`,
        });
    }
  }
  return out.sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * The plan's trust decisions (Plan.trust): one per claim of physical loss not over by `now`
 * (the newest input), and one per claim its principal has cancelled while the record is kept;
 * sorted by region, source, event id. Shadowed facts are no claims.
 */
export function trustDecisions(facts: ReadonlyMap<RegionId, readonly GridFact[]>, v: ReadonlyMap<GridFact, LossVerdict>, now: number): TrustDecision[] {
  const out: TrustDecision[] = [];
  const seen = new Set<string>();
  for (const [region, fs] of facts) {
    for (const f of fs) {
      const l = f.loss;
      const verdict = v.get(f);
      if (!l || !verdict || f.shadow) continue;
      const cancelled = f.previous && l.cancelled;
      if (!cancelled && (f.previous || f.end <= now)) continue;
      const key = `${region}|${l.source}|${l.eventId}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const status = cancelled ? 'cancelled' : verdict.distrusted ? 'distrusted' : verdict.status;
      out.push({ region, source: l.source, principal: l.principal, eventId: l.eventId, status, why: cancelled ? `${whom(l)} cancelled event ${l.eventId}` : verdict.why, at: f.start });
    }
  }
  return out.sort((a, b) => (a.region < b.region ? -1 : a.region > b.region ? 1 : a.source < b.source ? -1 : a.source > b.source ? 1 : a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0));
}

/** The loss pass, for the precedence table. */
export const lossPass: PlanPass = {
  name: 'physical loss',
  module: 'rules/loss.ts',
  kinds: ['grid.event'],
  reads: 'claims of physical loss (gridPolicy rules with loss), policy.grid.loss bindings and bound, distrust overrides, operator drains (acknowledgement)',
  changesAt: 'where the claims start and end (their drain curves)',
  sets: 'which losses are trusted (the grid rule plans them whatever the safety limits and the freeze say) or wait; the plan\'s alerts',
};
