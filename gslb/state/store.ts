/**
 * The state store: where signals, operator overrides, the audit log, demand buckets and
 * poller leases live. One interface, two implementations (memory-store.ts, the default,
 * with an append-only file; redis-store.ts for many nodes), one conformance suite
 * (test/helpers/store-conformance.ts) run against both.
 *
 * Contracts every implementation keeps:
 * - Every successful write bumps the **revision** (a positive integer, strictly increasing,
 *   never reused, surviving restarts of the store) and notifies `onRevision` listeners of
 *   this node; a Redis store also tells the other nodes (pub/sub plus a 1 s revision poll).
 * - A signal is stored as a SignalRecord folded by the reducer (reducer.ts). The latest
 *   signal per id (region, kind, source, key) by observedAt wins; an older or equal one is
 *   refused (`stale`), and the stored record is never replaced by a fold of an older record
 *   (compare-and-set on the previous record's observedAt).
 * - Nothing is lost silently: a write the store cannot make rejects with StoreError
 *   (code `unavailable` when the backend is unreachable). Key TTLs never carry meaning.
 * - Overrides and audit entries are durable before the write resolves (memory: fsync'd
 *   append-only file; Redis: `WAIT 1` acknowledged, or the configured replica count).
 * - Time: every instant is ms since the Unix epoch. The store never reads the clock to
 *   decide anything about signals (expiry is the planner's business).
 */
import type { Override, Signal } from '../model/types.js';
import type { Provenance } from '../model/principal.js';
import type { AuditEntry, DemandBucket, QuarantineEntry, StoreSnapshot, SignalRecord } from '../model/snapshot.js';

/** A poller's right to run on this node until `until` (ms epoch, store clock); `token` fences its writes. */
export interface Lease {
  name: string;
  holder: string;
  token: number;
  until: number;
}

export type StoreErrorCode = 'unavailable' | 'stale' | 'conflict' | 'not_found' | 'fenced' | 'invalid';

export class StoreError extends Error {
  constructor(
    readonly code: StoreErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}

/** What putSignal did with one signal. */
export type PutResult =
  | { stored: true; revision: number; record: SignalRecord }
  /** An equal or newer signal with the same id is already stored: nothing changed. */
  | { stored: false; revision: number; reason: 'stale' }
  /** Another principal's live record holds this id (reducer.ts heldAgainst): nothing changed. */
  | { stored: false; revision: number; reason: 'held'; holder: string };

/** One signal of a putSignals batch, with putSignal's `by`. */
export interface PutItem {
  signal: Signal;
  by?: Provenance;
}

/** putSignals as a loop over putSignal: the batch contract by definition, for a store with no faster way. */
export async function putEach(store: Pick<StateStore, 'putSignal'>, items: readonly PutItem[], fence?: { lease: string; token: number }): Promise<PutResult[]> {
  const out: PutResult[] = [];
  for (const x of items) out.push(await store.putSignal(x.signal, fence, x.by));
  return out;
}

/**
 * Data loss the store saw under this node: its revision went back, or its epoch or format
 * marker vanished or changed, while this node had seen data (a Redis restarted without
 * persistence, a failover to a replica that had not caught up, a FLUSHALL). Never a routine
 * resync: the node logs it at error level, audits it in the store as it is now, and (policy
 * `hold`) keeps serving its last plan until an operator confirms.
 */
export interface StoreLoss {
  /** ms epoch, this node's clock, when this node saw it. */
  detectedAt: number;
  /** The newest revision this node had seen before, and the one the store reported then. */
  seenRevision: number;
  revision: number;
  /** The store's epoch (keys.ts) this node had seen, and the one the store holds now. */
  seenEpoch: string | null;
  epoch: string | null;
  /** What was seen, in words. */
  why: string;
}

/** Connection state, for /readyz and metrics. */
export interface StoreStatus {
  backend: 'memory' | 'redis';
  /** The backend answers. Always true for memory. */
  connected: boolean;
  /** The node's view may be behind the store (disconnected, or a resync is pending). */
  stale: boolean;
  /** Store clock − this node's clock in ms at the last check (0 for memory). */
  clockSkewMs: number;
  detail: string;
  /** A data loss not yet confirmed (this node holds its last plan meanwhile); null or absent when none. */
  loss?: StoreLoss | null;
  /** Data losses this node has seen since it started (a counter). */
  losses?: number;
}

export interface StateStore {
  readonly backend: 'memory' | 'redis';

  /** Opens (memory: replays its file; Redis: connects and subscribes). Rejects on failure. */
  start(): Promise<void>;
  close(): Promise<void>;

  status(): StoreStatus;

  /** The current revision (Redis: read from the server). */
  revision(): Promise<number>;

  /** Reads everything at one revision (Redis: one Lua script, atomic). */
  snapshot(): Promise<StoreSnapshot>;

  /**
   * Folds one validated signal into its record with reduce() and stores it (latest wins).
   * `fence`, when given, must hold the current token of that lease or the write is refused
   * with StoreError `fenced` (a deposed poller's late write). `by`, when given, is recorded
   * on the record (who wrote it, under which grant) and a live record of another principal
   * refuses the write (`held`, reducer.ts heldAgainst).
   */
  putSignal(signal: Signal, fence?: { lease: string; token: number }, by?: Provenance): Promise<PutResult>;

