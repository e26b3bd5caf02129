/**
 * Quarantine, the pure part (ADR 0020): which stored records a snapshot holds out of
 * planning, and the words the plan says about them. Finding the records that make planning
 * throw and writing the entries is the node's business (gslb/control/quarantine.ts); here is
 * only what every node must compute the same way from the same snapshot.
 *
 * A record is named by its **target** (`signal:<id>`, `override:<id>`,
 * `demand:<bucket>|<home>|<name>`) and its **fingerprint**, the first 16 hex digits of the
 * SHA-256 of its JSON as stored. An entry holds a record out while the record still has the
 * entry's fingerprint: a record written again since (a feed's next fact for the same id, an
 * operator's fix) is planned again, and the entry no longer holds anything (it is shown as
 * such, and cleared by the next quarantine write or by `gridsteer quarantine release`).
 * Demand buckets take the fingerprint `*`: their counts grow on every flush, so an entry holds
 * the bucket whatever it counts.
 */
import { createHash } from 'node:crypto';
import type { DemandBucket, QuarantineEntry, SignalRecord, StoreSnapshot } from '../model/snapshot.js';
import type { Override, PlanAlert } from '../model/types.js';

/** The fingerprint of any demand bucket: held whatever it counts. */
export const ANY_CONTENT = '*';

/** The fingerprint of a record's content: its JSON (a string is taken as the stored text itself). */
export function fingerprintOf(content: unknown): string {
  const text = typeof content === 'string' ? content : JSON.stringify(content) ?? 'undefined';
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

export const signalTarget = (r: SignalRecord): string => `signal:${r.id}`;
export const overrideTarget = (o: Override): string => `override:${o.id}`;
export const demandTarget = (d: DemandBucket): string => `demand:${d.bucket}|${d.home}|${d.name}`;

/** A record of the snapshot as the search and the entries see it. */
export interface Candidate {
  target: string;
  fingerprint: string;
}

/** Every record of a snapshot with its target and fingerprint, in a stable order (signals, overrides, demand; each by target). */
export function candidatesOf(snapshot: StoreSnapshot): Candidate[] {
  const by = (a: Candidate, b: Candidate) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0);
  return [
    ...snapshot.records.map((r) => ({ target: signalTarget(r), fingerprint: fingerprintOf(r) })).sort(by),
    ...snapshot.overrides.map((o) => ({ target: overrideTarget(o), fingerprint: fingerprintOf(o) })).sort(by),
    ...snapshot.demand.map((d) => ({ target: demandTarget(d), fingerprint: ANY_CONTENT })).sort(by),
  ];
}

/** Whether an entry holds a record with this fingerprint out. */
const holds = (e: QuarantineEntry | undefined, fingerprint: string): boolean => e !== undefined && (e.fingerprint === ANY_CONTENT || e.fingerprint === fingerprint);

/**
 * The snapshot without the records in `held` (targets), whatever the entries say: what the
 * search plans with. The snapshot's own quarantine list is left as it is.
 */
export function withoutTargets(snapshot: StoreSnapshot, held: ReadonlySet<string>): StoreSnapshot {
  if (held.size === 0) return snapshot;
  return {
    ...snapshot,
    records: snapshot.records.filter((r) => !held.has(signalTarget(r))),
    overrides: snapshot.overrides.filter((o) => !held.has(overrideTarget(o))),
    demand: snapshot.demand.filter((d) => !held.has(demandTarget(d))),
  };
}

/** The quarantine of a snapshot: what it holds out, and the entries that hold nothing any more (the record gone or written again since). */
export function quarantineOf(snapshot: StoreSnapshot): { held: QuarantineEntry[]; idle: QuarantineEntry[]; targets: Set<string> } {
  const entries = snapshot.quarantine ?? [];
  if (entries.length === 0) return { held: [], idle: [], targets: new Set() };
  const byTarget = new Map(entries.map((e) => [e.target, e]));
  const targets = new Set<string>();
  const consider = (target: string, content: unknown) => {
    const e = byTarget.get(target);
    if (e && holds(e, e.fingerprint === ANY_CONTENT ? ANY_CONTENT : fingerprintOf(content))) targets.add(target);
  };
  for (const r of snapshot.records) consider(signalTarget(r), r);
  for (const o of snapshot.overrides) consider(overrideTarget(o), o);
  for (const d of snapshot.demand) consider(demandTarget(d), d);
  // An unreadable record is never planned; its entry holds it while its text is the same.
  for (const u of snapshot.unreadable ?? []) {
    const e = byTarget.get(u.target);
    if (e && holds(e, fingerprintOf(u.raw))) targets.add(u.target);
  }
  return { held: entries.filter((e) => targets.has(e.target)), idle: entries.filter((e) => !targets.has(e.target)), targets };
}

/** The snapshot the planner plans: without the records its quarantine holds out. */
export function plannable(snapshot: StoreSnapshot): StoreSnapshot {
  if ((snapshot.quarantine ?? []).length === 0) return snapshot;
  return withoutTargets(snapshot, quarantineOf(snapshot).targets);
}

/** The plan's alert for records held out (one, critical, while any is): every node has the same, from the same snapshot. */
export function quarantineAlert(held: readonly QuarantineEntry[]): PlanAlert | null {
  if (held.length === 0) return null;
  const regions = [...new Set(held.flatMap((e) => regionOfTarget(e.target)))].sort();
  return {
    id: `records-quarantined:${held.map((e) => e.target).join(',')}`.slice(0, 512),
    severity: 'critical',
    kind: 'records-quarantined',
    regions,
    events: held.map((e) => `${e.target}: ${e.why}`),
    at: Math.min(...held.map((e) => e.at)),
    message: `${held.length} stored record${held.length === 1 ? ' is' : 's are'} held out of planning because planning with ${held.length === 1 ? 'it' : 'them'} failed or ${held.length === 1 ? 'it' : 'they'} could not be read; the plan is made without ${held.length === 1 ? 'it' : 'them'}. Fix the source, then \`gridsteer quarantine release <target>\` (plan with it again) or \`gridsteer quarantine drop <target>\` (delete it); GET /v1/quarantine lists them`,
  };
}

/** The region a target names, where it names one (a signal id starts with its region; an override's is not in its id). */
function regionOfTarget(target: string): string[] {
  if (target.startsWith('signal:')) {
    const region = target.slice('signal:'.length).split('|')[0];
    return region ? [region] : [];
  }
  return [];
}
