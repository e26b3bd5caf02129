/**
 * The responder: one query buffer in, one reply buffer (or nothing) out. Synchronous,
 * never throws, allocates the reply and little else. Semantics: RFC 1035, 2181, 2308,
 * 6891, 7871, 8482, 9619 (see docs/dns.md for the rule-by-rule list).
 */
import { EDNS_DO, FLAG, QCLASS, QTYPE, RCODE, UDP_MIN } from './constants.js';
import { newParsedQuery, parseQuery, Verdict, type ParsedQuery } from './query.js';
import { parentKey } from './name.js';
import type { CompiledZones, NameNode, Template } from './zone.js';
import { decide, stepAt, nextStepAfter, type Cell } from '../policy/decide.js';
import type { Plan } from '../types.js';
import { DnsStats, TRANSPORT_TCP, TRANSPORT_UDP } from './stats.js';

export interface ResponderOptions {
  /** Largest UDP reply we send (RFC 9715 default 1232). Also advertised in our OPT. */
  udpPayloadMax: number;
  /** Tmin, seconds. */
  minTtl: number;
}

/** What the responder serves; swapped as a whole (see Responder.swap). */
export interface ServingState {
  zones: CompiledZones;
  plan: Plan;
  /** Until the geo engine: every client's cell. */
  cell: Cell;
  /** Identifies this state (config hash + plan version), acknowledged to the primary. */
  version: string;
}

interface CachedDecision {
  template: Template | null;
  ttl: number;
  region: string | null;
  /** ECS scope prefix length to answer with. */
  scope: number;
  /** ms epoch after which the decision must be recomputed (next plan step). */
  until: number;
}

export class Responder {
  private state: ServingState;
  private readonly q: ParsedQuery = newParsedQuery();
  private decisions = new Map<string, CachedDecision>();
  readonly stats = new DnsStats();

  constructor(
    state: ServingState,
    private readonly opts: ResponderOptions,
  ) {
    this.state = state;
  }

  /** Replaces what is served, atomically for the next query; drops cached decisions. */
  swap(state: ServingState): void {
    this.state = state;
    this.decisions = new Map();
  }

  get version(): string {
    return this.state.version;
  }

  /**
   * Answers one query. `tcp` selects the size limit (65535 instead of the UDP limit).
   * Returns null when nothing must be sent (responses, packets shorter than a header).
   */
  answer(buf: Buffer, tcp: boolean, now = Date.now()): Buffer | null {
    const transport = tcp ? TRANSPORT_TCP : TRANSPORT_UDP;
    try {
      return this.answerInner(buf, tcp, transport, now);
    } catch {
      // Defensive: a bug must cost one SERVFAIL, never the process.
      this.stats.malformed('internal_error');
      const q = this.q;
      if (buf.length < 12) return null;
      return this.errorReply(buf, q.questionEnd > 0 ? q : null, RCODE.SERVFAIL, transport);
    }
  }

