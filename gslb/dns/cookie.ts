/**
 * DNS Cookies (RFC 7873) with server cookies in the interoperable format of RFC 9018:
 * Version 1, Reserved (3 bytes), Timestamp (seconds, serial arithmetic), Hash =
 * SipHash-2-4(secret, Client Cookie | Version | Reserved | Timestamp | Client-IP).
 * Every node holding the same secret makes and accepts the same cookies; during a rotation
 * the previous secret is accepted too (never used to make one). A cookie is valid from 5
 * minutes ahead to an hour old; one older than half an hour (or made with the previous
 * secret) is replaced by a fresh one in the reply, a younger one is echoed (RFC 9018 §4.3).
 * No allocation per query except when the client's address string changes.
 */
import { siphash24 } from './siphash.js';
import { ipBytes } from './message.js';

/** What a query's COOKIE option was (the responder's verdict). */
export const COOKIE_NONE = 0;
/** A client cookie alone (8 bytes). */
export const COOKIE_CLIENT_ONLY = 1;
/** A client cookie and a server cookie this node (or one with the same secret) made, in time. */
export const COOKIE_VALID = 2;
/** A server cookie that is not ours, expired, of an unknown version or length. */
export const COOKIE_BAD = 3;
export const COOKIE_RESULTS = ['none', 'client_only', 'valid', 'bad'] as const;

/** `dns.cookies` as the responder gets it: the secrets as 32 hex digits. */
export interface CookieOptions {
  mode: 'on' | 'off';
  secret: string;
  previousSecret?: string;
}

/** Parses a secret: 32 hex digits (128 bits), whitespace around ignored; throws naming what is wrong. */
export function parseSecret(text: string): Buffer {
  const t = text.trim();
  if (!/^[0-9a-fA-F]{32}$/.test(t)) throw new Error(`a cookie secret is 32 hex digits (128 bits), e.g. made with "openssl rand -hex 16"; got ${t.length} characters${/[^0-9a-fA-F]/.test(t) ? ' with non-hex ones' : ''}`);
  return Buffer.from(t, 'hex');
}

const MAX_AGE_S = 3600;
const MAX_AHEAD_S = 300;
const RENEW_AGE_S = 1800;

export class CookieJar {
  private readonly secret: Buffer;
  private readonly previous: Buffer | null;
  /** Client Cookie | Version | Reserved | Timestamp | Client-IP: the hash input. */
  private readonly msg = Buffer.alloc(8 + 8 + 16);
  private readonly hash = Buffer.alloc(8);
  private lastClient = '\u0000';
  private ipLen = 0;
  /** The server cookie for the reply (16 bytes), set by check(). */
  readonly server = Buffer.alloc(16);

  constructor(opts: CookieOptions) {
    this.secret = parseSecret(opts.secret);
    this.previous = opts.previousSecret ? parseSecret(opts.previousSecret) : null;
  }

  /** Puts the client's address bytes at msg[16..]; IPv4-mapped IPv6 counts as IPv4. */
  private setClient(client: string): void {
    if (client === this.lastClient) return;
    this.lastClient = client;
    let b: Buffer;
    try {
      b = ipBytes(client);
    } catch {
      b = Buffer.alloc(0);
    }
    if (b.length === 16 && b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) b = b.subarray(12);
    b.copy(this.msg, 16);
    this.ipLen = b.length;
  }

  /** Whether the 8 hash bytes at buf[at] are the hash of msg under `key`. */
  private matches(key: Buffer, buf: Buffer, at: number): boolean {
    siphash24(key, this.msg, 0, 16 + this.ipLen, this.hash, 0);
    for (let i = 0; i < 8; i++) if (this.hash[i] !== buf[at + i]) return false;
    return true;
  }

  /** A fresh server cookie for the client cookie already in msg, into this.server. */
  private fresh(nowS: number): void {
    const m = this.msg;
    m[8] = 1;
    m[9] = 0;
    m[10] = 0;
    m[11] = 0;
    m[12] = (nowS >>> 24) & 0xff;
    m[13] = (nowS >>> 16) & 0xff;
    m[14] = (nowS >>> 8) & 0xff;
    m[15] = nowS & 0xff;
    for (let i = 0; i < 8; i++) this.server[i] = m[8 + i]!;
    siphash24(this.secret, m, 0, 16 + this.ipLen, this.server, 8);
  }

  /**
   * The verdict on the COOKIE option at buf[at, at + len) (len 8 or 16..40: the parser
   * checked) from `client` at `nowS` (seconds); sets this.server to what the reply carries.
   */
  check(buf: Buffer, at: number, len: number, client: string, nowS: number): number {
    this.setClient(client);
    const m = this.msg;
    for (let i = 0; i < 8; i++) m[i] = buf[at + i]!;
    if (len === 8) {
      this.fresh(nowS);
      return COOKIE_CLIENT_ONLY;
    }
    if (len === 24 && buf[at + 8] === 1) {
      const ts = ((buf[at + 12]! << 24) | (buf[at + 13]! << 16) | (buf[at + 14]! << 8) | buf[at + 15]!) >>> 0;
      // Serial arithmetic (RFC 1982): the difference as a signed 32-bit number.
      const age = ((nowS >>> 0) - ts) | 0;
      if (age <= MAX_AGE_S && age >= -MAX_AHEAD_S) {
        for (let i = 8; i < 16; i++) m[i] = buf[at + i]!;
        const current = this.matches(this.secret, buf, at + 16);
        if (current || (this.previous !== null && this.matches(this.previous, buf, at + 16))) {
          if (current && age < RENEW_AGE_S) for (let i = 0; i < 16; i++) this.server[i] = buf[at + 8 + i]!;
          else this.fresh(nowS);
          return COOKIE_VALID;
        }
      }
    }
    this.fresh(nowS);
    return COOKIE_BAD;
  }
}
