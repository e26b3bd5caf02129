/**
 * Response rate limiting (RRL) with the semantics of BIND, NSD and Knot: UDP responses per
 * second per client prefix of the datagram's source address (/24, /56 by default; never the
 * ECS address, which a client can forge), per response kind, in a token bucket per
 * (prefix, kind) (and for NXDOMAIN per zone, so random subdomains of one zone share one
 * bucket). A limited response is dropped, except every `slip`-th, which goes back truncated
 * (TC=1, no records) so a real client behind the prefix retries over TCP (never limited).
 *
 * Memory is fixed: a table of `tableSize` slots in buckets of 4 (typed arrays, allocated
 * once); a new key takes a free slot of its bucket or evicts the one used least recently.
 * An evicted key comes back with a full bucket, which errs on answering.
 *
 * Per process: with DNS workers the node's rates are divided among the processes (each
 * answers its share of a prefix's datagrams as the kernel hands them out), see docs/dns.md.
 * Synchronous and allocation-free per query except on a new source address string (parsed
 * once, through the responder's cache that the geo locator uses too) and for the log line
 * when a bucket starts being limited.
 */
import { formatAddr, inPrefix, mask32, parsePrefix, type Addr, type Prefix } from '../geo/addr.js';
import { SourceCache } from '../geo/locate.js';

/** Response kinds, as counted and configured. */
export const RRL_ANSWER = 0;
export const RRL_REFERRAL = 1;
export const RRL_NODATA = 2;
export const RRL_NXDOMAIN = 3;
export const RRL_ERROR = 4;
export const RRL_KINDS = ['answer', 'referral', 'nodata', 'nxdomain', 'error'] as const;
export type RrlKind = (typeof RRL_KINDS)[number];

/** What to do with a response (check()'s result). */
export const RRL_PASS = 0;
/** Send it truncated: TC=1, question (and OPT) only. */
export const RRL_SLIP = 1;
export const RRL_DROP = 2;
/** Actions counted per kind: what happened to a limited response. */
export const RRL_ACTIONS = ['slipped', 'dropped', 'logged'] as const;
const ACTION_SLIP = 0;
const ACTION_DROP = 1;
const ACTION_LOG = 2;

/** The config's `dns.rateLimit` (gslb/config/schema.ts declares each with its default). */
export interface RateLimitOptions {
  mode: 'on' | 'log' | 'off';
  responsesPerSecond: number;
  referralsPerSecond: number;
  nodataPerSecond: number;
  nxdomainsPerSecond: number;
  errorsPerSecond: number;
  /** NXDOMAIN responses per second per zone from all clients together; 0 = no such limit. */
  zoneNxdomainsPerSecond: number;
  slip: number;
  ipv4PrefixLength: number;
  ipv6PrefixLength: number;
  exempt: string[];
  tableSize: number;
}

/** One line for the log when a (prefix, kind) starts being limited. */
export interface RateLimitEvent {
  client: string;
  kind: RrlKind;
  /** The zone, for NXDOMAIN. */
  zone?: string;
  /** `on`: limited (dropped or slipped); `log`: would have been. */
  mode: 'on' | 'log';
  /** The bucket's rate in this process (the node's rate / processes). */
  ratePerSecond: number;
  /** The zone's limit from all clients was hit (zoneNxdomainsPerSecond), not this prefix's. */
  zoneWide?: boolean;
}

export type RateLimitSink = (e: RateLimitEvent) => void;

/** Counters a RateLimiter keeps (DnsStats holds them so /metrics shows them). */
export interface RateLimitCounters {
  /** By kind × RRL_ACTIONS. */
  rateLimited: Float64Array;
  rateLimitEvictions: number;
}

const WAYS = 4;

export class RateLimiter {
  readonly mode: 'on' | 'log' | 'off';
  /** Tokens per ms and bucket capacity, by kind (the node's rate / processes). */
  private readonly perMs = new Float64Array(RRL_KINDS.length);
  private readonly cap = new Float64Array(RRL_KINDS.length);
  private readonly slip: number;
  private readonly mask4: number;
  private readonly mask6hi: number;
  private readonly mask6lo: number;
  private readonly exempt: Prefix[];
  private readonly size: number;
  /** The table: key words, tokens, last use (ms; 0 = free), limited responses since the last pass. */
  private readonly k0: Int32Array;
  private readonly k1: Int32Array;
  private readonly k2: Int32Array;
  private readonly tokens: Float64Array;
  private readonly used: Float64Array;
  private readonly limitedRun: Uint32Array;
  /** Per zone (index in CompiledZones.zones): tokens and last refill for zoneNxdomainsPerSecond. */
  private zoneTokens = new Float64Array(0);
  private zoneUsed = new Float64Array(0);
  private zoneRun = new Uint32Array(0);
  private readonly zonePerMs: number;
  private readonly zoneCap: number;

