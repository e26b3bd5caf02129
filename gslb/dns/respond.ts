/**
 * The responder: one query buffer in, one reply buffer (or nothing) out. Synchronous,
 * never throws, allocates the reply and little else. Semantics: RFC 1035, 2181, 2308,
 * 6891, 7871, 8482, 9619 (see docs/dns.md for the rule-by-rule list).
 */
import { performance } from 'node:perf_hooks';
import { now as clockNow } from '../platform/clock.js';
import { EDNS_DO, EDNS_OPT, FLAG, QCLASS, QTYPE, RCODE, UDP_MIN, rcodeName, typeName } from './constants.js';
import { newParsedQuery, parseQuery, Verdict, type ParsedQuery } from './query.js';
import { keyToName, parentKey } from './name.js';
import type { CompiledZones, NameNode, Template } from './zone.js';
import { admissionSplits, decide, nextChangeOf } from '../policy/decide.js';
import type { Cell, CellRange } from '../model/cell.js';
import { cellsOf, isUniformTable, locateClient, locatedRange, newCellRange, newClientLocation, replyScope, SourceCache } from '../geo/locate.js';
import type { GeoTable } from '../geo/table.js';
import { DECISION_CLASSES, type Plan } from '../model/types.js';
import type { DemandCounts } from '../model/snapshot.js';
import { CACHE_BYPASS, CACHE_HIT, CACHE_MISS, DECISION_INDEX, DnsStats, TRANSPORT_TCP, TRANSPORT_UDP, type AnswerCounter } from './stats.js';
import { ecsSubnet, sampleInterval, sourceSubnet, type QueryLogEntry } from './querylog.js';
import { COOKIE_BAD, COOKIE_NONE, COOKIE_VALID, CookieJar, type CookieOptions } from './cookie.js';
import { RateLimiter, RRL_ANSWER, RRL_DROP, RRL_ERROR, RRL_NODATA, RRL_NXDOMAIN, RRL_PASS, RRL_REFERRAL, RRL_SLIP, type RateLimitOptions, type RateLimitSink } from './ratelimit.js';


export interface ResponderOptions {
  /** Largest UDP reply we send (RFC 9715 default 1232). Also advertised in our OPT. */
  udpPayloadMax: number;
  /** Tmin, seconds. */
  minTtl: number;
  /** The query log's sample rate, 0–1 (config log.queries.sampleRate); absent or 0: no query log. */
  queryLogSampleRate?: number;
  /** Response rate limiting (config dns.rateLimit); absent: off. */
  rateLimit?: RateLimitOptions;
  /** DNS Cookies (config dns.cookies, with the secrets); absent: off (COOKIE options ignored). */
  cookies?: CookieOptions;
  /** NSID (RFC 5001) sent to queries asking for it, as hex; absent: none. */
  nsid?: string;
  /** dns.tcp.idleTimeoutMs: advertised in edns-tcp-keepalive (RFC 7828) over TCP; absent: not advertised. */
  tcpIdleTimeoutMs?: number;
}

/** The options of a Responder besides what it serves. */
export interface ResponderExtras {
  queryLog?: QueryLogSink;
  /** Where a line goes when a client prefix starts being rate limited (at most 10 a second). */
  rateLimitLog?: RateLimitSink;
  /** DNS processes of this node sharing its rate limits (each gets 1/processes of every rate); default 1. */
  processes?: number;
}

/** Where sampled query log entries go (a pino child logger {module: 'querylog'} in the server). */
export type QueryLogSink = (entry: QueryLogEntry) => void;

/** What the responder serves; swapped as a whole (see Responder.swap). */
export interface ServingState {
  zones: CompiledZones;
  plan: Plan;
  /** The compiled geo table (or a default table placing everyone at the default location). */
  geo: GeoTable;
  opts: ResponderOptions;
  /** Identifies this state (config hash + plan version + geo version), acknowledged to the primary. */
  version: string;
}

/** Copies src[from, to) to dst at `at`; a plain loop beats Buffer#copy's checks for the short runs here. */
function copyBytes(src: Buffer, from: number, to: number, dst: Buffer, at: number): void {
  if (to - from > 256) {
    src.copy(dst, at, from, to);
    return;
  }
  for (let i = from; i < to; i++) dst[at++] = src[i]!;
}

