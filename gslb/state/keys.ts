/**
 * Redis key names of the state store: the only place they are built
 * (docs/conventions.md "One store interface, one conformance suite").
 *
 * Every key carries the same hash tag `{<prefix>}`, so every key of one deployment lives in
 * one Cluster slot and the multi-key Lua scripts of redis-store.ts run unchanged on a
 * standalone server, behind Sentinel and in a Cluster. Two deployments sharing one Redis use
 * two prefixes. No key has a TTL that means anything (docs/design.md "Many nodes").
 *
 * Layout (prefix `gridsteer`):
 *
 * | key                          | type   | holds                                                    |
 * | ---------------------------- | ------ | -------------------------------------------------------- |
 * | `gs:{gridsteer}:format`      | string | the store format of every key below (STORE_FORMAT)       |
 * | `gs:{gridsteer}:epoch`       | string | when this store's data began (ms epoch, decimal; SET NX) |
 * | `gs:{gridsteer}:lossok`      | string | JSON {epoch, revision}: the last data loss an operator confirmed |
 * | `gs:{gridsteer}:rev`         | string | the store revision (INCR by every write script)          |
 * | `gs:{gridsteer}:sig`         | hash   | signal id → JSON SignalRecord                            |
 * | `gs:{gridsteer}:ov`          | hash   | override id → JSON Override (live overrides only)        |
 * | `gs:{gridsteer}:ovseq`       | string | the last override number n (ids `ov-<epoch base 36>-<n>`) |
 * | `gs:{gridsteer}:audit`       | list   | JSON AuditEntry, newest at the head (LPUSH)              |
 * | `gs:{gridsteer}:auditseq`    | string | the last audit seq (a new store starts it at its epoch)  |
 * | `gs:{gridsteer}:demand`      | hash   | `<bucket>\|<home>\|<name>` → queries (all nodes summed)  |
 * | `gs:{gridsteer}:demandidx`   | zset   | the same fields scored by bucket (ms), for pruning       |
 * | `gs:{gridsteer}:quarantine`  | hash   | target → JSON QuarantineEntry (ADR 0020; format 1 adds it: older builds never read it) |
 * | `gs:{gridsteer}:lease:<n>`   | hash   | holder, token, until (ms epoch, Redis TIME)              |
 * | `gs:{gridsteer}:leasetok`    | string | the last fencing token issued (all leases share it)      |
 * | `gs:{gridsteer}:revision`    | channel| pub/sub: the new revision, published by write scripts    |
 *
 * The epoch makes ids unique across store resets: a Redis restarted without persistence
 * comes back empty, its epoch is set anew (a later instant), override ids carry it and audit
 * seqs of the new store start above it, so no id or seq of the lost data is ever given again
 * (a seq could only repeat if the lost store had written more audit entries than ms elapsed
 * between the two epochs). A node that sees the epoch vanish or change, or the revision go
 * back, reports data loss (redis-store.ts).
 *
 * Changing this layout, or what a record holds, is a wire-format change between nodes of
 * different versions: it takes a new STORE_FORMAT (redis-store.ts), which nodes of older
 * builds then refuse to read or write.
 */

/** The prefix when none is configured. */
export const DEFAULT_PREFIX = 'gridsteer';

const PREFIX_RE = /^[A-Za-z0-9._-]{1,64}$/;

/** The key names of one deployment (one prefix). Pure; never talks to Redis. */
export interface StoreKeys {
  readonly prefix: string;
  /** The store format of this deployment's keys and records (redis-store.ts STORE_FORMAT). */
  readonly format: string;
  readonly rev: string;
  /** When this store's data began (ms epoch, decimal): the epoch part of ids. */
  readonly epoch: string;
  /** The last data loss an operator confirmed: JSON {epoch, revision}. */
  readonly lossConfirmed: string;
  readonly sig: string;
  readonly ov: string;
  readonly ovseq: string;
  readonly audit: string;
  readonly auditseq: string;
  readonly demand: string;
  readonly demandIndex: string;
  /** Records held out of planning (ADR 0020): target → JSON QuarantineEntry. */
  readonly quarantine: string;
  readonly leaseTokens: string;
  /** The pub/sub channel carrying new revisions (a channel, not a key; tagged all the same). */
  readonly channel: string;
  /** The hash of lease `name` (any non-empty name: only the first `{…}` of a key is its tag). */
  lease(name: string): string;
}

/**
 * Builds the key names for `prefix` (default `gridsteer`). Throws an Error starting with
 * `state:` when the prefix could break the hash tag (braces) or is empty or too long.
 */
export function storeKeys(prefix: string = DEFAULT_PREFIX): StoreKeys {
  if (!PREFIX_RE.test(prefix)) {
    throw new Error(`state: Redis key prefix ${JSON.stringify(prefix)} is invalid: use 1–64 characters of A–Z a–z 0–9 . _ - (it becomes the hash tag {${prefix}})`);
  }
  const base = `gs:{${prefix}}:`;
  return Object.freeze({
    prefix,
    format: `${base}format`,
    rev: `${base}rev`,
    epoch: `${base}epoch`,
    lossConfirmed: `${base}lossok`,
    sig: `${base}sig`,
    ov: `${base}ov`,
    ovseq: `${base}ovseq`,
    audit: `${base}audit`,
    auditseq: `${base}auditseq`,
    demand: `${base}demand`,
    demandIndex: `${base}demandidx`,
    quarantine: `${base}quarantine`,
    leaseTokens: `${base}leasetok`,
    channel: `${base}revision`,
    lease(name: string): string {
      if (name === '') throw new Error('state: a lease name must not be empty');
      return `${base}lease:${name}`;
    },
  });
}

/** The demand hash field of one (bucket, home, name); also the sort key of snapshot().demand. */
export function demandField(bucket: number, home: string, name: string): string {
  return `${bucket}|${home}|${name}`;
}

/** The inverse of demandField (the name may itself contain `|`); null when malformed. */
export function parseDemandField(field: string): { bucket: number; home: string; name: string } | null {
  const a = field.indexOf('|');
  const b = a < 0 ? -1 : field.indexOf('|', a + 1);
  if (a < 0 || b < 0) return null;
  const bucket = Number(field.slice(0, a));
  if (!Number.isFinite(bucket)) return null;
  return { bucket, home: field.slice(a + 1, b), name: field.slice(b + 1) };
}