  /** The last client string seen and its masked key (a resolver asks repeatedly). */
  private lastClient = '\u0000';
  private lastFamily = 0;
  private lastHi = 0;
  private lastLo = 0;
  private lastExempt = false;
  /** Log lines left in the current second (at most 10 a second per process). */
  private logBudget = 10;
  private logSecond = 0;

  constructor(
    readonly opts: RateLimitOptions,
    processes: number,
    private readonly counters: RateLimitCounters,
    private readonly sink?: RateLimitSink,
    /** The responder's one-entry cache of parsed source addresses (steered answers parse the source first). */
    private readonly sources: SourceCache = new SourceCache(),
  ) {
    this.mode = opts.mode;
    const n = Math.max(1, processes);
    const rates = [opts.responsesPerSecond, opts.referralsPerSecond, opts.nodataPerSecond, opts.nxdomainsPerSecond, opts.errorsPerSecond];
    rates.forEach((r, i) => {
      const share = r / n;
      this.perMs[i] = share / 1000;
      // A second's worth of burst, and at least one response.
      this.cap[i] = Math.max(1, share);
    });
    this.zonePerMs = opts.zoneNxdomainsPerSecond / n / 1000;
    this.zoneCap = Math.max(1, opts.zoneNxdomainsPerSecond / n);
    this.slip = opts.slip;
    this.mask4 = mask32(opts.ipv4PrefixLength);
    this.mask6hi = mask32(opts.ipv6PrefixLength);
    this.mask6lo = mask32(opts.ipv6PrefixLength - 32);
    this.exempt = opts.exempt.map(parsePrefix);
    let size = WAYS;
    while (size < opts.tableSize) size *= 2;
    this.size = opts.mode === 'off' ? 0 : size;
    this.k0 = new Int32Array(this.size);
    this.k1 = new Int32Array(this.size);
    this.k2 = new Int32Array(this.size);
    this.tokens = new Float64Array(this.size);
    this.used = new Float64Array(this.size);
    this.limitedRun = new Uint32Array(this.size);
  }

  /** The rate per second one bucket of `kind` allows in this process. */
  rateOf(kind: number): number {
    return this.perMs[kind]! * 1000;
  }

  /** Parses and masks the client into last*; returns false when it is not an address. */
  private keyOf(client: string): boolean {
    if (client === this.lastClient) return this.lastFamily !== 0;
    this.lastClient = client;
    const a: Addr | null = this.sources.get(client);
    if (!a) {
      this.lastFamily = 0;
      return false;
    }
    this.lastFamily = a.family;
    this.lastHi = a.family === 4 ? a.hi & this.mask4 : a.hi & this.mask6hi;
    this.lastLo = a.family === 4 ? 0 : a.lo & this.mask6lo;
    this.lastExempt = false;
    for (const e of this.exempt) {
      if (inPrefix(e, a.family, a.hi, a.lo)) {
        this.lastExempt = true;
        break;
      }
    }
    return true;
  }

  /** Whether `client` (an address string) is in an exempt prefix. */
  isExempt(client: string): boolean {
    return this.keyOf(client) && this.lastExempt;
  }