/** Big-endian 16-bit write without Buffer#writeUInt16BE's checks (callers size the buffer). */
function put16(out: Buffer, at: number, v: number): void {
  out[at] = v >>> 8;
  out[at + 1] = v & 0xff;
}

function put32(out: Buffer, at: number, v: number): void {
  out[at] = v >>> 24;
  out[at + 1] = (v >>> 16) & 0xff;
  out[at + 2] = (v >>> 8) & 0xff;
  out[at + 3] = v & 0xff;
}

interface CachedDecision {
  template: Template | null;
  ttl: number;
  /** Admission hashing can change the answer inside the cell, or a change is near: decide per query. */
  perQuery: boolean;
  /** The answer counter of this decision's (name, region). */
  counter: AnswerCounter;
  /** The region answered (null: none) and the decision's class (DECISION_INDEX), for the query log and the class counters. */
  region: string | null;
  decision: number;
  /** ms epoch after which the decision must be recomputed. */
  until: number;
}

export class Responder {
  private state: ServingState;
  private opts: ResponderOptions;
  private readonly q: ParsedQuery = newParsedQuery();
  /**
   * Per steered node: cached decisions by cell × 2 + (AAAA ? 1 : 0), and steered queries
   * counted by cell since the last takeDemand() (one lookup per query serves both).
   */
  private perNode = new Map<NameNode, { slots: (CachedDecision | undefined)[]; counts: Float64Array; decisions: Float64Array }>();
  private cells: Cell[];
  /** Where the current query's client is (geo/locate.ts, shared with explain). Reused. */
  private readonly loc = newClientLocation();
  readonly stats = new DnsStats();

  /** The table places every address in one cell: answers never depend on the client (scope 0). */
  private uniform: boolean;

  /** Counts of cells that were swapped out before takeDemand(), already by home. */
  private demandCarry: DemandCounts = {};

  /** Query log: where entries go, one reply in `sampleEvery` (0: off), and the count towards it. */
  private readonly queryLog: QueryLogSink | undefined;
  private sampleEvery = 0;
  private sampleCount = 0;
  /** The current reply's response code, and for a steered answer its region and class index (-1: not steered). */
  private lastRcode = 0;
  private lastRegion: string | null = null;
  private lastDecision = -1;

  /** Response rate limiting (null: off); its settings as JSON, to rebuild it only when they change. */
  private limiter: RateLimiter | null = null;
  private limiterKey = '';
  private readonly extras: ResponderExtras;
  /** The current query's source address, time and (when known) zone index, for the rate limiter. */
  private curClient = '';
  private curNow = 0;
  private curZone = 0;
  private readonly zoneNameOf = (): string => this.state.zones.zones[this.curZone]?.name ?? '';

  constructor(state: ServingState, o: ResponderExtras = {}) {
    this.state = state;
    this.opts = state.opts;
    this.cells = cellsOf(state.geo);
    this.uniform = isUniformTable(state.geo);
    this.queryLog = o.queryLog;
    this.extras = o;
    this.sampleEvery = o.queryLog ? sampleInterval(state.opts.queryLogSampleRate ?? 0) : 0;
    this.setLimiter(state.opts.rateLimit);
    this.setEdns(state.opts);
  }

  /** Cookies (null: off), NSID bytes (null: none), keepalive in 100 ms units (-1: none), from the options. */
  private cookies: CookieJar | null = null;
  private cookiesKey = '';
  private nsid: Buffer | null = null;
  private keepalive = -1;
  /** The current query's cookie verdict (cookie.ts), and whether it came over TCP. */
  private cookieStatus = COOKIE_NONE;
  private curTcp = false;

  private setEdns(o: ResponderOptions): void {
    const key = o.cookies && o.cookies.mode !== 'off' ? JSON.stringify(o.cookies) : '';
    if (key !== this.cookiesKey) {
      this.cookiesKey = key;
      this.cookies = key === '' ? null : new CookieJar(o.cookies!);
    }
    this.nsid = o.nsid ? Buffer.from(o.nsid, 'hex') : null;
    this.keepalive = o.tcpIdleTimeoutMs === undefined ? -1 : Math.min(65535, Math.round(o.tcpIdleTimeoutMs / 100));
  }