  private answerInner(buf: Buffer, tcp: boolean, transport: number, now: number): Buffer | null {
    const q = this.q;
    const verdict = parseQuery(buf, q);
    if (verdict !== Verdict.OK) {
      this.stats.malformed(q.reason);
      switch (verdict) {
        case Verdict.DROP:
          this.stats.dropped(q.reason);
          return null;
        case Verdict.NOTIMP:
          return this.errorReply(buf, null, RCODE.NOTIMP, transport);
        case Verdict.BADVERS:
          return this.errorReply(buf, q, RCODE.BADVERS, transport);
        default:
          return this.errorReply(buf, q.questionEnd > 0 ? q : null, RCODE.FORMERR, transport);
      }
    }
    const qtype = q.qtype;
    if (q.qclass !== QCLASS.IN) return this.errorReply(buf, q, RCODE.REFUSED, transport);
    if (qtype === QTYPE.OPT) return this.errorReply(buf, q, RCODE.FORMERR, transport);
    if (qtype === QTYPE.AXFR || qtype === QTYPE.IXFR) return this.errorReply(buf, q, RCODE.REFUSED, transport);

    const limit = tcp ? 65535 : q.edns ? Math.max(UDP_MIN, Math.min(q.udpSize, this.opts.udpPayloadMax)) : UDP_MIN;
    const zones = this.state.zones;
    let node: NameNode | undefined = zones.nodes.get(q.key);
    let template: Template;
    let ttl = -1;
    let scope = 0;
    if (node) {
      if (node.referral) template = node.referral;
      else if (qtype === QTYPE.ANY) template = node.any;
      else if (node.steered && (qtype === QTYPE.A || qtype === QTYPE.AAAA)) {
        const d = this.decideFor(node, qtype, now);
        if (d.template === null) return this.errorReply(buf, q, RCODE.SERVFAIL, transport);
        template = d.template;
        ttl = d.ttl;
        scope = d.scope;
      } else template = node.answers.get(qtype) ?? node.otherwise;
    } else {
      // The closest known ancestor decides: a delegation → referral; else NXDOMAIN; none → not ours.
      let k = parentKey(q.key);
      while (k !== undefined && !(node = zones.nodes.get(k))) k = parentKey(k);
      if (!node) return this.errorReply(buf, q, RCODE.REFUSED, transport);
      template = node.referral ?? node.zone.nxdomain;
    }
    return this.build(buf, q, template, ttl, scope, q.qnameLen - template.ownerLen, limit, transport);
  }

  private decideFor(node: NameNode, qtype: number, now: number): CachedDecision {
    const cacheKey = qtype === QTYPE.A ? node.key : node.key + '\0';
    let d = this.decisions.get(cacheKey);
    if (d && now < d.until) return d;
    const st = node.steered!;
    const s = this.state;
    const ans = decide(s.plan, s.cell, '', st.target.decide, qtype === QTYPE.A ? 'A' : 'AAAA', now, this.opts.minTtl);
    const fam = qtype === QTYPE.A ? st.A : st.AAAA;
    let template: Template | null;
    if (ans.rcode === 'servfail') template = null;
    else if (ans.region) template = fam.get(ans.region) ?? fam.get('*empty')!;
    else template = ans.addresses.length > 0 ? fam.get('*all')! : fam.get('*empty')!;
    d = { template, ttl: ans.ttl, region: ans.region, scope: ans.ecsScope, until: Math.min(nextStepAfter(s.plan, now), now + 1000) };
    this.decisions.set(cacheKey, d);
    return d;
  }

  /** Our OPT record's length for this query (0 without EDNS). */
  private optLen(q: ParsedQuery | null): number {
    if (!q || !q.edns) return 0;
    return 11 + (q.ecs ? 8 + q.ecsAddrLen : 0);
  }

  private writeOpt(out: Buffer, at: number, q: ParsedQuery, src: Buffer, extRcode: number, scope: number): void {
    out[at] = 0;
    out.writeUInt16BE(QTYPE.OPT, at + 1);
    out.writeUInt16BE(this.opts.udpPayloadMax, at + 3);
    out[at + 5] = extRcode;
    out[at + 6] = 0;
    out.writeUInt16BE(q.dnssecOk ? EDNS_DO : 0, at + 7);
    if (q.ecs) {
      const olen = 4 + q.ecsAddrLen;
      out.writeUInt16BE(4 + olen, at + 9);
      out.writeUInt16BE(8, at + 11);
      out.writeUInt16BE(olen, at + 13);
      out.writeUInt16BE(q.ecsFamily, at + 15);
      out[at + 17] = q.ecsSource;
      out[at + 18] = q.ecsSource === 0 ? 0 : scope;
      src.copy(out, at + 19, q.ecsAddrOffset, q.ecsAddrOffset + q.ecsAddrLen);
    } else out.writeUInt16BE(0, at + 9);
  }