  /**
   * The verdict for one UDP response of `kind` (for NXDOMAIN, of zone index `zone`) to
   * `client` at `now` (ms): RRL_PASS, RRL_SLIP or RRL_DROP (log mode: always RRL_PASS, the
   * limited ones counted as `logged`).
   */
  check(kind: number, zone: number, client: string, now: number, zoneName?: () => string): number {
    if (this.size === 0) return RRL_PASS;
    if (!this.keyOf(client) || this.lastExempt) return RRL_PASS;
    const fam = this.lastFamily;
    const hi = this.lastHi | 0;
    const lo = this.lastLo | 0;
    const z = kind === RRL_NXDOMAIN ? zone : 0;
    const k2 = ((fam === 6 ? 1 : 0) << 31) | (kind << 24) | (z & 0xffffff);
    // Bucket: a 32-bit mix of the key (murmur3's finaliser over the three words).
    let h = Math.imul(hi ^ 0x9e3779b9, 0x85ebca6b) ^ lo;
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) ^ k2;
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h ^= h >>> 13;
    const base = (h & (this.size - 1)) & ~(WAYS - 1);
    let slot = -1;
    let oldest = base;
    for (let i = base; i < base + WAYS; i++) {
      if (this.used[i] !== 0 && this.k0[i] === hi && this.k1[i] === lo && this.k2[i] === k2) {
        slot = i;
        break;
      }
      if (this.used[i]! < this.used[oldest]!) oldest = i;
    }
    const cap = this.cap[kind]!;
    if (slot < 0) {
      slot = oldest;
      if (this.used[slot] !== 0) this.counters.rateLimitEvictions++;
      this.k0[slot] = hi;
      this.k1[slot] = lo;
      this.k2[slot] = k2;
      this.tokens[slot] = cap;
      this.limitedRun[slot] = 0;
    } else {
      const t = this.tokens[slot]! + Math.max(0, now - this.used[slot]!) * this.perMs[kind]!;
      this.tokens[slot] = t > cap ? cap : t;
    }
    this.used[slot] = now > 0 ? now : 1;
    let zoneWide = false;
    if (this.tokens[slot]! >= 1) {
      if (kind === RRL_NXDOMAIN && this.zonePerMs > 0 && !this.zoneTake(zone, now)) zoneWide = true;
      else {
        this.tokens[slot]!--;
        this.limitedRun[slot] = 0;
        return RRL_PASS;
      }
    }
    // Limited.
    const run = ++this.limitedRun[slot]!;
    if (run === 1 && this.sink) this.report(kind, zoneName, now, zoneWide);
    const row = kind * RRL_ACTIONS.length;
    if (this.mode === 'log') {
      this.counters.rateLimited[row + ACTION_LOG]!++;
      return RRL_PASS;
    }
    if (this.slip > 0 && run % this.slip === 0) {
      this.counters.rateLimited[row + ACTION_SLIP]!++;
      return RRL_SLIP;
    }
    this.counters.rateLimited[row + ACTION_DROP]!++;
    return RRL_DROP;
  }

  /** Takes one token of zone `zone`'s NXDOMAIN bucket; false when it is empty. */
  private zoneTake(zone: number, now: number): boolean {
    if (zone >= this.zoneTokens.length) {
      const n = Math.max(zone + 1, this.zoneTokens.length * 2, 8);
      const t = new Float64Array(n).fill(-1);
      t.set(this.zoneTokens);
      const u = new Float64Array(n);
      u.set(this.zoneUsed);
      const r = new Uint32Array(n);
      r.set(this.zoneRun);
      this.zoneTokens = t;
      this.zoneUsed = u;
      this.zoneRun = r;
    }
    let t = this.zoneTokens[zone]!;
    t = t < 0 ? this.zoneCap : Math.min(this.zoneCap, t + Math.max(0, now - this.zoneUsed[zone]!) * this.zonePerMs);
    this.zoneUsed[zone] = now;
    if (t >= 1) {
      this.zoneTokens[zone] = t - 1;
      return true;
    }
    this.zoneTokens[zone] = t;
    return false;
  }

  private report(kind: number, zoneName: (() => string) | undefined, now: number, zoneWide: boolean): void {
    const second = Math.floor(now / 1000);
    if (second !== this.logSecond) {
      this.logSecond = second;
      this.logBudget = 10;
    }
    if (this.logBudget <= 0) return;
    this.logBudget--;
    const a: Addr = { family: this.lastFamily as 4 | 6, hi: this.lastHi >>> 0, lo: this.lastLo >>> 0 };
    const prefix = a.family === 4 ? this.opts.ipv4PrefixLength : this.opts.ipv6PrefixLength;
    const e: RateLimitEvent = {
      client: formatAddr(a, prefix),
      kind: RRL_KINDS[kind]!,
      ...(kind === RRL_NXDOMAIN && zoneName ? { zone: zoneName() } : {}),
      mode: this.mode === 'log' ? 'log' : 'on',
      ratePerSecond: zoneWide ? this.zonePerMs * 1000 : this.rateOf(kind),
      ...(zoneWide ? { zoneWide: true } : {}),
    };
    try {
      this.sink!(e);
    } catch {
      // A log that cannot be written never costs an answer.
    }
  }
}
