/**
 * The shared store for many nodes: signals, overrides, the audit log, demand and leases in
 * Redis (standalone, Sentinel or Cluster), through ioredis. The only module that imports
 * ioredis; key names come from keys.ts. It keeps every contract of store.ts; what is
 * particular to Redis:
 *
 * - Every multi-key update is one Lua script below (its header lists KEYS and ARGV). Every
 *   script that changes what snapshot() returns INCRs the revision and PUBLISHes it on the
 *   revision channel. Two kinds of write do not: addDemand (store.ts: demand does not bump
 *   the revision) and leases (they are not state the planner reads; the memory store does
 *   not bump for them either), so lease renewals never make every node reload.
 * - Signals: the record is read (HGET), folded here with reduce(), and written by a script
 *   that compare-and-sets on the previous record's observedAt; on a conflict the fold is
 *   redone from the new record, at most MAX_CAS_ATTEMPTS times.
 * - Overrides and audit entries are written by one script each; with `waitReplicas` > 0 the
 *   script is followed on the same connection by `WAIT n waitTimeoutMs`, and the write
 *   rejects (`unavailable`) when fewer replicas acknowledged it.
 * - Leases: validity is `until` (ms epoch) compared inside the script with Redis `TIME`;
 *   tokens come from one INCR counter. Lease keys carry no TTL at all.
 * - Other nodes learn of writes by pub/sub and by polling the revision every `pollMs`;
 *   listeners get each newer revision once, and the latest one again after a resync.
 * - Fail static: commands are never queued while disconnected and never resent after a
 *   reconnect (a write is never applied twice by the client), so a read or write while Redis
 *   is unreachable rejects within `commandTimeoutMs` with StoreError `unavailable`; ioredis
 *   reconnects with a backoff capped at 2 s, and `stale` clears only after a successful
 *   revision read, when listeners are called so the node reloads its snapshot.
 * - Data loss is never a routine resync (store.ts StoreLoss): the poll compares the store's
 *   epoch, format marker and revision with what this node had seen; when they went away or
 *   back it logs at error level, marks the store anew (a new epoch, so no id or audit seq of
 *   the lost data is given again: keys.ts), audits `store.loss` there, and with `onLoss`
 *   `hold` (the default) hands no revision to listeners until confirmLoss() here or on
 *   another node of the fleet (the `lossok` key) confirms it.
 */
import { Cluster, Redis, type ChainableCommander, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Override, Signal } from '../model/types.js';
import { demandField, parseDemandField, storeKeys, type StoreKeys } from './keys.js';
import { DEFAULT_RULES, heldAgainst, reduce, type ReduceRules } from './reducer.js';
import type { Provenance } from '../model/principal.js';
import type { SignalRecord, AuditEntry, DemandBucket, QuarantineEntry, StoreSnapshot, UnreadableRecord } from '../model/snapshot.js';
import { overrideShapeProblem, recordShapeProblem } from './record-shape.js';
import { signalId } from './signals.js';
import { StoreError, type Lease, type PutItem, type PutResult, type StateStore, type StoreLoss, type StoreStatus } from './store.js';

/** Where Redis is, parsed from the store URL. */
export type RedisTarget =
  | { mode: 'standalone'; host: string; port: number; tls: boolean; username?: string; password?: string; db: number }
  | { mode: 'sentinel'; sentinels: { host: string; port: number }[]; name: string; tls: boolean; username?: string; password?: string; db: number }
  | { mode: 'cluster'; nodes: { host: string; port: number }[]; tls: boolean; username?: string; password?: string };

export interface RedisStoreOptions {
  /**
   * `redis://[user:pass@]host[:port][/db]`, `rediss://…` (TLS),
   * `redis+sentinel://[user:pass@]host:port,host:port/mastername[/db]` (credentials are the
   * master's), `redis+cluster://[user:pass@]host:port,host:port` (`rediss+…` for TLS).
   */
  url: string;
  /** Key prefix, the hash tag of every key (keys.ts). Default `gridsteer`. */
  prefix?: string;
  rules?: ReduceRules;
  /** Replicas that must acknowledge an override or audit write (WAIT). Default 0: no WAIT. */
  waitReplicas?: number;
  /** The WAIT timeout in ms. Default 1000. */
  waitTimeoutMs?: number;
  /** How often the revision is polled (and the clock skew measured), ms. Default 1000. */
  pollMs?: number;
  /** How long start() tries to reach Redis before it rejects, ms. Default 5000. */
  startTimeoutMs?: number;
  /** Bound on every command, ms (raised above waitTimeoutMs when needed). Default 2000. */
  commandTimeoutMs?: number;
  /** Connection events (lost, back, giving up) and listener failures. */
  log?: (level: 'info' | 'warn' | 'error', msg: string) => void;
  /** This node's clock (ms epoch): for the skew against Redis TIME and outage times in status(); never for leases or signals. */
  clock?: () => number;
  /**
   * What a data loss does to planning: `hold` (default) keeps the node on its last plan until
   * an operator confirms; `accept` reports it as loudly but plans from the store as it is.
   */
  onLoss?: 'hold' | 'accept';
}

/** How many times putSignal refolds after a concurrent write of the same record. */
export const MAX_CAS_ATTEMPTS = 10;
/** Demand buckets older than this, behind the newest bucket stored, are dropped (as in memory-store.ts). */
const DEMAND_KEEP_MS = 3600_000;
/** Reconnect backoff cap, ms. */
const MAX_BACKOFF_MS = 2000;

const SCHEME_RE = /^(rediss?)(\+sentinel|\+cluster)?:\/\/(.*)$/;

function parseHostPort(s: string, defaultPort: number, url: string): { host: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(s);
  const port = m?.[3] === undefined ? defaultPort : Number(m[3]);
  if (!m || port < 1 || port > 65535) throw new StoreError('invalid', `state: store URL ${redactUrl(url)}: "${s}" is not host[:port] (IPv6 in brackets: [::1]:6379)`);
  return { host: m[1] ?? m[2]!, port };
}

/**
 * Parses a store URL (see RedisStoreOptions.url). Throws StoreError `invalid` naming the
 * problem; never connects.
 */
export function parseRedisUrl(url: string): RedisTarget {
  const m = SCHEME_RE.exec(url);
  if (!m) throw new StoreError('invalid', `state: store URL ${redactUrl(url)} is not redis://, rediss://, redis+sentinel:// or redis+cluster://`);
  const tls = m[1] === 'rediss';
  const mode = m[2] === '+sentinel' ? 'sentinel' : m[2] === '+cluster' ? 'cluster' : 'standalone';
  let rest = m[3]!;
  if (rest.includes('?') || rest.includes('#')) throw new StoreError('invalid', `state: store URL ${redactUrl(url)}: query strings and fragments are not supported (remove them)`);
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = userinfo.indexOf(':');
    const u = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon));
    const p = colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1));
    if (colon < 0) password = u || undefined;
    else {
      username = u || undefined;
      password = p || undefined;
    }
  }
  const slash = rest.indexOf('/');
  const hostPart = slash < 0 ? rest : rest.slice(0, slash);
  const path = (slash < 0 ? '' : rest.slice(slash + 1)).split('/').filter((x) => x !== '');
  if (hostPart === '') throw new StoreError('invalid', `state: store URL ${redactUrl(url)} names no host`);
  const hosts = hostPart.split(',');
  const dbOf = (s: string | undefined): number => {
    if (s === undefined) return 0;
    if (!/^\d{1,5}$/.test(s)) throw new StoreError('invalid', `state: store URL ${redactUrl(url)}: database "${s}" is not a number`);
    return Number(s);
  };
  const cred = { ...(username !== undefined ? { username } : {}), ...(password !== undefined ? { password } : {}) };
  if (mode === 'standalone') {
    if (hosts.length !== 1) throw new StoreError('invalid', `state: store URL ${redactUrl(url)} lists several hosts: use redis+sentinel:// or redis+cluster://`);
    if (path.length > 1) throw new StoreError('invalid', `state: store URL ${redactUrl(url)}: the path is the database number only`);
    return { mode, ...parseHostPort(hosts[0]!, 6379, url), tls, ...cred, db: dbOf(path[0]) };
  }
  if (mode === 'sentinel') {
    if (path.length < 1 || path.length > 2) throw new StoreError('invalid', `state: store URL ${redactUrl(url)}: give the master name as the path (redis+sentinel://host:26379,host:26379/mymaster[/db])`);
    return { mode, sentinels: hosts.map((h) => parseHostPort(h, 26379, url)), name: decodeURIComponent(path[0]!), tls, ...cred, db: dbOf(path[1]) };
  }
  if (path.length > 0) throw new StoreError('invalid', `state: store URL ${redactUrl(url)}: a Cluster has no database path (remove /${path.join('/')})`);
  return { mode, nodes: hosts.map((h) => parseHostPort(h, 6379, url)), tls, ...cred };
}

