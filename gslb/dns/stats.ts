/**
 * Hot-path counters: plain typed arrays bumped per query, turned into Prometheus metrics
 * only when scraped (metrics.ts), so answering never touches prom-client's label maps.
 */
import { QTYPE, rcodeName, typeName } from './constants.js';
import { DECISION_CLASSES, type DecisionClass } from '../model/types.js';
import { RRL_ACTIONS, RRL_KINDS, type RateLimitCounters } from './ratelimit.js';
import { COOKIE_RESULTS } from './cookie.js';

export const TRANSPORT_UDP = 0;
export const TRANSPORT_TCP = 1;
export const TRANSPORTS = ['udp', 'tcp'] as const;

/** Query types counted under their own label; everything else is `other`. */
const COUNTED_TYPES = [QTYPE.A, QTYPE.AAAA, QTYPE.ANY, QTYPE.NS, QTYPE.SOA, QTYPE.CNAME, QTYPE.TXT, QTYPE.MX, QTYPE.SRV, QTYPE.CAA, QTYPE.PTR, QTYPE.HINFO, QTYPE.AXFR, QTYPE.IXFR];
const OTHER_TYPE = COUNTED_TYPES.length;
/** Label index by qtype (64 KiB: one byte for each of the 65536 types). */
const TYPE_INDEX = new Uint8Array(65536).fill(OTHER_TYPE);
COUNTED_TYPES.forEach((t, i) => (TYPE_INDEX[t] = i));
/** -1 (no question parsed) */
const NO_QUESTION = COUNTED_TYPES.length + 1;
const NTYPES = COUNTED_TYPES.length + 2;
const RCODES = [0, 1, 2, 3, 4, 5, 16, 23];
const NRCODES = RCODES.length;
/** Label index by rcode (0–31); rcodes not listed count as SERVFAIL's. */
const RCODE_INDEX = new Uint8Array(32).fill(RCODES.indexOf(2));
RCODES.forEach((r, i) => (RCODE_INDEX[r] = i));

/**
 * Upper bounds of the response-time buckets, in ms (5 µs to 100 ms; a reply takes a few µs);
 * a last bucket takes everything slower (le="+Inf").
 */
export const LATENCY_BOUNDS_MS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100];
const NLATENCY = LATENCY_BOUNDS_MS.length + 1;

/** The bucket of a response time in ms: the first whose bound is ≥ it (Prometheus' `le`), else the last. */
export function latencyBucket(ms: number): number {
  let i = 0;
  while (i < NLATENCY - 1 && ms > LATENCY_BOUNDS_MS[i]!) i++;
  return i;
}

/** Index of a decision class in DECISION_CLASSES (the responder counts by index). */
export const DECISION_INDEX: Readonly<Record<DecisionClass, number>> = Object.fromEntries(DECISION_CLASSES.map((c, i) => [c, i])) as Record<DecisionClass, number>;

/** How the responder's per-cell decision cache served a steered query (indexes of DnsStats.cache). */
export const CACHE_HIT = 0;
export const CACHE_MISS = 1;
export const CACHE_BYPASS = 2;
export const CACHE_RESULTS = ['hit', 'miss', 'bypass'] as const;

/** A boxed counter: the responder keeps one per cached decision and bumps it per answer. */
export interface AnswerCounter {
  n: number;
}

export interface AnswerCount {
  name: string;
  region: string;
  value: number;
}

export interface DecisionCount {
  name: string;
  reason: DecisionClass;
  value: number;
}

export interface QueryCount {
  transport: string;
  qtype: string;
  rcode: string;
  value: number;
}

export interface RateLimitedCount {
  kind: string;
  action: string;
  value: number;
}

/** Counters of one process. `snapshot()` is cumulative since start. */
export class DnsStats implements RateLimitCounters {
  private readonly queries = new Float64Array(2 * NTYPES * NRCODES);
  private readonly malformedBy = new Map<string, number>();
  /** Steered answers by name and region (`(none)` when no region was chosen). */
  private readonly answersBy = new Map<string, Map<string, AnswerCounter>>();
  private readonly droppedBy = new Map<string, number>();
  /** Steered decisions by name, then by class (indexes of DECISION_CLASSES). */
  private readonly decisionsBy = new Map<string, Float64Array>();
  /** Steered queries by how the decision cache served them: CACHE_HIT, CACHE_MISS, CACHE_BYPASS. */
  readonly cache = new Float64Array(CACHE_RESULTS.length);
  /** Replies by response time: a count per bucket of LATENCY_BOUNDS_MS, then +Inf (not cumulative). */
  private readonly latency = new Float64Array(NLATENCY);
  private latencySumMs = 0;
  truncated = 0;
  tcpAccepted = 0;
  tcpRejected = 0;
  tcpRejectedPerClient = 0;
  tcpIdleClosed = 0;
  tcpMessageTimeouts = 0;
  tcpEvicted = 0;
  tcpOpen = 0;
  /** Rate-limited UDP replies by kind × action (ratelimit.ts RRL_KINDS × RRL_ACTIONS). */
  readonly rateLimited = new Float64Array(RRL_KINDS.length * RRL_ACTIONS.length);
  /** Queries with a COOKIE option by verdict (cookie.ts COOKIE_RESULTS: index 0 unused). */
  readonly cookies = new Float64Array(COOKIE_RESULTS.length);
  /** Table slots of the rate limiter taken over by another prefix. */
  rateLimitEvictions = 0;