  /** (Re)builds the rate limiter when its settings changed (a reload keeps the buckets otherwise). */
  private setLimiter(rl: RateLimitOptions | undefined): void {
    const key = rl && rl.mode !== 'off' ? JSON.stringify(rl) : '';
    if (key === this.limiterKey) return;
    this.limiterKey = key;
    this.limiter = key === '' ? null : new RateLimiter(rl!, this.extras.processes ?? 1, this.stats, this.extras.rateLimitLog, this.sources);
  }

  /** The rate limiter in force (null: off); for tests and explain. */
  get rateLimiter(): RateLimiter | null {
    return this.limiter;
  }

  /** Replaces what is served, atomically for the next query; drops cached decisions. */
  swap(state: ServingState): void {
    // Counts are kept by cell: turn them into homes with the cells they were counted in.
    this.foldDemand(this.demandCarry);
    if (state.geo !== this.state.geo) {
      this.cells = cellsOf(state.geo);
      this.uniform = isUniformTable(state.geo);
    }
    this.state = state;
    this.opts = state.opts;
    this.perNode = new Map();
    this.sampleEvery = this.queryLog ? sampleInterval(state.opts.queryLogSampleRate ?? 0) : 0;
    this.setLimiter(state.opts.rateLimit);
    this.setEdns(state.opts);
  }

  /**
   * The steered queries answered since the last call, by steered name and the client's home
   * region (the first of its cell's ranking), and resets them. The primary adds them up
   * across processes into the store's 10-second demand buckets.
   */
  takeDemand(): DemandCounts {
    const out = this.demandCarry;
    this.foldDemand(out);
    this.demandCarry = {};
    return out;
  }

  private foldDemand(out: DemandCounts): void {
    for (const [node, { counts }] of this.perNode) {
      const name = node.steered!.target.decide.name;
      for (let i = 0; i < counts.length; i++) {
        const n = counts[i]!;
        if (n === 0) continue;
        const home = this.cells[i]?.ranking[0] ?? '(none)';
        const row = (out[name] ??= {});
        row[home] = (row[home] ?? 0) + n;
        counts[i] = 0;
      }
    }
  }

  get geo(): GeoTable {
    return this.state.geo;
  }

  get version(): string {
    return this.state.version;
  }

  /**
   * Answers one query. `tcp` selects the size limit (65535 instead of the UDP limit).
   * Returns null when nothing must be sent (responses, packets shorter than a header).
   */
  answer(buf: Buffer, tcp: boolean, client = '', now = clockNow()): Buffer | null {
    const t0 = performance.now();
    const transport = tcp ? TRANSPORT_TCP : TRANSPORT_UDP;
    this.lastDecision = -1;
    this.curClient = client;
    this.curNow = now;
    this.curZone = 0;
    this.curTcp = tcp;
    this.cookieStatus = COOKIE_NONE;
    let out: Buffer | null;
    try {
      out = this.answerInner(buf, tcp, transport, client, now);
    } catch {
      // Defensive: a bug must cost one SERVFAIL, never the process.
      this.stats.malformed('internal_error');
      const q = this.q;
      if (buf.length < 12) return null;
      this.lastDecision = -1;
      out = this.errorReply(buf, q.questionEnd > 0 ? q : null, RCODE.SERVFAIL, transport);
    }
    if (out === null) return null;
    // Counted into plain arrays (DnsStats), turned into a histogram only when scraped.
    this.stats.observe(performance.now() - t0);
    if (this.sampleEvery !== 0 && ++this.sampleCount >= this.sampleEvery) {
      this.sampleCount = 0;
      this.logQuery(buf, tcp, client);
    }
    return out;
  }

