/**
 * Hot-path counters: plain typed arrays bumped per query, turned into Prometheus metrics
 * only when scraped (metrics.ts), so answering never touches prom-client's label maps.
 */
import { QTYPE, rcodeName, typeName } from './constants.js';

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
const RCODES = [0, 1, 2, 3, 4, 5, 16];
const NRCODES = RCODES.length;
/** Label index by rcode (0–31); rcodes not listed count as SERVFAIL's. */
const RCODE_INDEX = new Uint8Array(32).fill(RCODES.indexOf(2));
RCODES.forEach((r, i) => (RCODE_INDEX[r] = i));

/** A boxed counter: the responder keeps one per cached decision and bumps it per answer. */
export interface AnswerCounter {
  n: number;
}

export interface AnswerCount {
  name: string;
  region: string;
  value: number;
}

export interface QueryCount {
  transport: string;
  qtype: string;
  rcode: string;
  value: number;
}

/** Counters of one process. `snapshot()` is cumulative since start. */
export class DnsStats {
  private readonly queries = new Float64Array(2 * NTYPES * NRCODES);
  private readonly malformedBy = new Map<string, number>();
  /** Steered answers by name and region (`(none)` when no region was chosen). */
  private readonly answersBy = new Map<string, Map<string, AnswerCounter>>();
  private readonly droppedBy = new Map<string, number>();
  truncated = 0;
  tcpAccepted = 0;
  tcpRejected = 0;
  tcpRejectedPerClient = 0;
  tcpIdleClosed = 0;
  tcpOpen = 0;

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
    return {
      queries,
      answers,
      malformed: Object.fromEntries(this.malformedBy),
      dropped: Object.fromEntries(this.droppedBy),
      truncated: this.truncated,
      tcp: {
        accepted: this.tcpAccepted,
        rejected: this.tcpRejected,
        rejectedPerClient: this.tcpRejectedPerClient,
        idleClosed: this.tcpIdleClosed,
        open: this.tcpOpen,
      },
    };
  }
}

export interface DnsStatsSnapshot {
  queries: QueryCount[];
  /** Steered answers by name and region. */
  answers: AnswerCount[];
  malformed: Record<string, number>;
  dropped: Record<string, number>;
  truncated: number;
  tcp: { accepted: number; rejected: number; rejectedPerClient: number; idleClosed: number; open: number };
}