/** The URL with its password replaced by `***`, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z+]+:\/\/[^:@/]*:)[^@/]*@/, '$1***@');
}

// ---------------------------------------------------------------------------------------
// Lua scripts. Numbers cross into Lua as strings; integers up to 2^53 survive tonumber.

/** How much earlier than the command timeout an override script's deadline falls (skew drift, ms). */
const DEADLINE_MARGIN_MS = 300;

/**
 * gsPutSignal — compare-and-set one signal record, then bump and publish the revision.
 * KEYS[1] sig hash; KEYS[2] rev; KEYS[3] (only with a fence) the lease hash
 * ARGV[1] record id; ARGV[2] the previous record's observedAt ('' = there was none);
 * ARGV[3] the new record (JSON); ARGV[4] the revision channel; ARGV[5] fencing token ('' = none)
 * Returns {'ok', revision} | {'conflict'} | {'fenced', current token or '', holder or ''}
 */
const PUT_SIGNAL = `
if ARGV[5] ~= '' then
  local l = redis.call('HMGET', KEYS[3], 'token', 'holder')
  if l[1] ~= ARGV[5] then return {'fenced', l[1] or '', l[2] or ''} end
end
local prev = redis.call('HGET', KEYS[1], ARGV[1])
if prev then
  if ARGV[2] == '' then return {'conflict'} end
  local rec = cjson.decode(prev)
  if rec['signal']['observedAt'] ~= tonumber(ARGV[2]) then return {'conflict'} end
elseif ARGV[2] ~= '' then
  return {'conflict'}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
local rev = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', ARGV[4], rev)
return {'ok', rev}
`;

/** Lua: the end of a script that changed `n` things: bump and publish the revision (KEYS[revKey], channel ARGV[channelArgv]) if n > 0; returns {n, revision}. */
const BUMP_IF_CHANGED = (revKey: number, channelArgv: number) => `
local rev = tonumber(redis.call('GET', KEYS[${revKey}]) or '0')
if n > 0 then
  rev = redis.call('INCR', KEYS[${revKey}])
  redis.call('PUBLISH', ARGV[${channelArgv}], rev)
end
return {n, rev}
`;

/**
 * gsRemoveSignals — compare-and-delete signal records, then bump and publish the revision once.
 * KEYS[1] sig hash; KEYS[2] rev
 * ARGV[1] the revision channel; then pairs: ARGV[2k] record id, ARGV[2k+1] its observedAt
 * Returns {removed, revision}
 */
const REMOVE_SIGNALS = `
local n = 0
for i = 2, #ARGV, 2 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if cur and cjson.decode(cur)['signal']['observedAt'] == tonumber(ARGV[i + 1]) then
    redis.call('HDEL', KEYS[1], ARGV[i])
    n = n + 1
  end
end
${BUMP_IF_CHANGED(2, 1)}`;

/**
 * gsTrimAudit — drop the audit entries older than a cutoff from the list's old end (the list is
 * newest first: LPUSH); stops at the first entry at or after it. No revision bump.
 * KEYS[1] audit list
 * ARGV[1] the cutoff (ms epoch)
 * Returns the number removed.
 */
const TRIM_AUDIT = `
local n = 0
while true do
  local last = redis.call('LINDEX', KEYS[1], -1)
  if not last then break end
  local ok, e = pcall(cjson.decode, last)
  if not ok or type(e) ~= 'table' or type(e['at']) ~= 'number' or e['at'] >= tonumber(ARGV[1]) then break end
  redis.call('RPOP', KEYS[1])
  n = n + 1
end
return n
`;

/**
 * The deadline guard of the override scripts: a write that reaches Redis after the caller
 * gave up on it (its connection was cut, the bytes sat in a TCP send queue and arrived when
 * the path healed) must not apply — the caller told its user "nothing was changed".
 * ARGV[DEADLINE] is the latest Redis TIME (ms) at which the script may still write.
 */
const DEADLINE_GUARD = (argv: number | string) => `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now > tonumber(ARGV[${argv}]) then return {'late', now - tonumber(ARGV[${argv}])} end
`;

/**
 * The epoch of the store's data (keys.ts): read, or set to ARGV[argv] (this node's clock, ms)
 * when a reset left none; a new store's audit seq starts at its epoch. Defines `epoch` and
 * `b36` (an integer in base 36, for ids).
 */
const EPOCH = (epochKey: number, auditSeqKey: number, argv: number) => `
local function b36(n)
  local d = '0123456789abcdefghijklmnopqrstuvwxyz'
  local s = ''
  repeat
    local r = n % 36
    s = string.sub(d, r + 1, r + 1) .. s
    n = math.floor(n / 36)
  until n == 0
  return s
end
local epoch = redis.call('GET', KEYS[${epochKey}])
if not epoch then
  epoch = ARGV[${argv}]
  redis.call('SET', KEYS[${epochKey}], epoch)
end
redis.call('SET', KEYS[${auditSeqKey}], epoch, 'NX')
`;

/**
 * gsCreateOverride — store a new override and its audit entry, bump and publish the revision.
 * KEYS[1] ov hash; KEYS[2] ovseq; KEYS[3] audit list; KEYS[4] auditseq; KEYS[5] rev; KEYS[6] epoch
 * ARGV[1] the override without id (a non-empty JSON object);
 * ARGV[2] the audit entry without seq, target and after (a non-empty JSON object);
 * ARGV[3] the revision channel; ARGV[4] a new epoch (ms) if none is stored; ARGV[5] the deadline (Redis TIME, ms)
 * Returns {revision, id, override JSON} | {'late', ms past the deadline}
 * The id is `ov-<epoch in base 36>-<n>`: never one of a store that was lost.
 */
const CREATE_OVERRIDE = `${DEADLINE_GUARD(5)}${EPOCH(6, 4, 4)}
local n = redis.call('INCR', KEYS[2])
local id = 'ov-' .. b36(tonumber(epoch)) .. '-' .. n
local ov = '{"id":"' .. id .. '",' .. string.sub(ARGV[1], 2)
redis.call('HSET', KEYS[1], id, ov)
local seq = redis.call('INCR', KEYS[4])
redis.call('LPUSH', KEYS[3], string.sub(ARGV[2], 1, -2) .. ',"seq":' .. seq .. ',"target":"' .. id .. '","after":' .. ov .. '}')
local rev = redis.call('INCR', KEYS[5])
redis.call('PUBLISH', ARGV[3], rev)
return {rev, id, ov}
`;

/**
 * gsEndOverride — remove a live override and audit it, bump and publish the revision.
 * KEYS[1] ov hash; KEYS[2] audit list; KEYS[3] auditseq; KEYS[4] rev; KEYS[5] epoch
 * ARGV[1] override id; ARGV[2] the audit entry without seq and before (a non-empty JSON
 * object); ARGV[3] the revision channel; ARGV[4] a new epoch (ms) if none is stored;
 * ARGV[5] the deadline (Redis TIME, ms)
 * Returns {'not_found'} | {'ok', revision, override JSON} | {'late', ms past the deadline}
 */
const END_OVERRIDE = `${DEADLINE_GUARD(5)}
local ov = redis.call('HGET', KEYS[1], ARGV[1])
if not ov then return {'not_found'} end
redis.call('HDEL', KEYS[1], ARGV[1])
${EPOCH(5, 3, 4)}
local seq = redis.call('INCR', KEYS[3])
redis.call('LPUSH', KEYS[2], string.sub(ARGV[2], 1, -2) .. ',"seq":' .. seq .. ',"before":' .. ov .. '}')
local rev = redis.call('INCR', KEYS[4])
redis.call('PUBLISH', ARGV[3], rev)
return {'ok', rev, ov}
`;

/**
 * gsAudit — append one audit entry (a store event such as `store.loss`); no revision bump.
 * KEYS[1] audit list; KEYS[2] auditseq; KEYS[3] epoch
 * ARGV[1] the entry without seq (a non-empty JSON object); ARGV[2] a new epoch (ms) if none is stored
 * Returns {seq, epoch}
 */
const AUDIT = `${EPOCH(3, 2, 2)}
local seq = redis.call('INCR', KEYS[2])
redis.call('LPUSH', KEYS[1], string.sub(ARGV[1], 1, -2) .. ',"seq":' .. seq .. '}')
return {seq, epoch}
`;

/**
 * gsConfirmLoss — an operator confirms a data loss: audit it, record the confirmation for
 * every node (KEYS[4]: JSON {epoch, revision}), bump and publish the revision.
 * KEYS[1] audit list; KEYS[2] auditseq; KEYS[3] epoch; KEYS[4] lossok; KEYS[5] rev
 * ARGV[1] the entry without seq (a non-empty JSON object); ARGV[2] a new epoch (ms) if none
 * is stored; ARGV[3] the revision channel; ARGV[4] the deadline (Redis TIME, ms)
 * Returns {revision, epoch} | {'late', ms past the deadline}
 */
