/**
 * Who may speak for which source (ADR 0021), at ingest: an `Ingester` names the principal that
 * writes and says, per validated signal, which grant covers it or why it is refused. Built for
 * an API token (from the token table and the reserved namespaces), a collector section (its
 * prefix, and the regions its section is granted) and the operator route (`manual/<name>`).
 * Also the per-principal quotas (live records, signals per minute) the state service applies.
 */
import type { Signal } from '../model/types.js';
import { MANUAL_PREFIX, collectorPrincipal, grantCovers, grantText, tokenPrincipal, type Grant } from '../model/principal.js';
import type { ReservedNamespace, TokenIdentity, TokenStore } from '../config/tokens.js';

/** What an ingester says of one signal: the grant it is written under (absent = none), or why it is refused. */
export type Authorized = { grant?: string } | { refused: string };

export interface Ingester {
  /** `token:<name>` or `collector:<name>`: fleet-wide. */
  principal: string;
  /** An operator's correction of another principal's fact: may replace its live record (the caller audits it). */
  operator?: true;
  authorize(s: Signal): Authorized;
}

/** The namespaces held by someone, each with its holder in words (for refusals). */
interface Claimed {
  prefix: string;
  by: string;
  principal: string;
}

/**
 * The ingesters of the API's tokens: a granted token may post only under its grants; a token
 * without one may post anywhere no token's grant and no reserved namespace covers (its facts are
 * recorded without a grant: never trusted for a physical loss, never a corroboration).
 */
export class TokenGrants {
  private readonly claimed: Claimed[];

  constructor(tokens: TokenStore, reserved: readonly ReservedNamespace[]) {
    this.claimed = [
      ...reserved.map((r) => ({ prefix: r.prefix, by: `reserved for ${r.by}`, principal: '' })),
      ...tokens.list().flatMap((t) => (t.grants ?? []).map((g) => ({ prefix: g.source, by: `granted to token "${t.name}"`, principal: tokenPrincipal(t.name) }))),
    ];
  }

  ingester(who: TokenIdentity): Ingester {
    const principal = tokenPrincipal(who.name);
    const grants = who.grants;
    if (grants !== undefined) {
      return {
        principal,
        authorize: (s) => {
          const g = grants.find((x) => grantCovers(x, s.source, s.region));
          return g ? { grant: g.source } : { refused: `token "${who.name}" may post only under its grants (${grants.map(grantText).join('; ')}); ${s.source} about ${s.region} is outside them` };
        },
      };
    }
    return {
      principal,
      authorize: (s): Authorized => {
        const c = this.claimed.find((x) => x.principal !== principal && s.source.startsWith(x.prefix));
        return c ? { refused: `${s.source} is in ${c.prefix}, ${c.by}; token "${who.name}" has no grant there` } : {};
      },
    };
  }
}

/**
 * A collector section's ingester: its facts carry the source prefix its collector declares
 * (never one taken from a payload), in the regions its section is granted (absent = every region).
 */
export function collectorIngester(name: string, prefix: string, regions?: readonly string[]): Ingester {
  const grant: Grant = regions === undefined ? { source: prefix } : { source: prefix, regions: [...regions] };
  return {
    principal: collectorPrincipal(name),
    authorize: (s) =>
      grantCovers(grant, s.source, s.region) ? { grant: prefix } : { refused: `collector ${name} speaks only for ${grantText(grant)}; it emitted ${s.source} about ${s.region}` },
  };
}

/** The operator route's ingester: the operator's own namespace `manual/<name>`. */
export function manualIngester(name: string): Ingester {
  const own = `${MANUAL_PREFIX}${name}`;
  return {
    principal: tokenPrincipal(name),
    authorize: (s) => (s.source === own ? { grant: MANUAL_PREFIX } : { refused: `an operator enters events as ${own} only` }),
  };
}

/**
 * An operator correcting (modifying or cancelling) the event another principal stored under
 * `source`: that one source only, written under the operator route's authority (`manual/`),
 * replacing the other principal's record; the operator route audits it.
 */
export function operatorCorrection(name: string, source: string): Ingester {
  return {
    principal: tokenPrincipal(name),
    operator: true,
    authorize: (s) => (s.source === source ? { grant: MANUAL_PREFIX } : { refused: `an operator's correction writes ${source} only` }),
  };
}

/** Per-principal quotas; 0 = no limit. */
export interface IngestQuota {
  /** Signals accepted per principal per minute on this node (a token bucket of that size). */
  perMinute: number;
  /** Live (unexpired) records one principal may hold in the store. */
  liveRecords: number;
}

/** Token buckets of signals per principal (this node's). Never reads the clock: `now` is passed. */
export class QuotaBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  /** Takes `n` signals from `principal`'s bucket; returns 0, or the seconds until they fit. */
  take(principal: string, n: number, perMinute: number, now: number): number {
    if (perMinute <= 0) return 0;
    let b = this.buckets.get(principal);
    if (!b) {
      if (this.buckets.size >= 10_000) this.buckets.delete(this.buckets.keys().next().value!);
      b = { tokens: perMinute, at: now };
      this.buckets.set(principal, b);
    }
    b.tokens = Math.min(perMinute, b.tokens + (Math.max(0, now - b.at) * perMinute) / 60_000);
    b.at = now;
    if (b.tokens >= n) {
      b.tokens -= n;
      return 0;
    }
    return Math.max(1, Math.ceil(((Math.min(n, perMinute) - b.tokens) * 60_000) / perMinute / 1000));
  }
}