  count(transport: number, qtype: number, rcode: number): void {
    const ti = qtype < 0 ? NO_QUESTION : TYPE_INDEX[qtype & 0xffff]!;
    const ri = rcode >= 0 && rcode < 32 ? RCODE_INDEX[rcode]! : RCODE_INDEX[2]!;
    this.queries[(transport * NTYPES + ti) * NRCODES + ri]!++;
  }

  /** The counter of steered answers for (name, region); bump its `n`. */
  counterFor(name: string, region: string | null): AnswerCounter {
    let byRegion = this.answersBy.get(name);
    if (!byRegion) this.answersBy.set(name, (byRegion = new Map()));
    const key = region ?? '(none)';
    let c = byRegion.get(key);
    if (!c) byRegion.set(key, (c = { n: 0 }));
    return c;
  }

  /** The decision counters of a steered name, by DECISION_INDEX; bump an element. */
  decisionsFor(name: string): Float64Array {
    let c = this.decisionsBy.get(name);
    if (!c) this.decisionsBy.set(name, (c = new Float64Array(DECISION_CLASSES.length)));
    return c;
  }

  /** Counts one reply that took `ms` milliseconds to make. */
  observe(ms: number): void {
    this.latency[latencyBucket(ms)]!++;
    this.latencySumMs += ms;
  }

  malformed(reason: string): void {
    this.malformedBy.set(reason, (this.malformedBy.get(reason) ?? 0) + 1);
  }

  dropped(reason: string): void {
    this.droppedBy.set(reason, (this.droppedBy.get(reason) ?? 0) + 1);
  }

  /** Plain data, safe to send to the primary over IPC. */
  snapshot(): DnsStatsSnapshot {
    const queries: QueryCount[] = [];
    for (let tr = 0; tr < 2; tr++)
      for (let ti = 0; ti < NTYPES; ti++)
        for (let ri = 0; ri < NRCODES; ri++) {
          const value = this.queries[(tr * NTYPES + ti) * NRCODES + ri]!;
          if (value === 0) continue;
          const qtype = ti === OTHER_TYPE ? 'other' : ti === NO_QUESTION ? 'none' : typeName(COUNTED_TYPES[ti]!);
          queries.push({ transport: TRANSPORTS[tr]!, qtype, rcode: rcodeName(RCODES[ri]!), value });
        }
    const answers: AnswerCount[] = [];
    for (const [name, byRegion] of this.answersBy) for (const [region, c] of byRegion) if (c.n > 0) answers.push({ name, region, value: c.n });
    const decisions: DecisionCount[] = [];
    for (const [name, c] of this.decisionsBy) {
      for (let i = 0; i < DECISION_CLASSES.length; i++) if (c[i]! > 0) decisions.push({ name, reason: DECISION_CLASSES[i]!, value: c[i]! });
    }
    const rateLimited: RateLimitedCount[] = [];
    for (let k = 0; k < RRL_KINDS.length; k++)
      for (let a = 0; a < RRL_ACTIONS.length; a++) {
        const value = this.rateLimited[k * RRL_ACTIONS.length + a]!;
        if (value > 0) rateLimited.push({ kind: RRL_KINDS[k]!, action: RRL_ACTIONS[a]!, value });
      }
    return {
      queries,
      answers,
      decisions,
      cache: { hit: this.cache[CACHE_HIT]!, miss: this.cache[CACHE_MISS]!, bypass: this.cache[CACHE_BYPASS]! },
      latency: { counts: [...this.latency], sumSeconds: this.latencySumMs / 1000 },
      malformed: Object.fromEntries(this.malformedBy),
      dropped: Object.fromEntries(this.droppedBy),
      truncated: this.truncated,
      tcp: {
        accepted: this.tcpAccepted,
        rejected: this.tcpRejected,
        rejectedPerClient: this.tcpRejectedPerClient,
        idleClosed: this.tcpIdleClosed,
        messageTimeout: this.tcpMessageTimeouts,
        evicted: this.tcpEvicted,
        open: this.tcpOpen,
      },
      rateLimited,
      rateLimitEvictions: this.rateLimitEvictions,
      cookies: Object.fromEntries(COOKIE_RESULTS.map((r, i) => [r, this.cookies[i]!]).filter(([r, v]) => r !== 'none' && (v as number) > 0)) as Record<string, number>,
    };
  }
}

export interface DnsStatsSnapshot {
  queries: QueryCount[];
  /** Steered answers by name and region. */
  answers: AnswerCount[];
  /** Steered decisions by name and class (sum: the answers' sum). */
  decisions: DecisionCount[];
  /** Steered queries by how the decision cache served them (sum: the answers' sum). */
  cache: { hit: number; miss: number; bypass: number };
  /** Replies by response time: counts per bucket of LATENCY_BOUNDS_MS then +Inf (not cumulative), and their sum in seconds. */
  latency: { counts: number[]; sumSeconds: number };
  malformed: Record<string, number>;
  dropped: Record<string, number>;
  truncated: number;
  tcp: { accepted: number; rejected: number; rejectedPerClient: number; idleClosed: number; messageTimeout: number; evicted: number; open: number };
  /** Rate-limited UDP replies by kind and action (slipped, dropped, logged). */
  rateLimited: RateLimitedCount[];
  rateLimitEvictions: number;
  /** Queries with a COOKIE option by verdict: client_only, valid, bad. */
  cookies: Record<string, number>;
}
