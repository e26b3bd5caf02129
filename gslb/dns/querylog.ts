/**
 * The sampled query log (config `log.queries.sampleRate`, docs/dns.md "Query log"): one JSON
 * line per sampled reply, through a pino child logger {module: 'querylog'}. What is logged of
 * the client is a subnet, never a full address: the ECS subnet, or the packet's source, cut
 * to /24 (IPv4) or /56 (IPv6). Sampling is a counter (one reply in N), so a disabled log
 * costs the hot path one comparison and an enabled one no random numbers.
 */
import { formatAddr, maskAddr, parseAddr, type Addr } from '../geo/addr.js';
import type { DecisionClass } from '../model/types.js';

/** The widest client prefix logged: /24 for IPv4, /56 for IPv6 (the ECS scope floors). */
export const LOG_PREFIX4 = 24;
export const LOG_PREFIX6 = 56;

/**
 * One reply in how many is logged for a sample rate in [0, 1]: 0 = none (the log is off),
 * else round(1 / rate) (rate 1: every reply; 0.01: one in 100; 0.3: one in 3).
 */
export function sampleInterval(rate: number): number {
  if (!(rate > 0)) return 0;
  return Math.max(1, Math.round(1 / Math.min(1, rate)));
}

/**
 * The logged subnet of an address given as a string (a packet's source, as node:dgram and
 * node:net report it; IPv4-mapped IPv6 counts as IPv4): cut to /24 or /56. Null when it is
 * not an IP address.
 */
export function sourceSubnet(address: string): string | null {
  const a = parseAddr(address);
  if (a === null) return null;
  const p = a.family === 4 ? LOG_PREFIX4 : LOG_PREFIX6;
  return formatAddr(maskAddr(a, p), p);
}

/**
 * The logged subnet of an ECS option: family 1 (IPv4) or 2 (IPv6), its source prefix, and
 * its address bytes (at most the prefix's bytes, as on the wire); cut to the source prefix
 * or /24 (/56), whichever is shorter. Null for another family or a source prefix of 0 (the
 * client asked not to be located by it).
 */
export function ecsSubnet(family: number, sourcePrefix: number, bytes: ArrayLike<number>): string | null {
  if ((family !== 1 && family !== 2) || !(sourcePrefix > 0)) return null;
  let hi = 0;
  let lo = 0;
  for (let i = 0; i < 4; i++) hi = hi * 256 + (i < bytes.length ? bytes[i]! : 0);
  if (family === 2) for (let i = 4; i < 8; i++) lo = lo * 256 + (i < bytes.length ? bytes[i]! : 0);
  const a: Addr = { family: family === 1 ? 4 : 6, hi, lo };
  const p = Math.min(sourcePrefix, family === 1 ? LOG_PREFIX4 : LOG_PREFIX6);
  return formatAddr(maskAddr(a, p), p);
}

/** One line of the query log (pino adds level, time, pid, role and module). */
export interface QueryLogEntry {
  /** The client's subnet (see the module comment); absent when neither an ECS subnet nor a source address was usable. */
  client?: string;
  /** Where `client` came from: the query's ECS option or the packet's source address. */
  clientFrom?: 'ecs' | 'source';
  transport: 'udp' | 'tcp';
  /** The question: its name absolute (`api.example.com.`) and type (both absent when it did not parse: FORMERR, NOTIMP). */
  name?: string;
  type?: string;
  /** The reply's response code (NOERROR, NXDOMAIN, REFUSED, SERVFAIL, FORMERR, NOTIMP, BADVERS, …). */
  rcode: string;
  /** Steered answers only: the region answered (null when whenAllDown answered without one) and why (DECISION_CLASSES). */
  region?: string | null;
  reason?: DecisionClass;
}
