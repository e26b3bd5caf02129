/**
 * What the state store holds and hands to the planner, as plain JSON-serialisable data: the
 * folded record of each signal, the snapshot read at one revision, demand buckets and audit
 * entries; and the demand counts an answering process hands the primary. Declarations only:
 * the reducer (gslb/state/reducer.ts) makes records, the stores keep them, the planner reads
 * them.
 */
import type { Override, Signal } from './types.js';

/** Kind-specific memory of a record. */
export type Fold =
  | {
      kind: 'health';
      stableUp: boolean;
      streak: number;
      lastUp: boolean;
      /** observedAt of the probe that last turned the stable state down → up (for slow start); absent = never seen turning. */
      upSince?: number;
    }
  | { kind: 'applied'; value: Record<string, number> }
  | GridFold
  | { kind: 'latest' };

/**
 * A grid fact's memory (grid.event, grid.alert; docs/adr/0007-proactive-drain.md): when its
 * current content was first learned (the notice a drain had), and what it said before the
 * content last changed, until when — so a cancelled, modified or cleared fact restores
 * traffic with a ramp from where the old one had brought it, instead of at once.
 */
export interface GridFold {
  kind: 'grid';
  /** observedAt of the first signal with the current content (re-polls of the same content keep it). */
  learnedAt: number;
  /** The content before the last change, learned at `learnedAt`, in force until `until` (the change's observedAt). */
  last?: { value: unknown; learnedAt: number; until: number };
}

/** The stored form of the latest signal of one id. */
export interface SignalRecord {
  /** signalId(signal): region|kind|source|key. */
  id: string;
  signal: Signal;
  fold: Fold;
  /**
   * Who wrote it (model/principal.ts, ADR 0021): `token:<name>` or `collector:<name>`, fleet-wide.
   * Absent on a record an earlier build wrote: it counts as its source's.
   */
  principal?: string;
  /** The grant (source prefix) it was written under; absent with a principal = written without a grant. */
  grant?: string;
}

/** One entry of the audit log: who did what, when, why, and the state before and after. */
export interface AuditEntry {
  /** Assigned by the store, increasing. */
  seq: number;
  /** ms epoch, the caller's clock at the request. */
  at: number;
  actor: string;
  /** e.g. `override.create`, `override.end`. */
  action: string;
  /** The override's id (or another object's) the entry is about. */
  target: string;
  reason: string;
  before: unknown;
  after: unknown;
}

/** Everything the planner needs, read at one revision. */
export interface StoreSnapshot {
  revision: number;
  /** The folded record of every signal id, in a stable order (by id). */
  records: SignalRecord[];
  /** Every override not ended, in a stable order (by id). */
  overrides: Override[];
  /** Demand buckets: per (bucket start, home, name) the query count, all nodes summed. */
  demand: DemandBucket[];
  /**
   * Records held out of planning (ADR 0020), in a stable order (by target). The planner skips
   * every record an entry names while the record still has the entry's fingerprint. Absent = none.
   */
  quarantine?: QuarantineEntry[];
  /** Stored records this build could not read (not JSON, not a record's shape): never planned, reported so that they are quarantined. Absent = none. */
  unreadable?: UnreadableRecord[];
}

/**
 * A stored record held out of planning because planning with it threw, or because it could
 * not be read (ADR 0020). A store record every node reads, so every node holds out the same.
 */
export interface QuarantineEntry {
  /** What is held out: `signal:<signal id>`, `override:<override id>`, `demand:<bucket>|<home>|<name>`, or (the memory store's file) `file:<line>`. */
  target: string;
  /** The record's content it was found with (policy/quarantine.ts fingerprintOf; `*` = whatever it holds): a record changed since is planned again. */
  fingerprint: string;
  /** Why, in words: the error planning with it threw, or why it could not be read. */
  why: string;
  /** ms epoch (the finding node's clock) when it was found. */
  at: number;
  /** The node that found it. */
  by: string;
}

/** A stored record that could not be read: its target (as in QuarantineEntry) and its stored text. */
export interface UnreadableRecord {
  target: string;
  /** The stored text (at most 4 KiB of it). */
  raw: string;
  why: string;
}

/** Queries counted by all nodes for clients of one home asking one name in one 10-second bucket. */
export interface DemandBucket {
  /** ms epoch, a multiple of 10 000. */
  bucket: number;
  home: string;
  name: string;
  queries: number;
}

/** Steered queries by name, then by the client's home region. */
export type DemandCounts = Record<string, Record<string, number>>;