const CONFIRM_LOSS = `${DEADLINE_GUARD(4)}${EPOCH(3, 2, 2)}
local rev = redis.call('INCR', KEYS[5])
redis.call('SET', KEYS[4], '{"epoch":"' .. epoch .. '","revision":' .. rev .. '}')
local seq = redis.call('INCR', KEYS[2])
redis.call('LPUSH', KEYS[1], string.sub(ARGV[1], 1, -2) .. ',"seq":' .. seq .. '}')
redis.call('PUBLISH', ARGV[3], rev)
return {rev, epoch}
`;

/**
 * gsSnapshot — everything the planner reads, at one revision (read only).
 * KEYS[1] rev; KEYS[2] sig hash; KEYS[3] ov hash; KEYS[4] demand hash
 * ARGV none
 * Returns {revision, sig HGETALL, ov HGETALL, demand HGETALL}
 */
const SNAPSHOT = `
local rev = redis.call('GET', KEYS[1])
return {tonumber(rev or '0'), redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]), redis.call('HGETALL', KEYS[4]), redis.call('HGETALL', KEYS[5])}
`;

/** Lua: a stored value as JSON for an audit entry: itself when it is JSON, else as a JSON string (a hand-written or torn value). */
const AS_JSON = `
local function asJson(x)
  if not x then return 'null' end
  local ok = pcall(cjson.decode, x)
  if ok then return x end
  return cjson.encode(x)
end
`;

/**
 * gsQuarantine — add quarantine entries (ADR 0020), each audited; bump and publish the revision once if any changed.
 * KEYS[1] quarantine hash; KEYS[2] audit list; KEYS[3] auditseq; KEYS[4] rev; KEYS[5] epoch
 * ARGV[1] the revision channel; ARGV[2] a new epoch (ms) if none is stored; then quadruples:
 * target, fingerprint, the entry (JSON), its audit entry without seq, before and after (a
 * non-empty JSON object); the last ARGV the deadline (Redis TIME, ms)
 * Returns {added, revision} | {'late', ms past the deadline}
 */
const QUARANTINE = `${DEADLINE_GUARD('#ARGV')}${EPOCH(5, 3, 2)}${AS_JSON}
local n = 0
for i = 3, #ARGV - 1, 4 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  local same = false
  if cur then
    local ok, e = pcall(cjson.decode, cur)
    same = ok and type(e) == 'table' and e['fingerprint'] == ARGV[i + 1]
  end
  if not same then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
    local seq = redis.call('INCR', KEYS[3])
    redis.call('LPUSH', KEYS[2], string.sub(ARGV[i + 3], 1, -2) .. ',"seq":' .. seq .. ',"before":' .. asJson(cur) .. ',"after":' .. ARGV[i + 2] .. '}')
    n = n + 1
  end
end
${BUMP_IF_CHANGED(4, 1)}`;

/**
 * gsQuarantineEnd — release a quarantine entry, or drop it with the record it names; audited, revision bumped and published.
 * KEYS[1] quarantine hash; KEYS[2] audit list; KEYS[3] auditseq; KEYS[4] rev; KEYS[5] epoch;
 * KEYS[6] the hash holding the record (drop) or the quarantine hash again (release); KEYS[7] the demand index
 * ARGV[1] target; ARGV[2] the record's field in KEYS[6] ('' = release: the record stays);
 * ARGV[3] the audit entry without seq and before (a non-empty JSON object); ARGV[4] the
 * revision channel; ARGV[5] a new epoch (ms) if none is stored; ARGV[6] the deadline (Redis TIME, ms)
 * Returns {'not_found'} | {'ok', revision, entry JSON} | {'late', ms past the deadline}
 */
const QUARANTINE_END = `${DEADLINE_GUARD(6)}${AS_JSON}
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return {'not_found'} end
redis.call('HDEL', KEYS[1], ARGV[1])
local before = asJson(cur)
if ARGV[2] ~= '' then
  local rec = redis.call('HGET', KEYS[6], ARGV[2])
  redis.call('HDEL', KEYS[6], ARGV[2])
  redis.call('ZREM', KEYS[7], ARGV[2])
  before = '{"entry":' .. before .. ',"record":' .. asJson(rec) .. '}'
end
${EPOCH(5, 3, 5)}
local seq = redis.call('INCR', KEYS[3])
redis.call('LPUSH', KEYS[2], string.sub(ARGV[3], 1, -2) .. ',"seq":' .. seq .. ',"before":' .. before .. '}')
local rev = redis.call('INCR', KEYS[4])
redis.call('PUBLISH', ARGV[4], rev)
return {'ok', rev, cur}
`;

/**
 * gsAddDemand — add query counts to demand fields and drop buckets older than the keep
 * window behind the newest bucket. No revision bump (store.ts).
 * KEYS[1] demand hash; KEYS[2] demand index zset
 * ARGV[1] keep window (ms); ARGV[2..] triples: bucket (ms), field, queries
 * Returns the number of fields dropped.
 */
const ADD_DEMAND = `
for i = 2, #ARGV, 3 do
  redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i + 1], ARGV[i + 2])
  redis.call('ZADD', KEYS[2], ARGV[i], ARGV[i + 1])
end
local newest = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local dropped = 0
if newest[2] then
  local cutoff = '(' .. string.format('%d', tonumber(newest[2]) - tonumber(ARGV[1]))
  for _ = 1, 1000 do
    local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', cutoff, 'LIMIT', 0, 500)
    if #old == 0 then break end
    redis.call('HDEL', KEYS[1], unpack(old))
    redis.call('ZREM', KEYS[2], unpack(old))
    dropped = dropped + #old
  end
end
return dropped
`;

/**
 * gsAcquireLease — take or renew a lease by Redis TIME. No revision bump, no TTL.
 * KEYS[1] the lease hash; KEYS[2] leasetok
 * ARGV[1] holder; ARGV[2] ttl (ms)
 * Returns {'ok', token, until} | {'held', holder, until}
 */
const ACQUIRE_LEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HMGET', KEYS[1], 'holder', 'token', 'until')
local live = cur[3] and tonumber(cur[3]) > now
if live and cur[1] ~= ARGV[1] then return {'held', cur[1], tonumber(cur[3])} end
local token
if live then token = tonumber(cur[2]) else token = redis.call('INCR', KEYS[2]) end
local untilMs = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'token', string.format('%d', token), 'until', string.format('%d', untilMs))
return {'ok', token, untilMs}
`;

/**
 * gsReleaseLease — drop a lease if `holder` still has it with `token`.
 * KEYS[1] the lease hash
 * ARGV[1] holder; ARGV[2] token
 * Returns 1 when released, 0 otherwise.
 */
const RELEASE_LEASE = `
local cur = redis.call('HMGET', KEYS[1], 'holder', 'token')
if cur[1] == ARGV[1] and cur[2] == ARGV[2] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

/**
 * The store format this build reads and writes: what the keys (keys.ts) and the records in
 * them hold. A change to either takes a new number; nodes then refuse a deployment in a
 * format they do not know instead of misreading it or writing what newer nodes cannot read.
 */
export const STORE_FORMAT = 1;

/** Why `stored` (the format key's value) is not this build's format, in words with the fix; null when it is (or unset). */
export function formatProblem(stored: string | null, where: string, keys: StoreKeys): string | null {
  if (stored === null || stored === String(STORE_FORMAT)) return null;
  const n = /^[0-9]{1,9}$/.test(stored) ? Number(stored) : NaN;
  const head = `state: Redis at ${where} (prefix ${keys.prefix})`;
  if (Number.isNaN(n)) {
    return `${head} holds ${JSON.stringify(stored.slice(0, 40))} in ${keys.format}, not a GridSteer store format: another program uses this prefix; give GridSteer a prefix of its own (state.redis.prefix)`;
  }
  if (n > STORE_FORMAT) {
    return `${head} holds GridSteer store format ${n}, newer than this build's ${STORE_FORMAT}: a newer GridSteer wrote it; upgrade this node (it reads and writes nothing there until then)`;
  }
  return `${head} holds GridSteer store format ${n}, older than any this build (format ${STORE_FORMAT}) can read: upgrade through a build that migrates format ${n}, or start from an empty prefix`;
}

/** numberOfKeys null: the caller passes the key count first (putSignal has 2 or 3 keys). */
const SCRIPTS: Record<string, { lua: string; numberOfKeys: number | null; readOnly?: boolean }> = {
  gsPutSignal: { lua: PUT_SIGNAL, numberOfKeys: null },
  gsRemoveSignals: { lua: REMOVE_SIGNALS, numberOfKeys: 2 },
  gsTrimAudit: { lua: TRIM_AUDIT, numberOfKeys: 1 },
  gsCreateOverride: { lua: CREATE_OVERRIDE, numberOfKeys: 6 },
  gsEndOverride: { lua: END_OVERRIDE, numberOfKeys: 5 },
  gsSnapshot: { lua: SNAPSHOT, numberOfKeys: 5, readOnly: true },
  gsQuarantine: { lua: QUARANTINE, numberOfKeys: 5 },
  gsQuarantineEnd: { lua: QUARANTINE_END, numberOfKeys: 7 },
  gsAddDemand: { lua: ADD_DEMAND, numberOfKeys: 2 },
  gsAcquireLease: { lua: ACQUIRE_LEASE, numberOfKeys: 2 },
  gsReleaseLease: { lua: RELEASE_LEASE, numberOfKeys: 1 },
  gsAudit: { lua: AUDIT, numberOfKeys: 3 },
  gsConfirmLoss: { lua: CONFIRM_LOSS, numberOfKeys: 5 },
};
type ScriptName = keyof typeof SCRIPTS;