  private build(buf: Buffer, q: ParsedQuery, t: Template, ttl: number, scope: number, delta: number, limit: number, transport: number): Buffer {
    const qEnd = q.questionEnd;
    const optLen = this.optLen(q);
    const size = qEnd + t.body.length + optLen;
    const flags = FLAG.QR | (t.aa ? FLAG.AA : 0) | (q.flags & (FLAG.RD | FLAG.CD)) | (t.rcode & 0xf);
    if (size > limit) {
      // RFC 1035 §4.2.1 / RFC 6891 §7: TC=1, question and OPT only; the client retries over TCP.
      const out = Buffer.allocUnsafe(qEnd + optLen);
      this.header(out, q.id, flags | FLAG.TC, 0, 0, optLen > 0 ? 1 : 0);
      buf.copy(out, 12, 12, qEnd);
      if (optLen > 0) this.writeOpt(out, qEnd, q, buf, 0, scope);
      this.stats.truncated++;
      this.stats.count(transport, q.qtype, t.rcode);
      return out;
    }
    const out = Buffer.allocUnsafe(size);
    this.header(out, q.id, flags, t.an, t.ns, t.ar + (optLen > 0 ? 1 : 0));
    buf.copy(out, 12, 12, qEnd);
    t.body.copy(out, qEnd);
    if (delta !== 0) {
      for (const p of t.ptrs) {
        const at = qEnd + p;
        out.writeUInt16BE(0xc000 | ((out.readUInt16BE(at) & 0x3fff) + delta), at);
      }
    }
    if (ttl >= 0) for (const p of t.ttlAt) out.writeUInt32BE(ttl, qEnd + p);
    if (optLen > 0) this.writeOpt(out, qEnd + t.body.length, q, buf, 0, scope);
    this.stats.count(transport, q.qtype, t.rcode);
    return out;
  }

  private header(out: Buffer, id: number, flags: number, an: number, ns: number, ar: number): void {
    out.writeUInt16BE(id, 0);
    out.writeUInt16BE(flags, 2);
    out.writeUInt16BE(1, 4);
    out.writeUInt16BE(an, 6);
    out.writeUInt16BE(ns, 8);
    out.writeUInt16BE(ar, 10);
  }

  /**
   * An error reply: header with the query's ID, opcode, RD and CD; the question when it
   * parsed (`q` non-null); an OPT when the query had a valid one (BADVERS puts its upper
   * bits there). No ECS is echoed with an error.
   */
  private errorReply(buf: Buffer, q: ParsedQuery | null, rcode: number, transport: number): Buffer {
    const withQ = q !== null && q.questionEnd > 0;
    const opt = q !== null && q.edns;
    const qEnd = withQ ? q.questionEnd : 12;
    const out = Buffer.allocUnsafe(qEnd + (opt ? 11 : 0));
    const qflags = buf.readUInt16BE(2);
    const flags = FLAG.QR | (qflags & 0x7800) | (qflags & (FLAG.RD | FLAG.CD)) | (rcode & 0xf);
    out.writeUInt16BE(buf.readUInt16BE(0), 0);
    out.writeUInt16BE(flags, 2);
    out.writeUInt16BE(withQ ? 1 : 0, 4);
    out.writeUInt32BE(0, 6);
    out.writeUInt16BE(opt ? 1 : 0, 10);
    if (withQ) buf.copy(out, 12, 12, qEnd);
    if (opt) {
      const ecs = q.ecs;
      q.ecs = false;
      this.writeOpt(out, qEnd, q, buf, rcode >>> 4, 0);
      q.ecs = ecs;
    }
    this.stats.count(transport, withQ ? q.qtype : -1, rcode);
    return out;
  }

  /** For explain and tests: the decision the responder would use now for a steered name. */
  describe(nameKey: string, qtype: 'A' | 'AAAA', now = Date.now()) {
    const node = this.state.zones.nodes.get(nameKey);
    if (!node?.steered) return undefined;
    const s = this.state;
    return { step: stepAt(s.plan, now), answer: decide(s.plan, s.cell, '', node.steered.target.decide, qtype, now, this.opts.minTtl) };
  }
}