  /**
   * Stores a batch as putSignal would one by one, in order (`POST /v1/signals`): `results[i]`
   * is what putSignal(items[i]) answers after items[0 … i−1], so the same id twice folds the
   * later one onto the earlier (or is stale against it), and the records stored are those of
   * the loop. Each stored signal has a revision of its own and tells listeners as putSignal
   * does; the revisions of one id's writes increase in batch order, those of different ids
   * need not (Redis writes a batch in rounds, one per repetition of an id). A stale or held
   * answer carries at least the revision of every earlier write of the batch, as in the loop.
   * `fence` as putSignal's, for the whole batch: a deposed poller's batch rejects with
   * `fenced`. A failure rejects the call (StoreError); part of the batch may be stored then, as
   * with a loop stopped there: sending the batch again is safe (what was stored is stale).
   * Implementations without a batched write use putEach.
   */
  putSignals(items: readonly PutItem[], fence?: { lease: string; token: number }): Promise<PutResult[]>;

  /**
   * Removes signal records (housekeeping: long-expired records, gslb/control/jobs.ts). Each is
   * removed only if the stored record still has the given observedAt (compare-and-delete: a
   * record refreshed meanwhile stays). Bumps the revision once when anything was removed.
   */
  removeSignals(items: readonly { id: string; observedAt: number }[]): Promise<{ removed: number; revision: number }>;

  /**
   * Stores a new override (id assigned by the store) and its audit entry atomically;
   * durable before it resolves. `at` is the request time (ms epoch) recorded in the audit.
   */
  createOverride(o: Omit<Override, 'id'>, at: number): Promise<{ override: Override; revision: number }>;

  /**
   * Ends an override: removes it from the live set and audits who ended it and why.
   * Rejects with StoreError `not_found` when there is no such live override.
   */
  endOverride(id: string, actor: string, reason: string, at: number): Promise<{ override: Override; revision: number }>;

  /**
   * Confirms the data loss in status().loss: audits it (`store.loss.confirm`, by `actor` for
   * `reason`), records the confirmation in the store so that every node holding the same
   * loss resumes, and resumes planning from the store as it is now. StoreError `not_found`
   * when there is no loss to confirm (the memory store never has one).
   */
  confirmLoss(actor: string, reason: string, at: number): Promise<{ loss: StoreLoss; revision: number }>;

  /**
   * Appends one audit entry that is not an override's (a housekeeping job's start and finish,
   * gslb/control/jobs.ts); durable before it resolves; no revision bump (nothing the planner
   * reads changed). Returns the entry with its seq.
   */
  appendAudit(entry: Omit<AuditEntry, 'seq'>): Promise<AuditEntry>;

  /**
   * Removes the audit entries older than `before` (ms epoch, by their `at`) — the housekeeping
   * job `audit-trim`, after exporting them when configured. No revision bump. Returns how many
   * went. (The memory store records the trim in its file; the file itself is not compacted.)
   */
  trimAudit(before: number): Promise<{ removed: number }>;

  /**
   * Adds quarantine entries (ADR 0020): records held out of planning, which every node reads in
   * its snapshot. An entry whose target is already held with the same fingerprint changes
   * nothing; any other replaces the target's entry. Each change is audited
   * (`quarantine.add`, actor the entry's `by`, `after` the entry), and the revision is bumped
   * once when anything changed. Durable before it resolves, like an override.
   */
  quarantine(entries: readonly QuarantineEntry[]): Promise<{ added: number; revision: number }>;

  /**
   * Removes the quarantine entry of `target`: the record is planned again (if planning with it
   * still fails, a node finds it again). Audited `quarantine.release` with the entry as
   * `before`. StoreError `not_found` when no entry has that target.
   */
  releaseQuarantine(target: string, actor: string, reason: string, at: number): Promise<{ entry: QuarantineEntry; revision: number }>;

  /**
   * Deletes the record a quarantine entry names (a signal record, a live override, a demand
   * bucket, or the unreadable text stored under that target) and the entry, in one write.
   * Audited `quarantine.drop` with the entry and the record (or its text) as `before`: nothing
   * goes without a trace. StoreError `not_found` when no entry has that target.
   */
  dropQuarantined(target: string, actor: string, reason: string, at: number): Promise<{ entry: QuarantineEntry; revision: number }>;

  /** The newest `limit` audit entries, newest first. */
  audit(limit: number): Promise<AuditEntry[]>;

  /** Adds query counts to demand buckets (summed across nodes); does not bump the revision. */
  addDemand(buckets: DemandBucket[]): Promise<void>;

  /**
   * Takes or renews the lease `name` for `holder` for `ttlMs` of store time. Returns the
   * lease (same token when renewed by its holder, a larger token when taken over after it
   * expired) or null when another holder has it.
   */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null>;

  /** Gives the lease up if `holder` still has it with `token`. */
  releaseLease(name: string, holder: string, token: number): Promise<void>;

  /** The store's clock in ms epoch (Redis `TIME`; memory: the local clock). */
  time(): Promise<number>;

  /** Called with the new revision after any write this node learns of; returns an unsubscribe. */
  onRevision(listener: (revision: number) => void): () => void;
}