type Client = Redis | Cluster;
type Arg = string | number;

/** Calls a script defined with defineCommand on a client or a pipeline. */
function script(c: Client, name: ScriptName, ...args: Arg[]): Promise<unknown>;
function script(c: ChainableCommander, name: ScriptName, ...args: Arg[]): ChainableCommander;
function script(c: Client | ChainableCommander, name: ScriptName, ...args: Arg[]): unknown {
  const fn = (c as unknown as Record<string, ((...a: Arg[]) => unknown) | undefined>)[name];
  if (!fn) throw new StoreError('invalid', `state: script ${name} is not defined on this client`);
  return fn.apply(c, args);
}

/** Redis replies that mean "not now" rather than "never": treated like an unreachable server. */
const TRANSIENT_REPLY = /^(READONLY|LOADING|CLUSTERDOWN|MASTERDOWN|TRYAGAIN|BUSY|NOREPLICAS|MISCONF)/;

function backoff(times: number): number {
  return Math.min(50 * 2 ** Math.min(times, 10), MAX_BACKOFF_MS);
}

function errMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class RedisStore implements StateStore {
  readonly backend = 'redis' as const;
  private readonly keys: StoreKeys;
  private readonly target: RedisTarget;
  private readonly where: string;
  private readonly rules: ReduceRules;
  private readonly clock: () => number;
  private readonly log: (level: 'info' | 'warn' | 'error', msg: string) => void;
  private readonly waitReplicas: number;
  private readonly waitTimeoutMs: number;
  private readonly pollMs: number;
  private readonly startTimeoutMs: number;
  private readonly commandTimeoutMs: number;

  private client: Client | null = null;
  private sub: Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private polling = false;

  private connected = false;
  private stale = true;
  private everConnected = false;
  private downSince: number | null = null;
  private lastError = '';
  private skewMs = 0;
  private lastRevision = 0;
  /** Why the stored data cannot be used by this build (another store format), or null. */
  private formatProblem: string | null = null;
  /** The newest revision handed to listeners (0 = none yet). */
  private delivered = 0;
  private readonly onLoss: 'hold' | 'accept';
  /** The store's epoch this node saw last (null before start). */
  private seenEpoch: string | null = null;
  /** What the last poll read besides the revision: the epoch, the format and the confirmation keys. */
  private read: { epoch: string | null; format: string | null; confirmed: string | null } = { epoch: null, format: null, confirmed: null };
  /** The data loss not yet confirmed (revisions are not handed to listeners meanwhile). */
  private loss: StoreLoss | null = null;
  /** The `store.loss` audit entry still has to be written (the store answered, the write did not). */
  private lossAuditPending = false;
  private lossAuditing: Promise<void> | null = null;
  private losses = 0;
  private readonly listeners = new Set<(rev: number) => void>();

  constructor(private readonly o: RedisStoreOptions) {
    this.target = parseRedisUrl(o.url);
    try {
      this.keys = storeKeys(o.prefix);
    } catch (e) {
      throw new StoreError('invalid', errMessage(e));
    }
    this.where = redactUrl(o.url);
    this.rules = o.rules ?? DEFAULT_RULES;
    this.clock = o.clock ?? Date.now;
    this.log = o.log ?? (() => {});
    this.onLoss = o.onLoss ?? 'hold';
    this.waitReplicas = o.waitReplicas ?? 0;
    this.waitTimeoutMs = o.waitTimeoutMs ?? 1000;
    this.pollMs = o.pollMs ?? 1000;
    this.startTimeoutMs = o.startTimeoutMs ?? 5000;
    this.commandTimeoutMs = Math.max(o.commandTimeoutMs ?? 2000, this.waitReplicas > 0 ? this.waitTimeoutMs + 1000 : 0);
    for (const [name, v] of Object.entries({ waitReplicas: this.waitReplicas, waitTimeoutMs: this.waitTimeoutMs, pollMs: this.pollMs, startTimeoutMs: this.startTimeoutMs })) {
      if (!Number.isInteger(v) || v < 0 || (name !== 'waitReplicas' && v === 0)) throw new StoreError('invalid', `state: RedisStore option ${name} must be an integer ${name === 'waitReplicas' ? '≥ 0' : '> 0'} (got ${v})`);
    }
  }

  // --- connections ----------------------------------------------------------------------

  private makeClient(): Client {
    const t = this.target;
    const auth = { ...(t.username !== undefined ? { username: t.username } : {}), ...(t.password !== undefined ? { password: t.password } : {}) };
    // Fail static: never queue while disconnected, never resend after a reconnect.
    const perNode = {
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: this.commandTimeoutMs,
      connectTimeout: Math.min(2000, this.startTimeoutMs),
      // After a failover the old primary answers READONLY: reconnect to find the new one.
      reconnectOnError: (err: Error) => (/^READONLY/.test(err.message) ? (1 as const) : false),
      ...(t.tls ? { tls: {} } : {}),
      ...auth,
    };
    if (t.mode === 'cluster') {
      const opts: ClusterOptions = {
        lazyConnect: true,
        enableOfflineQueue: false,
        clusterRetryStrategy: (times) => backoff(times),
        slotsRefreshTimeout: 2000,
        redisOptions: perNode,
      };
      return new Cluster(t.nodes, opts);
    }
    const common: RedisOptions = { ...perNode, lazyConnect: true, enableOfflineQueue: false };
    const retry = { retryStrategy: (times: number) => backoff(times) };
    if (t.mode === 'sentinel') {
      return new Redis({
        ...common,
        ...retry,
        sentinels: t.sentinels,
        name: t.name,
        db: t.db,
        sentinelRetryStrategy: (times: number) => backoff(times),
        ...(t.tls ? { enableTLSForSentinelMode: true } : {}),
      });
    }
    return new Redis({ ...common, ...retry, host: t.host, port: t.port, db: t.db });
  }

  /** Connection events; a connection torn down by a failed start() is ignored from then on. */
  private attach(c: Client, role: 'main' | 'sub'): void {
    const current = () => (role === 'main' ? this.client : this.sub) === c;
    const onError = (e: unknown) => {
      if (current()) this.lastError = errMessage(e);
    };
    c.on('error', onError);
    if (c instanceof Cluster) c.on('node error', onError);
    if (role !== 'main') return;
    c.on('close', () => current() && this.markDown('connection closed'));
    c.on('end', () => current() && this.markDown('connection ended'));
    // Back: resynchronise at once rather than at the next poll.
    c.on('ready', () => {
      if (current() && this.everConnected) void this.poll();
    });
  }

  private markDown(why: string): void {
    if (this.closed) return;
    if (this.connected || this.downSince === null) {
      this.downSince = this.clock();
      if (this.everConnected) this.log('warn', `state: lost Redis at ${this.where} (${this.lastError || why}); serving from the last state, writes fail until it is back`);
    }
    this.connected = false;
    this.stale = true;
    if (!this.lastError) this.lastError = why;
  }

  private waitReady(c: Client, ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (c.status === 'ready') return resolve();
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        c.off('ready', onReady);
        reject(new Error(`no connection within ${ms} ms${this.lastError ? ` (last error: ${this.lastError})` : ''}`));
      }, ms);
      c.once('ready', onReady);
      c.connect().catch(() => {
        // Failures surface as 'error' events; ioredis keeps retrying until the timer fires.
      });
    });
  }

  /**
   * Connects, subscribes to the revision channel, reads the revision and the clock skew, and
   * starts the poll. Rejects with StoreError `unavailable` when Redis does not answer within
   * startTimeoutMs; every connection is closed again and start() may be called again later
   * (listeners registered meanwhile are kept). Not after close().
   */
  async start(): Promise<void> {
    if (this.closed) throw new StoreError('invalid', 'state: RedisStore.start() after close(): make a new store');
    if (this.client) throw new StoreError('invalid', 'state: RedisStore.start() while started or starting');
    const t0 = Date.now();
    const left = () => Math.max(1, this.startTimeoutMs - (Date.now() - t0));
    const client = this.makeClient();
    for (const [name, s] of Object.entries(SCRIPTS)) client.defineCommand(name, { lua: s.lua, ...(s.numberOfKeys !== null ? { numberOfKeys: s.numberOfKeys } : {}), ...(s.readOnly ? { readOnly: true } : {}) });
    this.client = client;
    this.attach(client, 'main');
    try {
      await this.waitReady(client, left());
      const sub = client.duplicate();
      this.sub = sub;
      this.attach(sub, 'sub');
      sub.on('message', (channel: string, message: string) => {
        if (channel !== this.keys.channel) return;
        const rev = Number(message);
        if (Number.isInteger(rev) && rev > 0) this.observe(rev, false);
      });
      await this.waitReady(sub, left());
      await sub.subscribe(this.keys.channel);
      // A deployment without a format key is new, or from before formats (format 1): it is ours.
      await client.set(this.keys.format, String(STORE_FORMAT), 'NX');
      await client.set(this.keys.epoch, String(this.clock()), 'NX');
      await this.readRevisionAndClock();
      this.seenEpoch = this.read.epoch;
    } catch (e) {
      const msg = errMessage(e);
      await this.teardown();
      throw new StoreError('unavailable', `state: Redis at ${this.where} is unreachable: ${msg}; gave up starting after ${this.startTimeoutMs} ms (check the URL, the network and that Redis runs)`);
    }
    if (this.formatProblem) {
      const why = this.formatProblem;
      await this.teardown();
      this.formatProblem = null;
      throw new StoreError('invalid', why);
    }
    this.everConnected = true;
    this.connected = true;
    this.stale = false;
    this.downSince = null;
    this.delivered = Math.max(this.delivered, this.lastRevision);
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
  }

  /** Quits every connection and stops the poll; listeners are dropped. Never rejects. */
  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    await this.teardown();
  }

  /** Stops the poll and quits both connections (bounded: 1 s for QUIT, then disconnect). */
  private async teardown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const [client, sub] = [this.client, this.sub];
    this.client = null;
    this.sub = null;
    const quit = async (c: Client | null) => {
      if (!c) return;
      try {
        if (c.status === 'ready') {
          await Promise.race([c.quit(), new Promise((r) => setTimeout(r, 1000).unref())]);
        }
      } catch {
        // already gone
      } finally {
        c.disconnect();
      }
    };
    await Promise.all([quit(sub), quit(client)]);
    this.connected = false;
    this.stale = true;
  }

  /**
   * One round trip: TIME, the revision and the store format; updates skew, lastRevision and
   * formatProblem. Throws on failure.
   */
  private async readRevisionAndClock(): Promise<number> {
    const c = this.connectedClient();
    const t0 = this.clock();
    const out = await c.pipeline().time().get(this.keys.rev).get(this.keys.format).get(this.keys.epoch).get(this.keys.lossConfirmed).exec();
    const t1 = this.clock();
    if (!out) throw new Error('pipeline aborted');
    for (const [err] of out) if (err) throw err;
    this.read = { format: out[2]![1] as string | null, epoch: out[3]![1] as string | null, confirmed: out[4]![1] as string | null };
    this.formatProblem = formatProblem(this.read.format, this.where, this.keys);
    const time = out[0]![1] as [string, string];
    const rev = Number(out[1]![1] ?? 0);
    this.skewMs = Math.round(Number(time[0]) * 1000 + Number(time[1]) / 1000 - (t0 + t1) / 2);
    this.lastRevision = rev;
    return rev;
  }

  /** The poll (every pollMs, and at once when the connection is back). Never throws. */
  private async poll(): Promise<void> {
    if (this.polling || this.closed || !this.client) return;
    this.polling = true;
    try {
      // What this node had been handed before the read was sent: a revision delivered while
      // the read is on its way (pub/sub on the other connection, a write's reply) may be newer
      // than the one the read saw, and is no sign of loss.
      const deliveredBefore = this.delivered;
      const rev = await this.readRevisionAndClock();
      if (this.closed) return;
      if (this.formatProblem) {
        // Another build changed what is stored: read and write nothing until it is ours again.
        if (this.lastError !== this.formatProblem) this.log('error', this.formatProblem);
        this.lastError = this.formatProblem;
        this.markDown(this.formatProblem);
        return;
      }
      const wasStale = this.stale;
      this.connected = true;
      this.lastError = '';
      const since = this.downSince;
      this.downSince = null;
      if (this.loss) {
        await this.whileLost(rev);
        return;
      }
      const lost = this.lossSeen(rev, deliveredBefore);
      if (lost) {
        await this.enterLoss(lost, rev);
        return;
      }
      this.seenEpoch = this.read.epoch ?? this.seenEpoch;
      this.stale = false;
      if (wasStale) {
        this.log('info', `state: Redis at ${this.where} is back${since !== null ? ` after ${this.clock() - since} ms` : ''}; revision ${rev}, resynchronising`);
        this.observe(rev, true);
      } else {
        this.observe(rev, false);
      }
    } catch (e) {
      this.lastError = errMessage(e);
      this.markDown(this.lastError);
    } finally {
      this.polling = false;
    }
  }

  /**
   * Whether what the poll read means the store lost data this node had seen (words), or null.
   * Only once this node has seen data (a revision above 0): an empty store stays empty.
   */
  private lossSeen(rev: number, deliveredBefore: number): string | null {
    if (this.delivered === 0) return null;
    const { epoch, format } = this.read;
    if (this.seenEpoch !== null && epoch !== this.seenEpoch) {
      return epoch === null ? `its epoch marker ${this.keys.epoch} (${this.seenEpoch}) is gone` : `its epoch marker ${this.keys.epoch} changed from ${this.seenEpoch} to ${epoch}`;
    }
    if (format === null) return `its format marker ${this.keys.format} is gone`;
    if (rev < deliveredBefore) return `its revision went back from ${deliveredBefore} to ${rev}`;
    return null;
  }

  /** A loss seen: report it loudly, mark and audit the store anew, hold (or accept). */
  private async enterLoss(why: string, rev: number): Promise<void> {
    this.loss = { detectedAt: this.clock(), seenRevision: this.delivered, revision: rev, seenEpoch: this.seenEpoch, epoch: this.read.epoch, why: `Redis at ${this.where} (prefix ${this.keys.prefix}): ${why}` };
    this.losses++;
    this.stale = true;
    this.lossAuditPending = true;
    const hold = this.onLoss === 'hold';
    this.log(
      'error',
      `state: DATA LOSS: ${this.loss.why}; overrides, the audit log and signals stored before are gone from the store (a restart without persistence, a failover to a replica behind, a flush). ` +
        (hold
          ? `This node keeps serving its plan of revision ${this.delivered} until an operator confirms: put back what was lost (gridsteer overrides), then run gridsteer store confirm-loss --reason "…" (POST /v1/store/confirm-loss)`
          : 'state.redis.onLoss is accept: planning from the store as it is now'),
    );
    await this.auditLoss();
    if (!hold) this.resume(rev, 'accepted by state.redis.onLoss: accept');
  }

  /**
   * Writes the `store.loss` audit entry (and a new epoch) if still pending. Never throws.
   * One write at a time: a caller arriving while it is on its way waits for that one.
   */
  private auditLoss(): Promise<void> {
    if (!this.lossAuditing) this.lossAuditing = this.writeLossAudit().finally(() => (this.lossAuditing = null));
    return this.lossAuditing;
  }

  /**
   * Before an audited write: the loss this node has seen is audited first, so the audit log
   * reads in the order things happened (the loss, then what operators did after it).
   */
  private async lossAuditedFirst(): Promise<void> {
    if (this.loss && this.lossAuditPending) await this.auditLoss();
  }

  private async writeLossAudit(): Promise<void> {
    const loss = this.loss;
    if (!loss || !this.lossAuditPending || !this.client) return;
    const entry = JSON.stringify({ at: loss.detectedAt, actor: 'gridsteer', action: 'store.loss', target: 'store', reason: loss.why, before: { revision: loss.seenRevision, epoch: loss.seenEpoch }, after: { revision: loss.revision } });
    try {
      await this.client.set(this.keys.format, String(STORE_FORMAT), 'NX');
      const [, epoch] = (await script(this.client, 'gsAudit', this.keys.audit, this.keys.auditseq, this.keys.epoch, entry, String(this.clock()))) as [number, string];
      loss.epoch = epoch;
      this.seenEpoch = epoch;
      this.lossAuditPending = false;
    } catch (e) {
      this.log('warn', `state: could not audit the data loss yet (${errMessage(e)}); trying again at the next poll`);
    }
  }

  /** The poll while a loss is held: audit it if still pending, follow a further reset, resume once confirmed by any node. */
  private async whileLost(rev: number): Promise<void> {
    const loss = this.loss!;
    this.stale = true;
    if (!this.lossAuditPending && this.read.epoch !== loss.epoch) {
      // Reset again before anyone confirmed: the confirmation must be of the store as it is now.
      this.losses++;
      Object.assign(loss, { revision: rev, epoch: this.read.epoch, why: `${loss.why}; then its epoch marker ${loss.epoch ?? '(none)'} ${this.read.epoch === null ? 'vanished' : `changed to ${this.read.epoch}`} again` });
      this.lossAuditPending = true;
      this.log('error', `state: DATA LOSS again: ${loss.why}; still serving the last plan until an operator confirms`);
    }
    await this.auditLoss();
    const c = this.parseConfirmation(this.read.confirmed);
    if (c && c.epoch === loss.epoch && c.revision >= loss.revision) this.resume(rev, `confirmed on another node (store revision ${c.revision})`);
  }

  private parseConfirmation(s: string | null): { epoch: string; revision: number } | null {
    if (s === null) return null;
    try {
      const v = JSON.parse(s) as { epoch?: unknown; revision?: unknown };
      return typeof v.epoch === 'string' && typeof v.revision === 'number' ? { epoch: v.epoch, revision: v.revision } : null;
    } catch {
      return null;
    }
  }

  /** Ends a held loss: plan from the store as it is now. */
  private resume(rev: number, how: string): void {
    const loss = this.loss;
    this.loss = null;
    this.lossAuditPending = false;
    this.stale = false;
    if (this.read.epoch !== null) this.seenEpoch = this.read.epoch;
    this.log('warn', `state: the data loss (${loss?.why ?? '?'}) was ${how}; planning from the store as it is now, revision ${rev}`);
    this.observe(rev, true);
  }

  async confirmLoss(actor: string, reason: string, at: number): Promise<{ loss: StoreLoss; revision: number }> {
    const loss = this.loss;
    if (!loss) throw new StoreError('not_found', `state: this node holds no data loss of Redis at ${this.where} to confirm`);
    const k = this.keys;
    const entry = JSON.stringify({ at, actor, action: 'store.loss.confirm', target: 'store', reason, before: loss, after: null });
    const { res, acked } = await this.durableWrite('confirmLoss', 'gsConfirmLoss', [k.audit, k.auditseq, k.epoch, k.lossConfirmed, k.rev, entry, String(this.clock()), k.channel]);
    const [revRaw, epoch] = res as [number, string];
    const revision = Number(revRaw);
    this.checkAcked(acked, 'the confirmation of the data loss');
    if (this.loss === loss) {
      this.read = { ...this.read, epoch };
      this.resume(revision, `confirmed by ${actor} (${reason})`);
    }
    return { loss, revision };
  }

  /** Hands `rev` to listeners if it is newer than the last delivered one (or `force`); nothing while a data loss is held. */
  private observe(rev: number, force: boolean): void {
    if (this.closed) return;
    if (rev > this.lastRevision) this.lastRevision = rev;
    if (this.loss) return;
    if (!force && rev <= this.delivered) return;
    this.delivered = rev;
    for (const l of [...this.listeners]) {
      try {
        l(rev);
      } catch (e) {
        this.log('error', `state: a revision listener failed: ${errMessage(e)}`);
      }
    }
  }

  status(): StoreStatus {
    const head = `redis ${this.where} (${this.target.mode}, prefix ${this.keys.prefix})`;
    let detail: string;
    if (this.closed) detail = `${head}: closed`;
    else if (!this.everConnected) detail = `${head}: not connected yet${this.lastError ? ` (${this.lastError})` : ''}`;
    else if (!this.connected) {
      detail = `${head}: unreachable since ${new Date(this.downSince ?? this.clock()).toISOString()}${this.lastError ? ` (${this.lastError})` : ''}; serving from revision ${this.delivered}`;
    } else if (this.loss) {
      detail = `${head}: DATA LOSS seen ${new Date(this.loss.detectedAt).toISOString()}: ${this.loss.why}; serving the plan of revision ${this.delivered} until an operator confirms (gridsteer store confirm-loss)`;
    } else detail = `${head}: revision ${this.lastRevision}${this.stale ? ', resynchronising' : ''}, clock skew ${this.skewMs} ms`;
    return { backend: 'redis', connected: this.connected, stale: this.stale, clockSkewMs: this.skewMs, detail, loss: this.loss ? { ...this.loss } : null, losses: this.losses };
  }

  onRevision(listener: (revision: number) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  // --- helpers --------------------------------------------------------------------------

  /** The main client, or StoreError `unavailable` when not started, closed, disconnected or in another store format. */
  private ready(): Client {
    const c = this.connectedClient();
    if (this.formatProblem) throw new StoreError('unavailable', this.formatProblem);
    return c;
  }

  /** ready() without the store format check: for the poll, which reads the format. */
  private connectedClient(): Client {
    if (this.closed || !this.client) throw new StoreError('unavailable', `state: the Redis store (${this.where}) is ${this.closed ? 'closed' : 'not started'}`);
    if (this.client.status !== 'ready') {
      throw new StoreError('unavailable', `state: Redis at ${this.where} is unreachable: ${this.lastError || `connection ${this.client.status}`}`);
    }
    return this.client;
  }

  /** Turns any failure of a Redis call into a StoreError (never returns). */
  private fail(op: string, e: unknown): never {
    if (e instanceof StoreError) throw e;
    const msg = errMessage(e);
    const isReply = e instanceof Error && e.name === 'ReplyError';
    if (isReply && !TRANSIENT_REPLY.test(msg)) throw new StoreError('unavailable', `state: Redis at ${this.where} refused ${op}: ${msg}`);
    throw new StoreError('unavailable', `state: Redis at ${this.where} is unreachable: ${msg} (${op})`);
  }

  private async call<T>(op: string, f: (c: Client) => Promise<T>): Promise<T> {
    const c = this.ready();
    try {
      return await f(c);
    } catch (e) {
      this.fail(op, e);
    }
  }

  /** Runs a pipeline; returns the replies, throwing the first command's error. */
  private async pipe(op: string, build: (p: ChainableCommander) => void): Promise<unknown[]> {
    const out = await this.pipeReplies(op, build);
    const first = out.find(([err]) => err);
    if (first?.[0]) this.fail(op, first[0]);
    return out.map(([, v]) => v);
  }

  /** Runs a pipeline; returns each command's error or reply (throwing only when the pipeline itself failed). */
  private async pipeReplies(op: string, build: (p: ChainableCommander) => void): Promise<[Error | null, unknown][]> {
    const c = this.ready();
    let out: [Error | null, unknown][] | null;
    try {
      const p = c.pipeline();
      build(p);
      out = await p.exec();
    } catch (e) {
      this.fail(op, e);
    }
    if (!out) this.fail(op, new Error('pipeline aborted'));
    return out;
  }

  private parse<T>(json: string, what: string): T {
    try {
      return JSON.parse(json) as T;
    } catch (e) {
      throw new StoreError('invalid', `state: Redis at ${this.where}: ${what} is not valid JSON (${errMessage(e)}); it was not written by GridSteer of this version`);
    }
  }

  private leaseKey(name: string): string {
    try {
      return this.keys.lease(name);
    } catch (e) {
      throw new StoreError('invalid', errMessage(e));
    }
  }

  private fencedError(fence: { lease: string; token: number }, token: string, holder: string): StoreError {
    return new StoreError('fenced', `state: lease ${fence.lease} token ${fence.token} is not current${token ? ` (current token ${token}, held by ${holder})` : ' (no one holds it)'}: the write is refused`);
  }

  // --- the StateStore -------------------------------------------------------------------


  async revision(): Promise<number> {
    const v = await this.call('revision', (c) => c.get(this.keys.rev));
    return Number(v ?? 0);
  }

  async snapshot(): Promise<StoreSnapshot> {
    const k = this.keys;
    const out = (await this.call('snapshot', (c) => script(c, 'gsSnapshot', k.rev, k.sig, k.ov, k.demand, k.quarantine))) as [number, string[], string[], string[], string[]?];
    const [revision, sigFlat, ovFlat, demandFlat, qFlat = []] = out;
    const pairs = (flat: string[]) => {
      const r: [string, string][] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) r.push([flat[i]!, flat[i + 1]!]);
      return r.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    };
    // A stored value this build cannot read (not JSON, or not a record's shape: written by hand,
    // by another program or torn) is never planned and never stops the read: it is handed on as
    // unreadable, and the node quarantines it (ADR 0020).
    const unreadable: UnreadableRecord[] = [];
    const readable = <T>(target: string, v: string, shape: (x: unknown) => string | null): T | null => {
      let x: unknown;
      try {
        x = JSON.parse(v);
      } catch (e) {
        unreadable.push({ target, raw: v.slice(0, 4096), why: `not valid JSON (${errMessage(e)})` });
        return null;
      }
      const problem = shape(x);
      if (problem) {
        unreadable.push({ target, raw: v.slice(0, 4096), why: problem });
        return null;
      }
      return x as T;
    };
    const records = pairs(sigFlat).flatMap(([id, v]) => readable<SignalRecord>(`signal:${id}`, v, (x) => recordShapeProblem(x, id)) ?? []);
    const overrides = pairs(ovFlat).flatMap(([id, v]) => readable<Override>(`override:${id}`, v, (x) => overrideShapeProblem(x, id)) ?? []);
    const demand: DemandBucket[] = [];
    for (const [field, v] of pairs(demandFlat)) {
      const d = parseDemandField(field);
      const queries = Number(v);
      if (d && Number.isFinite(queries) && queries >= 0) demand.push({ ...d, queries });
      else unreadable.push({ target: `demand:${field}`, raw: v.slice(0, 4096), why: d ? `the count ${JSON.stringify(v.slice(0, 40))} is not a finite number ≥ 0` : 'the field is not <bucket>|<home>|<name>' });
    }
    const quarantine = pairs(qFlat).flatMap(([target, v]) => {
      try {
        const e = JSON.parse(v) as QuarantineEntry;
        return typeof e === 'object' && e !== null && typeof e.fingerprint === 'string' ? [{ ...e, target }] : [];
      } catch {
        // An entry this build cannot read holds nothing; the next quarantine write of that target replaces it.
        return [];
      }
    });
    if (revision > this.lastRevision) this.lastRevision = revision;
    return { revision: Number(revision), records, overrides, demand, ...(quarantine.length > 0 ? { quarantine } : {}), ...(unreadable.length > 0 ? { unreadable } : {}) };
  }

  async quarantine(entries: readonly QuarantineEntry[]): Promise<{ added: number; revision: number }> {
    const k = this.keys;
    if (entries.length === 0) return { added: 0, revision: await this.revision() };
    const args = entries.flatMap((e) => [e.target, e.fingerprint, JSON.stringify(e), JSON.stringify({ at: e.at, actor: e.by, action: 'quarantine.add', target: e.target, reason: e.why })]);
    const { res: raw, acked } = await this.durableWrite('quarantine', 'gsQuarantine', [k.quarantine, k.audit, k.auditseq, k.rev, k.epoch, k.channel, String(this.clock()), ...args]);
    const res = raw as [number, number];
    const revision = Number(res[1]);
    if (Number(res[0]) > 0) this.observe(revision, false);
    this.checkAcked(acked, `the quarantine of ${entries.map((e) => e.target).join(', ')}`);
    return { added: Number(res[0]), revision };
  }

  async releaseQuarantine(target: string, actor: string, reason: string, at: number): Promise<{ entry: QuarantineEntry; revision: number }> {
    return this.endQuarantine('release', target, actor, reason, at);
  }

  async dropQuarantined(target: string, actor: string, reason: string, at: number): Promise<{ entry: QuarantineEntry; revision: number }> {
    return this.endQuarantine('drop', target, actor, reason, at);
  }

  private async endQuarantine(how: 'release' | 'drop', target: string, actor: string, reason: string, at: number): Promise<{ entry: QuarantineEntry; revision: number }> {
    const k = this.keys;
    const colon = target.indexOf(':');
    const type = target.slice(0, colon);
    const field = target.slice(colon + 1);
    const hash = how === 'release' ? k.quarantine : type === 'signal' ? k.sig : type === 'override' ? k.ov : type === 'demand' ? k.demand : null;
    if (hash === null) throw new StoreError('not_found', `state: nothing quarantined as ${target} (a target is signal:<id>, override:<id> or demand:<bucket>|<home>|<name>)`);
    const audit = JSON.stringify({ at, actor, action: `quarantine.${how}`, target, reason, after: null });
    const { res: raw, acked } = await this.durableWrite(`quarantine ${how}`, 'gsQuarantineEnd', [k.quarantine, k.audit, k.auditseq, k.rev, k.epoch, hash, k.demandIndex, target, how === 'drop' ? field : '', audit, k.channel, String(this.clock())]);
    const res = raw as [string, number?, string?];
    if (res[0] === 'not_found') throw new StoreError('not_found', `state: nothing quarantined as ${target}`);
    const revision = Number(res[1]);
    let entry: QuarantineEntry;
    try {
      entry = { ...(JSON.parse(res[2]!) as QuarantineEntry), target };
    } catch {
      entry = { target, fingerprint: '', why: 'an entry this build could not read', at, by: actor };
    }
    this.observe(revision, false);
    this.checkAcked(acked, `the ${how} of ${target}`);
    return { entry, revision };
  }

  async removeSignals(items: readonly { id: string; observedAt: number }[]): Promise<{ removed: number; revision: number }> {
    const k = this.keys;
    if (items.length === 0) return { removed: 0, revision: await this.revision() };
    const args = [k.channel, ...items.flatMap((x) => [x.id, String(x.observedAt)])];
    const res = (await this.call('removeSignals', (c) => script(c, 'gsRemoveSignals', k.sig, k.rev, ...args))) as [number, number | string];
    const revision = Number(res[1]);
    if (Number(res[0]) > 0) this.observe(revision, false);
    return { removed: Number(res[0]), revision };
  }

  async putSignal(signal: Signal, fence?: { lease: string; token: number }, by?: Provenance): Promise<PutResult> {
    const k = this.keys;
    const id = signalId(signal);
    const leaseKey = fence ? this.leaseKey(fence.lease) : null;
    for (let attempt = 1; attempt <= MAX_CAS_ATTEMPTS; attempt++) {
      const [prevJson, revNow, lease] = await this.pipe('putSignal', (p) => {
        p.hget(k.sig, id).get(k.rev);
        if (leaseKey) p.hmget(leaseKey, 'token', 'holder');
      });
      const prev = typeof prevJson === 'string' ? this.parse<SignalRecord>(prevJson, `signal record ${id}`) : undefined;
      const holder = heldAgainst(prev, signal, by);
      const next = holder === null ? reduce(prev, structuredClone(signal), this.rules, by) : null;
      if (!next) {
        // Refused as stale; a deposed poller still learns that it is fenced.
        if (fence) {
          const [tok, holder] = (lease ?? [null, null]) as [string | null, string | null];
          if (tok !== String(fence.token)) throw this.fencedError(fence, tok ?? '', holder ?? '');
        }
        return holder === null ? { stored: false, revision: Number(revNow ?? 0), reason: 'stale' } : { stored: false, revision: Number(revNow ?? 0), reason: 'held', holder };
      }
      const keys = leaseKey ? [k.sig, k.rev, leaseKey] : [k.sig, k.rev];
      const args = [id, prev ? String(prev.signal.observedAt) : '', JSON.stringify(next), k.channel, fence ? String(fence.token) : ''];
      const res = (await this.call('putSignal', (c) => script(c, 'gsPutSignal', keys.length, ...keys, ...args))) as [string, number | string, string?];
      if (res[0] === 'ok') {
        const revision = Number(res[1]);
        this.observe(revision, false);
        return { stored: true, revision, record: next };
      }
      if (res[0] === 'fenced') throw this.fencedError(fence!, String(res[1] ?? ''), String(res[2] ?? ''));
      // 'conflict': another node stored this id meanwhile; fold again onto its record.
    }
    throw new StoreError('conflict', `state: signal ${id} changed under ${MAX_CAS_ATTEMPTS} attempts in a row (other writers); not stored, send it again`);
  }

  /**
   * putSignal's two round trips for a whole batch, in rounds: a round takes the first
   * occurrence of each id not yet written (a repeated id waits for the next round, where it
   * folds onto what this one stored), reads their records, the revision and the lease in one
   * pipeline, folds each in memory and sends one gsPutSignal per changed record in a second
   * pipeline. A signal whose record another node wrote between the two ('conflict') goes
   * into the next round, ahead of any later signal of its id, and is folded again onto that
   * record (at most MAX_CAS_ATTEMPTS times, as putSignal). The script and its compare-and-set
   * are putSignal's: nothing a batch writes differs from what a loop writes.
   */
  async putSignals(items: readonly PutItem[], fence?: { lease: string; token: number }): Promise<PutResult[]> {
    const ids = items.map((x) => signalId(x.signal));
    const out: (PutResult | undefined)[] = new Array<PutResult | undefined>(items.length);
    const attempts = new Array<number>(items.length).fill(0);
    let todo = items.map((_, i) => i);
    while (todo.length > 0) {
      const inRound = new Set<string>();
      const round: number[] = [];
      const later: number[] = [];
      for (const i of todo) {
        if (inRound.has(ids[i]!)) later.push(i);
        else {
          inRound.add(ids[i]!);
          round.push(i);
        }
      }
      const again = await this.putRound(items, ids, round, fence, out);
      for (const i of again) {
        if (++attempts[i]! >= MAX_CAS_ATTEMPTS) throw new StoreError('conflict', `state: signal ${ids[i]!} changed under ${MAX_CAS_ATTEMPTS} attempts in a row (other writers); not stored, send it again`);
      }
      todo = [...again, ...later].sort((a, b) => a - b);
    }
    // A loop's stale or held answer reads the revision after every earlier write of the batch.
    let seen = 0;
    return out.map((r) => {
      if (!r) throw new StoreError('invalid', 'state: putSignals left a signal without an answer (a bug)');
      if (r.stored) seen = Math.max(seen, r.revision);
      else if (r.revision < seen) return { ...r, revision: seen };
      return r;
    });
  }

  /** One round of putSignals: `round` indexes items of distinct ids; answers go to `out`; returns the indexes that met a conflict. */
  private async putRound(items: readonly PutItem[], ids: readonly string[], round: readonly number[], fence: { lease: string; token: number } | undefined, out: (PutResult | undefined)[]): Promise<number[]> {
    const k = this.keys;
    const leaseKey = fence ? this.leaseKey(fence.lease) : null;
    const [prevJsons, revNow, lease] = (await this.pipe('putSignals', (p) => {
      p.hmget(k.sig, ...round.map((i) => ids[i]!)).get(k.rev);
      if (leaseKey) p.hmget(leaseKey, 'token', 'holder');
    })) as [(string | null)[], string | null, (string | null)[]?];
    // A deposed poller learns it before anything is folded; a loop would be refused at its first signal.
    if (fence) {
      const [tok, holder] = lease ?? [null, null];
      if (tok !== String(fence.token)) throw this.fencedError(fence, tok ?? '', holder ?? '');
    }
    const revision = Number(revNow ?? 0);
    const writes: { i: number; next: SignalRecord; prevAt: string }[] = [];
    round.forEach((i, n) => {
      const { signal, by } = items[i]!;
      const prevJson = prevJsons[n];
      const prev = typeof prevJson === 'string' ? this.parse<SignalRecord>(prevJson, `signal record ${ids[i]!}`) : undefined;
      const holder = heldAgainst(prev, signal, by);
      const next = holder === null ? reduce(prev, structuredClone(signal), this.rules, by) : null;
      if (next) writes.push({ i, next, prevAt: prev ? String(prev.signal.observedAt) : '' });
      else out[i] = holder === null ? { stored: false, revision, reason: 'stale' } : { stored: false, revision, reason: 'held', holder };
    });
    if (writes.length === 0) return [];
    const keys = leaseKey ? [k.sig, k.rev, leaseKey] : [k.sig, k.rev];
    const token = fence ? String(fence.token) : '';
    const replies = await this.pipeReplies('putSignals', (p) => {
      for (const w of writes) script(p, 'gsPutSignal', keys.length, ...keys, ids[w.i]!, w.prevAt, JSON.stringify(w.next), k.channel, token);
    });
    let failed: Error | null = null;
    let fenced: StoreError | null = null;
    const again: number[] = [];
    replies.forEach(([err, reply], n) => {
      const w = writes[n]!;
      const res = reply as [string, number | string, string?];
      if (err) failed ??= err;
      else if (res[0] === 'ok') {
        const rev = Number(res[1]);
        this.observe(rev, false);
        out[w.i] = { stored: true, revision: rev, record: w.next };
      } else if (res[0] === 'fenced') fenced ??= this.fencedError(fence!, String(res[1] ?? ''), String(res[2] ?? ''));
      else again.push(w.i);
    });
    if (failed) this.fail('putSignals', failed);
    if (fenced) throw fenced;
    // 'conflict': another node stored this id since the read; the next round folds it onto that record.
    return again;
  }

  /**
   * Runs an override script and, when configured, WAIT on the same connection (a pipeline
   * goes to one node, in a Cluster too). Rejects `unavailable` when fewer replicas acked.
   */
  private async durableWrite(op: string, name: ScriptName, args: Arg[]): Promise<{ res: unknown; acked: number | null }> {
    await this.lossAuditedFirst();
    // The script may write only while this call still waits for it: its deadline is the
    // command timeout (less the WAIT's share) from now, in Redis's clock, less a margin for the
    // skew's drift since it was measured. A later arrival answers 'late' and writes nothing.
    const budget = this.commandTimeoutMs - (this.waitReplicas > 0 ? this.waitTimeoutMs : 0);
    const deadline = this.clock() + this.skewMs + budget - DEADLINE_MARGIN_MS;
    const out = await this.pipe(op, (p) => {
      script(p, name, ...args, deadline);
      if (this.waitReplicas > 0) p.wait(this.waitReplicas, this.waitTimeoutMs);
    });
    const res = out[0];
    if (Array.isArray(res) && res[0] === 'late') {
      throw new StoreError('unavailable', `state: Redis at ${this.where} received ${op} ${Number(res[1])} ms after this node had given up on it (a slow or cut connection): nothing was written`);
    }
    return { res, acked: this.waitReplicas > 0 ? Number(out[1]) : null };
  }

  private checkAcked(acked: number | null, what: string): void {
    if (acked === null || acked >= this.waitReplicas) return;
    throw new StoreError(
      'unavailable',
      `state: ${what} was written on the Redis primary at ${this.where} but only ${acked} of ${this.waitReplicas} replica(s) acknowledged it within ${this.waitTimeoutMs} ms: not durable; check the audit log before trying again`,
    );
  }

  async createOverride(o: Omit<Override, 'id'>, at: number): Promise<{ override: Override; revision: number }> {
    const k = this.keys;
    const { id: _ignored, ...rest } = o as Override;
    const body = JSON.stringify(rest);
    if (body === '{}') throw new StoreError('invalid', 'state: an override needs region, action, actor and reason');
    const audit = JSON.stringify({ at, actor: o.actor, action: 'override.create', reason: o.reason, before: null });
    const { res: raw, acked } = await this.durableWrite('createOverride', 'gsCreateOverride', [k.ov, k.ovseq, k.audit, k.auditseq, k.rev, k.epoch, body, audit, k.channel, String(this.clock())]);
    const res = raw as [number, string, string];
    const revision = Number(res[0]);
    const override = this.parse<Override>(res[2], `override ${res[1]}`);
    this.observe(revision, false);
    this.checkAcked(acked, `override ${override.id}`);
    return { override, revision };
  }

  async endOverride(id: string, actor: string, reason: string, at: number): Promise<{ override: Override; revision: number }> {
    const k = this.keys;
    const audit = JSON.stringify({ at, actor, action: 'override.end', target: id, reason, after: null });
    const { res: raw, acked } = await this.durableWrite('endOverride', 'gsEndOverride', [k.ov, k.audit, k.auditseq, k.rev, k.epoch, id, audit, k.channel, String(this.clock())]);
    const res = raw as [string, number?, string?];
    if (res[0] === 'not_found') throw new StoreError('not_found', `state: no live override ${id}`);
    const revision = Number(res[1]);
    const override = this.parse<Override>(res[2]!, `override ${id}`);
    this.observe(revision, false);
    this.checkAcked(acked, `the end of override ${id}`);
    return { override, revision };
  }

  async appendAudit(entry: Omit<AuditEntry, 'seq'>): Promise<AuditEntry> {
    const k = this.keys;
    const body = JSON.stringify(entry);
    await this.lossAuditedFirst();
    const [seq] = (await this.call('appendAudit', (c) => script(c, 'gsAudit', k.audit, k.auditseq, k.epoch, body, String(this.clock())))) as [number, string];
    return { ...entry, seq: Number(seq) };
  }

  async trimAudit(before: number): Promise<{ removed: number }> {
    const n = (await this.call('trimAudit', (c) => script(c, 'gsTrimAudit', this.keys.audit, String(before)))) as number;
    return { removed: Number(n) };
  }

  async audit(limit: number): Promise<AuditEntry[]> {
    const n = Math.floor(limit);
    if (!(n > 0)) return [];
    const items = await this.call('audit', (c) => c.lrange(this.keys.audit, 0, n - 1));
    return items.map((s, i) => this.parse<AuditEntry>(s, `audit entry ${i}`));
  }

  async addDemand(buckets: DemandBucket[]): Promise<void> {
    if (buckets.length === 0) return;
    const args: Arg[] = [DEMAND_KEEP_MS];
    for (const b of buckets) {
      if (!Number.isFinite(b.queries) || !Number.isFinite(b.bucket)) throw new StoreError('invalid', `state: demand bucket ${b.bucket} ${b.home} ${b.name}: queries and bucket must be finite numbers`);
      args.push(b.bucket, demandField(b.bucket, b.home, b.name), b.queries);
    }
    await this.call('addDemand', (c) => script(c, 'gsAddDemand', this.keys.demand, this.keys.demandIndex, ...args));
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null> {
    const key = this.leaseKey(name);
    if (!(ttlMs > 0)) throw new StoreError('invalid', `state: lease ${name}: ttlMs must be > 0 (got ${ttlMs})`);
    const res = (await this.call('acquireLease', (c) => script(c, 'gsAcquireLease', key, this.keys.leaseTokens, holder, Math.ceil(ttlMs)))) as [string, number | string, number];
    if (res[0] !== 'ok') return null;
    return { name, holder, token: Number(res[1]), until: Number(res[2]) };
  }

  async releaseLease(name: string, holder: string, token: number): Promise<void> {
    const key = this.leaseKey(name);
    await this.call('releaseLease', (c) => script(c, 'gsReleaseLease', key, holder, String(token)));
  }

  async time(): Promise<number> {
    const [s, us] = await this.call('time', (c) => c.time());
    return Math.floor(Number(s) * 1000 + Number(us) / 1000);
  }
}