  /** Hands the query log one entry for the reply just made (the sampled path only). */
  private logQuery(buf: Buffer, tcp: boolean, client: string): void {
    const q = this.q;
    const parsed = q.questionEnd > 0;
    const fromEcs = parsed && q.ecs ? ecsSubnet(q.ecsFamily, q.ecsSource, buf.subarray(q.ecsAddrOffset, q.ecsAddrOffset + q.ecsAddrLen)) : null;
    const subnet = fromEcs ?? sourceSubnet(client);
    const entry: QueryLogEntry = {
      ...(subnet !== null ? { client: subnet, clientFrom: fromEcs !== null ? 'ecs' : 'source' } : {}),
      transport: tcp ? 'tcp' : 'udp',
      ...(parsed ? { name: keyToName(q.key), type: typeName(q.qtype) } : {}),
      rcode: rcodeName(this.lastRcode),
      ...(this.lastDecision >= 0 ? { region: this.lastRegion, reason: DECISION_CLASSES[this.lastDecision]! } : {}),
    };
    try {
      this.queryLog!(entry);
    } catch {
      // A log that cannot be written never costs an answer.
    }
  }

  private answerInner(buf: Buffer, tcp: boolean, transport: number, client: string, now: number): Buffer | null {
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
    if (q.edns) {
      // RFC 7828 §3.2.1: over TCP a keepalive option with data is a FORMERR; over UDP it is ignored.
      if (tcp && q.keepalive && q.keepaliveLen !== 0) {
        this.stats.malformed('keepalive_length');
        return this.errorReply(buf, q, RCODE.FORMERR, transport);
      }
      if (q.cookieLen !== 0 && this.cookies !== null) {
        const c = this.cookies.check(buf, q.cookieOffset, q.cookieLen, client, Math.floor(now / 1000));
        this.cookieStatus = c;
        this.stats.cookies[c]!++;
        // RFC 7873 §5.2.3: a bad server cookie over UDP gets BADCOOKIE with a fresh cookie;
        // the client asks again with it (over TCP the address is proven: answered).
        if (c === COOKIE_BAD && !tcp) return this.errorReply(buf, q, RCODE.BADCOOKIE, transport);
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
      this.curZone = node.zone.index;
      if (node.referral) template = node.referral;
      else if (qtype === QTYPE.ANY) template = node.any;
      else if (node.steered && (qtype === QTYPE.A || qtype === QTYPE.AAAA)) {
        const d = this.decideFor(node, qtype, buf, client, now);
        if (d === null) return this.errorReply(buf, q, RCODE.SERVFAIL, transport);
        template = d;
        ttl = this.ttl;
        scope = this.scope;
      } else template = node.answers.get(qtype) ?? node.otherwise;
    } else {
      // The closest known ancestor decides: a delegation → referral; else NXDOMAIN; none → not ours.
      let k = parentKey(q.key);
      while (k !== undefined && !(node = zones.nodes.get(k))) k = parentKey(k);
      if (!node) return this.errorReply(buf, q, RCODE.REFUSED, transport);
      this.curZone = node.zone.index;
      template = node.referral ?? node.zone.nxdomain;
    }
    return this.build(buf, q, template, ttl, scope, q.qnameLen - template.ownerLen, limit, transport);
  }

  /** Outputs of decideFor besides the template (no allocation per query). */
  private ttl = 0;
  private scope = 0;

  /** One-entry cache of the last source address string parsed (a resolver asks repeatedly). */
  private readonly sources = new SourceCache();

  /**
   * Locates the client into this.loc (geo/locate.ts, the same code explain runs): the ECS
   * address when usable, else the packet's source. Reads the ECS address's top 64 bits
   * from the buffer.
   */
  private locate(buf: Buffer, client: string): void {
    const q = this.q;
    let hi = 0;
    let lo = 0;
    if (q.ecs && q.ecsSource > 0) {
      const o = q.ecsAddrOffset;
      const n = q.ecsAddrLen;
      for (let i = 0; i < 4; i++) hi = hi * 256 + (i < n ? buf[o + i]! : 0);
      if (q.ecsFamily === 2) for (let i = 4; i < 8; i++) lo = lo * 256 + (i < n ? buf[o + i]! : 0);
    }
    locateClient(this.state.geo, q.ecsFamily, q.ecs ? q.ecsSource : -1, hi, lo, client, this.sources, this.loc);
  }

  /** The located entry's range (reused object; undefined for the special cell). */
  private readonly rangeBuf = newCellRange();
  private rangeOf(): CellRange | undefined {
    return locatedRange(this.state.geo, this.loc, this.rangeBuf);
  }

  private cellWithRange(): Cell {
    const range = this.rangeOf();
    const base = this.cells[this.loc.cell]!;
    return range ? { ...base, range: { ...range } } : base;
  }

  /**
   * The template for a steered answer (null = SERVFAIL); sets this.ttl and this.scope.
   * Per cell and qtype the decision is cached for up to a second (and never past the next
   * change of a ranked region), unless admission hashing can split the cell: then decide
   * runs per query.
   */
  private decideFor(node: NameNode, qtype: number, buf: Buffer, client: string, now: number): Template | null {
    this.locate(buf, client);
    const loc = this.loc;
    const st = node.steered!;
    const fam = qtype === QTYPE.A ? st.A : st.AAAA;
    let per = this.perNode.get(node);
    if (!per) {
      per = { slots: [], counts: new Float64Array(this.cells.length), decisions: this.stats.decisionsFor(st.target.decide.name) };
      this.perNode.set(node, per);
    }
    per.counts[loc.cell]!++;
    const slots = per.slots;
    const slot = loc.cell * 2 + (qtype === QTYPE.A ? 0 : 1);
    let d = slots[slot];
    const s = this.state;
    const qt = qtype === QTYPE.A ? 'A' : 'AAAA';
    const ecsSource = loc.ecsSource < 0 ? undefined : loc.ecsSource;
    let miss = false;
    if (!d || now >= d.until) {
      miss = true;
      const cell = this.cells[loc.cell]!;
      let next = Infinity;
      for (const r of cell.ranking) next = Math.min(next, nextChangeOf(s.plan, r, now));
      // Decide per query when admission can split the cell, or when a ranked region changes
      // within TTL0 (+1 s): then the TTL counts down to the change each second and a cached
      // TTL would outlive it (caches must expire before a step, not after).
      const perQuery = admissionSplits(s.plan, cell.ranking, now) || next - now < (st.target.decide.ttl + 1) * 1000;
      const until = Math.min(now + 1000, next);
      const ans = decide(s.plan, cell, loc.key, st.target.decide, qt, now, { minTtl: this.opts.minTtl });
      d = {
        template: this.templateOf(fam, ans.rcode, ans.region, ans.addresses.length),
        ttl: ans.ttl,
        perQuery,
        counter: this.stats.counterFor(st.target.decide.name, ans.region),
        region: ans.region,
        decision: DECISION_INDEX[ans.decision],
        until,
      };
      slots[slot] = d;
    }
    if (!d.perQuery) {
      this.stats.cache[miss ? CACHE_MISS : CACHE_HIT]!++;
      d.counter.n++;
      per.decisions[d.decision]!++;
      this.lastRegion = d.region;
      this.lastDecision = d.decision;
      this.ttl = d.ttl;
      this.scope = replyScope(s.geo, this.uniform, loc, false, 0, this.rangeBuf);
      return d.template;
    }
    this.stats.cache[miss ? CACHE_MISS : CACHE_BYPASS]!++;
    const ans = decide(s.plan, this.cellWithRange(), loc.key, st.target.decide, qt, now, { minTtl: this.opts.minTtl, ecsSource });
    this.stats.counterFor(st.target.decide.name, ans.region).n++;
    const di = DECISION_INDEX[ans.decision];
    per.decisions[di]!++;
    this.lastRegion = ans.region;
    this.lastDecision = di;
    this.ttl = ans.ttl;
    this.scope = replyScope(s.geo, this.uniform, loc, true, ans.ecsScope, this.rangeBuf);
    return this.templateOf(fam, ans.rcode, ans.region, ans.addresses.length);
  }

  private templateOf(fam: Map<string, Template>, rcode: string, region: string | null, naddr: number): Template | null {
    if (rcode === 'servfail') return null;
    if (region) return fam.get(region) ?? fam.get('*empty')!;
    return naddr > 0 ? fam.get('*all')! : fam.get('*empty')!;
  }

  /** Our OPT record's length for this query (0 without EDNS): ECS, COOKIE, NSID, keepalive as they apply. */
  private optLen(q: ParsedQuery | null): number {
    if (!q || !q.edns) return 0;
    let n = 11 + (q.ecs ? 8 + q.ecsAddrLen : 0);
    if (this.cookieStatus !== COOKIE_NONE) n += 4 + 24;
    if (q.nsid && this.nsid !== null) n += 4 + this.nsid.length;
    if (q.keepalive && this.curTcp && this.keepalive >= 0) n += 6;
    return n;
  }

  private writeOpt(out: Buffer, at: number, q: ParsedQuery, src: Buffer, extRcode: number, scope: number): void {
    out[at] = 0;
    put16(out, at + 1, QTYPE.OPT);
    put16(out, at + 3, this.opts.udpPayloadMax);
    out[at + 5] = extRcode;
    out[at + 6] = 0;
    put16(out, at + 7, q.dnssecOk ? EDNS_DO : 0);
    let o = at + 11;
    if (q.ecs) {
      const olen = 4 + q.ecsAddrLen;
      put16(out, o, 8);
      put16(out, o + 2, olen);
      put16(out, o + 4, q.ecsFamily);
      out[o + 6] = q.ecsSource;
      out[o + 7] = q.ecsSource === 0 ? 0 : scope;
      copyBytes(src, q.ecsAddrOffset, q.ecsAddrOffset + q.ecsAddrLen, out, o + 8);
      o += 4 + olen;
    }
    if (this.cookieStatus !== COOKIE_NONE) {
      // RFC 7873 §5.2: the client cookie as sent and our server cookie.
      put16(out, o, EDNS_OPT.COOKIE);
      put16(out, o + 2, 24);
      copyBytes(src, q.cookieOffset, q.cookieOffset + 8, out, o + 4);
      copyBytes(this.cookies!.server, 0, 16, out, o + 12);
      o += 28;
    }
    if (q.nsid && this.nsid !== null) {
      put16(out, o, EDNS_OPT.NSID);
      put16(out, o + 2, this.nsid.length);
      copyBytes(this.nsid, 0, this.nsid.length, out, o + 4);
      o += 4 + this.nsid.length;
    }
    if (q.keepalive && this.curTcp && this.keepalive >= 0) {
      // RFC 7828 §3.3.2: the idle timeout in units of 100 ms, over TCP only.
      put16(out, o, EDNS_OPT.KEEPALIVE);
      put16(out, o + 2, 2);
      put16(out, o + 4, this.keepalive);
      o += 6;
    }
    put16(out, at + 9, o - at - 11);
  }

  /**
   * The rate limiter's verdict for a UDP reply of `kind` (RRL_PASS over TCP or when off).
   * Runs once the reply's kind is known and before anything is allocated.
   */
  private limit(transport: number, kind: number): number {
    const l = this.limiter;
    // TCP, and a valid server cookie (the source address is proven), are never limited.
    if (l === null || transport === TRANSPORT_TCP || this.cookieStatus === COOKIE_VALID) return RRL_PASS;
    return l.check(kind, this.curZone, this.curClient, this.curNow, this.zoneNameOf);
  }

  private build(buf: Buffer, q: ParsedQuery, t: Template, ttl: number, scope: number, delta: number, limit: number, transport: number): Buffer | null {
    const qEnd = q.questionEnd;
    const optLen = this.optLen(q);
    const size = qEnd + t.body.length + optLen;
    const flags = FLAG.QR | (t.aa ? FLAG.AA : 0) | (q.flags & (FLAG.RD | FLAG.CD)) | (t.rcode & 0xf);
    let verdict = RRL_PASS;
    if (this.limiter !== null) {
      // The reply's kind: NXDOMAIN, another error, an answer, a referral (no AA), NODATA.
      const kind = t.rcode === RCODE.NXDOMAIN ? RRL_NXDOMAIN : t.rcode !== 0 ? RRL_ERROR : t.an > 0 ? RRL_ANSWER : !t.aa ? RRL_REFERRAL : RRL_NODATA;
      verdict = this.limit(transport, kind);
      if (verdict === RRL_DROP) {
        this.lastRcode = t.rcode;
        return null;
      }
    }
    if (verdict === RRL_SLIP || size > limit) {
      // RFC 1035 §4.2.1 / RFC 6891 §7: TC=1, question and OPT only; the client retries over TCP.
      const out = Buffer.allocUnsafe(qEnd + optLen);
      this.header(out, q.id, flags | FLAG.TC, 0, 0, optLen > 0 ? 1 : 0);
      copyBytes(buf, 12, qEnd, out, 12);
      if (optLen > 0) this.writeOpt(out, qEnd, q, buf, 0, scope);
      if (verdict !== RRL_SLIP) this.stats.truncated++;
      this.stats.count(transport, q.qtype, t.rcode);
      this.lastRcode = t.rcode;
      return out;
    }
    const out = Buffer.allocUnsafe(size);
    this.header(out, q.id, flags, t.an, t.ns, t.ar + (optLen > 0 ? 1 : 0));
    copyBytes(buf, 12, qEnd, out, 12);
    copyBytes(t.body, 0, t.body.length, out, qEnd);
    if (delta !== 0) {
      for (const p of t.ptrs) {
        const at = qEnd + p;
        put16(out, at, 0xc000 | ((((out[at]! << 8) | out[at + 1]!) & 0x3fff) + delta));
      }
    }
    if (ttl >= 0) for (const p of t.ttlAt) put32(out, qEnd + p, ttl);
    if (optLen > 0) this.writeOpt(out, qEnd + t.body.length, q, buf, 0, scope);
    this.stats.count(transport, q.qtype, t.rcode);
    this.lastRcode = t.rcode;
    return out;
  }

  private header(out: Buffer, id: number, flags: number, an: number, ns: number, ar: number): void {
    put16(out, 0, id);
    put16(out, 2, flags);
    put16(out, 4, 1);
    put16(out, 6, an);
    put16(out, 8, ns);
    put16(out, 10, ar);
  }

  /**
   * An error reply: header with the query's ID, opcode, RD and CD; the question when it
   * parsed (`q` non-null); an OPT when the query had a valid one (BADVERS puts its upper
   * bits there). No ECS is echoed with an error.
   */
  private errorReply(buf: Buffer, q: ParsedQuery | null, rcode: number, transport: number): Buffer | null {
    // Rate limited like every reply (an error is as good for reflection as an answer); a
    // slipped error is the same tiny reply with TC=1.
    const verdict = this.limiter === null ? RRL_PASS : this.limit(transport, RRL_ERROR);
    if (verdict === RRL_DROP) {
      this.lastRcode = rcode;
      return null;
    }
    const withQ = q !== null && q.questionEnd > 0;
    const opt = q !== null && q.edns;
    const qEnd = withQ ? q.questionEnd : 12;
    // No ECS is echoed with an error; the other options are (a BADCOOKIE carries the new cookie).
    const ecs = opt && q.ecs;
    if (opt) q.ecs = false;
    const out = Buffer.allocUnsafe(qEnd + (opt ? this.optLen(q) : 0));
    const qflags = buf.readUInt16BE(2);
    const flags = FLAG.QR | (qflags & 0x7800) | (qflags & (FLAG.RD | FLAG.CD)) | (rcode & 0xf) | (verdict === RRL_SLIP ? FLAG.TC : 0);
    put16(out, 0, buf.readUInt16BE(0));
    put16(out, 2, flags);
    put16(out, 4, withQ ? 1 : 0);
    out.writeUInt32BE(0, 6);
    put16(out, 10, opt ? 1 : 0);
    if (withQ) buf.copy(out, 12, 12, qEnd);
    if (opt) {
      this.writeOpt(out, qEnd, q, buf, rcode >>> 4, 0);
      q.ecs = ecs;
    }
    this.stats.count(transport, withQ ? q.qtype : -1, rcode);
    this.lastRcode = rcode;
    return out;
  }


}
