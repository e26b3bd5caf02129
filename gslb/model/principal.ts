/**
 * Principals and grants (ADR 0021): who speaks for a stored fact, and which sources they may
 * speak for. Declarations and pure arithmetic only; the token table that holds the grants is
 * gslb/config/tokens.ts, the check at ingest is gslb/control/ingest-grants.ts.
 *
 * A principal is fleet-wide, never per node: `token:<name>` (an API token), `collector:<name>`
 * (a configured collector section, whichever node it runs on). A record written before
 * principals were recorded has none; it counts as `source:<its source>` (the old rule: one
 * source, one witness).
 */

/** The source prefix the operator route writes under, as `manual/<token name>`: no ingest grant may cover it. */
export const MANUAL_PREFIX = 'manual/';

/** A right to speak for the sources that start with `source`, in `regions` (absent = every region). */
export interface Grant {
  source: string;
  regions?: string[];
}

/** Who wrote a fact, as the store records it next to the fact. */
export interface Provenance {
  /** `token:<name>` or `collector:<name>`. */
  principal: string;
  /** The grant that covered it (its source prefix); absent = written without a grant (never trusted for a physical loss). */
  grant?: string;
  /** An operator's write: it may replace another principal's live record (the caller audits it). Not stored. */
  operator?: true;
}

export const tokenPrincipal = (name: string): string => `token:${name}`;
export const collectorPrincipal = (name: string): string => `collector:${name}`;

/** The principal a stored record counts as: its own, or (a record of an earlier build) its source's. */
export function principalOf(r: { principal?: string; signal: { source: string } }): string {
  return r.principal ?? `source:${r.signal.source}`;
}

/** Whether the record may witness a physical loss: written under a grant (or by an earlier build, which knew no grants). */
export function grantedRecord(r: { principal?: string; grant?: string }): boolean {
  return r.principal === undefined || r.grant !== undefined;
}

/** Whether `g` covers a fact of `source` about `region`. */
export function grantCovers(g: Grant, source: string, region: string): boolean {
  return source.startsWith(g.source) && (g.regions === undefined || g.regions.includes(region));
}

/**
 * Whether two grants could both cover one fact: one prefix starts the other and their regions
 * meet (absent = every region).
 */
export function grantsOverlap(a: Grant, b: Grant): boolean {
  if (!a.source.startsWith(b.source) && !b.source.startsWith(a.source)) return false;
  if (a.regions === undefined || b.regions === undefined) return true;
  return a.regions.some((r) => b.regions!.includes(r));
}

/** A grant in words: `ercot/ (us-tx, us-east)` or `ercot/ (every region)`. */
export function grantText(g: Grant): string {
  return `${g.source} (${g.regions === undefined ? 'every region' : g.regions.join(', ')})`;
}
