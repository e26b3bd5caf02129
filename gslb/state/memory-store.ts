/**
 * The embedded store: everything in this process's memory; overrides and the audit log are
 * also appended to a file (JSON lines, fsync'd before a write resolves) and replayed at
 * start, so they survive restarts. Signals and demand are not persisted: collectors send
 * them again, and a restarted node treats what it has not heard yet as unknown.
 *
 * The file: one JSON object per line, `{"op":"create","rev":N,"override":{…},"audit":{…}}`,
 * `{"op":"end","rev":N,"id":"ov-3","audit":{…}}` or `{"op":"rev","rev":N}`. A `rev` line
 * reserves revisions up to N for writes that are not kept (signals): it is appended before
 * the revision passes the highest one in the file, a block of REV_BLOCK at a time, so the
 * revision never goes backwards or repeats across a restart, even after a crash. A torn
 * last line (a crash mid-write) is cut off at start with a warning; any other unreadable
 * line is not applied, warned about naming the file and line, and handed on in the snapshot
 * as an unreadable record (`file:<line>`) that the node quarantines (ADR 0020), so nothing is
 * dropped without an operator knowing and stored data never stops a start.
 *
 * An audit trim (the audit-trim job) is a `trim` line, then the file is compacted: rewritten
 * without the trimmed entries, atomically (MemoryStore.compact).
 *
 * Writes to a store with a file are refused (StoreError `unavailable`) before start() and
 * after close(): they could not be made durable.
 */
import { closeSync, existsSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Override, Signal } from '../model/types.js';
import { reduce, heldAgainst, DEFAULT_RULES, type ReduceRules } from './reducer.js';
import type { Provenance } from '../model/principal.js';
import type { SignalRecord, AuditEntry, DemandBucket, QuarantineEntry, StoreSnapshot, UnreadableRecord } from '../model/snapshot.js';
import { signalId } from './signals.js';
import { putEach, StoreError, type Lease, type PutItem, type PutResult, type StateStore, type StoreStatus } from './store.js';

/** Demand buckets older than this, behind the newest bucket seen, are dropped. */
const DEMAND_KEEP_MS = 3600_000;

/** Revisions reserved by one `rev` line: one fsync'd append per this many signal writes. */
const REV_BLOCK = 1000;

type LogLine =
  | { op: 'create'; rev: number; override: Override; audit: AuditEntry }
  | { op: 'end'; rev: number; id: string; audit: AuditEntry }
  | { op: 'rev'; rev: number }
  | { op: 'audit'; rev: number; audit: AuditEntry }
  | { op: 'trim'; rev: number; before: number }
  /** The first lines of a compacted file: the counters, then every live override (its create entry may have been trimmed). */
  | { op: 'base'; rev: number; nextOverride: number; nextAudit: number }
  | { op: 'override'; rev: number; override: Override };

/** fsyncs a directory: a file created or renamed in it stays after a crash. */
function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses one line of the file; throws an Error saying what is wrong with it. */
function parseLine(line: string): LogLine {
  const e: unknown = JSON.parse(line);
  if (!isObject(e)) throw new Error('not a JSON object');
  if (!['create', 'end', 'rev', 'audit', 'trim', 'base', 'override'].includes(e.op as string)) throw new Error(`unknown op ${JSON.stringify(e.op) ?? 'undefined'} (known: create, end, rev, audit, trim, base, override)`);
  // Audit, trim and a compacted file's lines carry the revision they were written at (0 in a store never written to).
  if (typeof e.rev !== 'number' || !Number.isSafeInteger(e.rev) || e.rev < (e.op === 'create' || e.op === 'end' || e.op === 'rev' ? 1 : 0)) throw new Error('rev must be a positive integer');
  if (e.op === 'base') {
    if (!Number.isSafeInteger(e.nextOverride) || !Number.isSafeInteger(e.nextAudit)) throw new Error('nextOverride and nextAudit must be integers');
    return e as LogLine;
  }
  if (e.op === 'override') {
    const o = e.override;
    if (!isObject(o) || typeof o.id !== 'string' || typeof o.region !== 'string' || typeof o.action !== 'string') throw new Error('override must be an object with string id, region and action');
    return e as LogLine;
  }
  if (e.op === 'trim') {
    if (typeof e.before !== 'number' || !Number.isFinite(e.before)) throw new Error('before must be a number (ms epoch)');
    return e as LogLine;
  }
  if (e.op === 'rev') return e as LogLine;
  if (e.op === 'audit') {
    if (!isObject(e.audit) || typeof e.audit.seq !== 'number' || !Number.isSafeInteger(e.audit.seq)) throw new Error('audit must be an object with an integer seq');
    return e as LogLine;
  }
  if (!isObject(e.audit) || typeof e.audit.seq !== 'number' || !Number.isSafeInteger(e.audit.seq)) throw new Error('audit must be an object with an integer seq');
  if (e.op === 'create') {
    const o = e.override;
    if (!isObject(o) || typeof o.id !== 'string' || typeof o.region !== 'string' || typeof o.action !== 'string') throw new Error('override must be an object with string id, region and action');
  } else if (typeof e.id !== 'string') throw new Error('id must be a string');
  return e as LogLine;
}

export interface MemoryStoreOptions {
  /** The append-only file; null keeps nothing across restarts (tests, check-config). */
  file: string | null;
  rules?: ReduceRules;
  /** Warnings (a torn last line); default process.emitWarning. */
  warn?: (msg: string) => void;
  /** The clock for leases and time() (ms epoch). */
  clock?: () => number;
}

export class MemoryStore implements StateStore {
  readonly backend = 'memory' as const;
  private rev = 0;
  private nextOverride = 1;
  private nextAudit = 1;
  private readonly records = new Map<string, SignalRecord>();
  private readonly overrides = new Map<string, Override>();
  private readonly auditLog: AuditEntry[] = [];
  private readonly demand = new Map<string, DemandBucket>();
  /** Quarantine entries by target (ADR 0020): in memory like the signals (a restarted node finds them again); their audit entries are in the file. */
  private readonly held = new Map<string, QuarantineEntry>();
  /** Lines of the file that could not be read at start (target `file:<line>`): never applied, quarantined by the node. */
  private readonly unreadable: UnreadableRecord[] = [];
  private newestBucket = 0;
  private readonly leases = new Map<string, Lease>();
  private leaseTokens = 0;
  private readonly listeners = new Set<(rev: number) => void>();
  private fd: number | null = null;
  /** Bytes of the file that hold complete lines (where the next append starts). */
  private size = 0;
  /** The highest revision in the file (create, end or rev lines). */
  private persistedRev = 0;
  private closed = false;
  private readonly rules: ReduceRules;
  private readonly clock: () => number;

  constructor(private readonly o: MemoryStoreOptions) {
    this.rules = o.rules ?? DEFAULT_RULES;
    this.clock = o.clock ?? Date.now;
  }

  async start(): Promise<void> {
    if (this.closed) throw new StoreError('invalid', 'state: this store was closed; make a new one to start again');
    const file = this.o.file;
    if (file === null || this.fd !== null) return;
    mkdirSync(dirname(file), { recursive: true });
    const existed = existsSync(file);
    const keep = existed ? this.replay(file) : null;
    const fd = openSync(file, 'a');
    try {
      // The new file's directory entry must be durable too.
      if (!existed) syncDir(dirname(file));
      this.size = fstatSync(fd).size;
      if (keep !== null && keep.bytes < this.size) {
        ftruncateSync(fd, keep.bytes);
        fsyncSync(fd);
        this.size = keep.bytes;
        (this.o.warn ?? ((m: string) => process.emitWarning(m)))(`state: ${file}:${keep.lines + 1}: torn last line cut off (no newline: a write that never completed)`);
      }
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    this.fd = fd;
  }

  /** Applies every complete line of `file`; returns how many bytes and lines they take. */
  private replay(file: string): { bytes: number; lines: number } {
    const buf = readFileSync(file);
    // Every complete line ends with a newline; bytes after the last one were torn by a crash.
    const bytes = buf.lastIndexOf(0x0a) + 1;
    const lines = buf.subarray(0, bytes).toString('utf8').split('\n');
    lines.pop(); // the empty segment after the last newline
    // Every line is read before any is applied. A line that cannot be read never stops the
    // start (ADR 0020): it is not applied, it is handed on as an unreadable record (the node
    // quarantines it, so every view shows it), and warned about naming the file and line.
    const unread: UnreadableRecord[] = [];
    const entries = lines.flatMap((line, i): LogLine[] => {
      if (line.trim() === '') return [];
      try {
        return [parseLine(line)];
      } catch (e) {
        unread.push({ target: `file:${i + 1}`, raw: line.slice(0, 4096), why: `${file}:${i + 1}: unreadable line (${(e as Error).message})` });
        return [];
      }
    });
    // A line an operator dropped (`gridsteer quarantine drop file:N`, audited with its text) stays dropped.
    const dropped = new Set(entries.flatMap((e) => (e.op === 'audit' || e.op === 'create' || e.op === 'end') && e.audit.action === 'quarantine.drop' && typeof (e.audit.before as { record?: unknown } | null)?.record === 'string' ? [(e.audit.before as { record: string }).record] : []));
    for (const u of unread) {
      if (dropped.has(u.raw)) continue;
      this.unreadable.push(u);
      (this.o.warn ?? ((m: string) => process.emitWarning(m)))(
        `state: ${u.why}: not applied, and quarantined (gridsteer quarantine lists it): fix or remove that line and restart, or drop it (the file is JSON lines: one override create, end, rev, audit entry, audit trim, or a compacted file's base or override line per line)`,
      );
    }
    for (const e of entries) this.apply(e);
    return { bytes, lines: lines.length };
  }

  private apply(e: LogLine): void {
    this.rev = Math.max(this.rev, e.rev);
    this.persistedRev = Math.max(this.persistedRev, e.rev);
    if (e.op === 'rev') return;
    if (e.op === 'base') {
      this.nextOverride = Math.max(this.nextOverride, e.nextOverride);
      this.nextAudit = Math.max(this.nextAudit, e.nextAudit);
      return;
    }
    if (e.op === 'override') {
      this.overrides.set(e.override.id, e.override);
      return;
    }
    if (e.op === 'trim') {
      this.trimLog(e.before);
      return;
    }
    if (e.op === 'audit') {
      this.auditLog.push(e.audit);
      this.nextAudit = Math.max(this.nextAudit, e.audit.seq + 1);
      return;
    }
    if (e.op === 'create') this.overrides.set(e.override.id, e.override);
    else this.overrides.delete(e.id);
    this.auditLog.push(e.audit);
    this.nextAudit = Math.max(this.nextAudit, e.audit.seq + 1);
    const n = e.op === 'create' ? Number(e.override.id.replace(/^ov-/, '')) : NaN;
    if (Number.isInteger(n)) this.nextOverride = Math.max(this.nextOverride, n + 1);
  }

  /** Refuses a write that could not be made durable (a file store not started, or closed). */
  private writable(): void {
    if (this.o.file !== null && this.fd === null) {
      throw new StoreError('unavailable', `state: ${this.o.file} is not open (${this.closed ? 'the store is closed' : 'start() has not run'}): the write is refused`);
    }
  }

  /**
   * Appends one line and fsyncs it. On failure the file is cut back to its last complete
   * line (so the next append does not glue onto a fragment) and StoreError `unavailable` is
   * thrown; nothing in memory has changed then.
   */
  private append(line: LogLine): void {
    if (this.fd === null) return;
    const buf = Buffer.from(JSON.stringify(line) + '\n', 'utf8');
    try {
      let at = 0;
      while (at < buf.length) at += writeSync(this.fd, buf, at);
      fsyncSync(this.fd);
    } catch (e) {
      try {
        ftruncateSync(this.fd, this.size);
      } catch {
        // The start after a crash cuts a torn tail off anyway.
      }
      throw new StoreError('unavailable', `state: ${this.o.file}: could not append (${(e as Error).message}); the write is refused`);
    }
    this.size += buf.length;
    this.persistedRev = Math.max(this.persistedRev, line.rev);
  }

  /** Makes sure revision `r` is covered by the file before it is handed out. */
  private reserve(r: number): void {
    if (this.fd !== null && r > this.persistedRev) this.append({ op: 'rev', rev: r + REV_BLOCK - 1 });
  }

  async close(): Promise<void> {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    this.closed = true;
    this.listeners.clear();
  }

  status(): StoreStatus {
    return { backend: 'memory', connected: true, stale: false, clockSkewMs: 0, detail: this.o.file ? `in memory; overrides and audit in ${this.o.file}` : 'in memory (nothing kept across restarts)' };
  }

  async revision(): Promise<number> {
    return this.rev;
  }

  /** Hands out the next revision (reserved in the file first) and tells the listeners. */
  private bump(): number {
    this.reserve(this.rev + 1);
    this.rev++;
    const r = this.rev;
    for (const l of this.listeners) {
      try {
        l(r);
      } catch {
        // A listener's failure is its own business.
      }
    }
    return r;
  }

  async snapshot(): Promise<StoreSnapshot> {
    const byId = <T>(m: Map<string, T>) => [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((e) => e[1]);
    return {
      revision: this.rev,
      records: structuredClone(byId(this.records)),
      overrides: structuredClone(byId(this.overrides)),
      demand: byId(this.demand).map((d) => ({ ...d })),
      ...(this.held.size > 0 ? { quarantine: structuredClone(byId(this.held)) } : {}),
      ...(this.unreadable.length > 0 ? { unreadable: structuredClone(this.unreadable) } : {}),
    };
  }

  async quarantine(entries: readonly QuarantineEntry[]): Promise<{ added: number; revision: number }> {
    this.writable();
    const fresh = entries.filter((e) => {
      const cur = this.held.get(e.target);
      return !cur || cur.fingerprint !== e.fingerprint;
    });
    if (fresh.length === 0) return { added: 0, revision: this.rev };
    this.reserve(this.rev + 1);
    for (const e of fresh) {
      this.logAudit({ at: e.at, actor: e.by, action: 'quarantine.add', target: e.target, reason: e.why, before: this.held.get(e.target) ?? null, after: e });
      this.held.set(e.target, structuredClone(e));
    }
    return { added: fresh.length, revision: this.bump() };
  }

  async releaseQuarantine(target: string, actor: string, reason: string, at: number): Promise<{ entry: QuarantineEntry; revision: number }> {
    this.writable();
    const entry = this.held.get(target);
    if (!entry) throw new StoreError('not_found', `state: nothing quarantined as ${target}`);
    this.reserve(this.rev + 1);
    this.logAudit({ at, actor, action: 'quarantine.release', target, reason, before: entry, after: null });
    this.held.delete(target);
    return { entry: structuredClone(entry), revision: this.bump() };
  }

  async dropQuarantined(target: string, actor: string, reason: string, at: number): Promise<{ entry: QuarantineEntry; revision: number }> {
    this.writable();
    const entry = this.held.get(target);
    if (!entry) throw new StoreError('not_found', `state: nothing quarantined as ${target}`);
    this.reserve(this.rev + 1);
    const [type, ...rest] = target.split(':');
    const id = rest.join(':');
    const line = type === 'file' ? this.unreadable.findIndex((u) => u.target === target) : -1;
    const record = type === 'signal' ? this.records.get(id) : type === 'override' ? this.overrides.get(id) : type === 'demand' ? this.demand.get(id) : line >= 0 ? this.unreadable[line]!.raw : undefined;
    const audit: AuditEntry = { seq: this.nextAudit, at, actor, action: 'quarantine.drop', target, reason, before: { entry, record: record ?? null }, after: null };
    // An override is ended in the file (its end line carries the drop's audit entry); the rest live in memory only.
    if (type === 'override' && record) this.append({ op: 'end', rev: this.rev + 1, id, audit });
    else this.append({ op: 'audit', rev: this.rev, audit });
    this.nextAudit++;
    this.auditLog.push(audit);
    if (type === 'signal') this.records.delete(id);
    else if (type === 'override') this.overrides.delete(id);
    else if (type === 'demand') this.demand.delete(id);
    else if (line >= 0) this.unreadable.splice(line, 1);
    this.held.delete(target);
    return { entry: structuredClone(entry), revision: this.bump() };
  }

  async putSignal(signal: Signal, fence?: { lease: string; token: number }, by?: Provenance): Promise<PutResult> {
    this.writable();
    if (fence) this.checkFence(fence);
    const id = signalId(signal);
    const prev = this.records.get(id);
    const holder = heldAgainst(prev, signal, by);
    if (holder !== null) return { stored: false, revision: this.rev, reason: 'held', holder };
    const next = reduce(prev, structuredClone(signal), this.rules, by);
    if (!next) return { stored: false, revision: this.rev, reason: 'stale' };
    this.reserve(this.rev + 1); // before the record changes: a failed reservation changes nothing
    this.records.set(id, next);
    return { stored: true, revision: this.bump(), record: structuredClone(next) };
  }

  /** The loop over putSignal: in memory there is no round trip to save. */
  putSignals(items: readonly PutItem[], fence?: { lease: string; token: number }): Promise<PutResult[]> {
    return putEach(this, items, fence);
  }

  async removeSignals(items: readonly { id: string; observedAt: number }[]): Promise<{ removed: number; revision: number }> {
    this.writable();
    const gone = items.filter((x) => this.records.get(x.id)?.signal.observedAt === x.observedAt);
    if (gone.length === 0) return { removed: 0, revision: this.rev };
    this.reserve(this.rev + 1);
    for (const x of gone) this.records.delete(x.id);
    return { removed: gone.length, revision: this.bump() };
  }

  private checkFence(f: { lease: string; token: number }): void {
    const l = this.leases.get(f.lease);
    if (!l || l.token !== f.token) throw new StoreError('fenced', `state: lease ${f.lease} token ${f.token} is not current${l ? ` (current token ${l.token}, held by ${l.holder})` : ''}: the write is refused`);
  }

  async createOverride(o: Omit<Override, 'id'>, at: number): Promise<{ override: Override; revision: number }> {
    this.writable();
    // An `id` smuggled into `o` (a request body passed through) never replaces the store's.
    const { id: _smuggled, ...fields } = structuredClone(o) as Omit<Override, 'id'> & { id?: unknown };
    const override: Override = { id: `ov-${this.nextOverride}`, ...fields };
    const rev = this.rev + 1;
    const audit: AuditEntry = { seq: this.nextAudit, at, actor: o.actor, action: 'override.create', target: override.id, reason: o.reason, before: null, after: override };
    this.append({ op: 'create', rev, override, audit });
    this.nextOverride++;
    this.nextAudit++;
    this.overrides.set(override.id, override);
    this.auditLog.push(audit);
    return { override: structuredClone(override), revision: this.bump() };
  }

  async endOverride(id: string, actor: string, reason: string, at: number): Promise<{ override: Override; revision: number }> {
    this.writable();
    const o = this.overrides.get(id);
    if (!o) throw new StoreError('not_found', `state: no live override ${id}`);
    const audit: AuditEntry = { seq: this.nextAudit, at, actor, action: 'override.end', target: id, reason, before: o, after: null };
    this.append({ op: 'end', rev: this.rev + 1, id, audit });
    this.nextAudit++;
    this.overrides.delete(id);
    this.auditLog.push(audit);
    return { override: structuredClone(o), revision: this.bump() };
  }

  /** The memory store never sees its own data vanish while it runs: nothing to confirm. */
  confirmLoss(): Promise<never> {
    return Promise.reject(new StoreError('not_found', 'state: the memory store has seen no data loss: nothing to confirm'));
  }

  async appendAudit(entry: Omit<AuditEntry, 'seq'>): Promise<AuditEntry> {
    this.writable();
    return structuredClone(this.logAudit(entry));
  }

  /** Appends one audit entry of its own (an `audit` line, fsync'd) and keeps it; returns it with its seq. */
  private logAudit(entry: Omit<AuditEntry, 'seq'>): AuditEntry {
    const audit: AuditEntry = { ...structuredClone(entry), seq: this.nextAudit };
    this.append({ op: 'audit', rev: this.rev, audit });
    this.nextAudit++;
    this.auditLog.push(audit);
    return audit;
  }

  private trimLog(before: number): number {
    const n = this.auditLog.length;
    const kept = this.auditLog.filter((e) => e.at >= before);
    this.auditLog.length = 0;
    this.auditLog.push(...kept);
    return n - kept.length;
  }

  async trimAudit(before: number): Promise<{ removed: number }> {
    this.writable();
    if (!this.auditLog.some((e) => e.at < before)) return { removed: 0 };
    this.append({ op: 'trim', rev: this.rev, before });
    const removed = this.trimLog(before);
    this.compact();
    return { removed };
  }

  /**
   * Rewrites the file without what a trim removed: `<file>.compact` gets a `base` line (the
   * revision reserved and the id and seq counters, so none is handed out twice), one `override`
   * line per live override, then the audit log as `audit` lines; it is fsync'd, renamed over the
   * file and the directory fsync'd. A crash before the rename leaves the old file (its `trim`
   * line already durable: replayed, the same state) and a stray `.compact`, which the next
   * compaction overwrites; after it, the new file. A compaction that fails is warned about and
   * changes nothing (the trim stands; the file keeps the trimmed entries until the next one).
   */
  private compact(): void {
    const file = this.o.file;
    if (file === null || this.fd === null) return;
    const tmp = `${file}.compact`;
    const head: LogLine[] = [
      { op: 'base', rev: this.persistedRev, nextOverride: this.nextOverride, nextAudit: this.nextAudit },
      ...[...this.overrides.values()].sort((a, b) => Number(a.id.replace(/^ov-/, '')) - Number(b.id.replace(/^ov-/, ''))).map((override): LogLine => ({ op: 'override', rev: this.persistedRev, override })),
      ...this.auditLog.map((audit): LogLine => ({ op: 'audit', rev: this.persistedRev, audit })),
    ];
    const buf = Buffer.from(head.map((l) => JSON.stringify(l) + '\n').join(''), 'utf8');
    let fd: number | null = null;
    try {
      fd = openSync(tmp, 'w');
      let at = 0;
      while (at < buf.length) at += writeSync(fd, buf, at);
      fsyncSync(fd);
      closeSync(fd);
      fd = null;
      renameSync(tmp, file);
    } catch (e) {
      if (fd !== null) closeSync(fd);
      (this.o.warn ?? ((m: string) => process.emitWarning(m)))(`state: ${file}: compaction after an audit trim failed (${(e as Error).message}); the file keeps the trimmed entries (replayed, they stay trimmed) until the next trim`);
      return;
    }
    // The new file is the store's file from here: appends go to it (opened for appending, as at start).
    closeSync(this.fd);
    this.fd = null;
    try {
      syncDir(dirname(file));
      this.fd = openSync(file, 'a');
    } catch (e) {
      // Not open: writes are refused (unavailable) rather than lost in the old file's inode.
      (this.o.warn ?? ((m: string) => process.emitWarning(m)))(`state: ${file}: could not reopen after compaction (${(e as Error).message}); writes are refused until a restart`);
      return;
    }
    this.size = buf.length;
  }

  async audit(limit: number): Promise<AuditEntry[]> {
    // slice(-0) would be the whole log.
    if (!(limit > 0)) return [];
    return structuredClone(this.auditLog.slice(-limit).reverse());
  }

  async addDemand(buckets: DemandBucket[]): Promise<void> {
    for (const b of buckets) {
      const k = `${b.bucket}|${b.home}|${b.name}`;
      const cur = this.demand.get(k);
      if (cur) cur.queries += b.queries;
      else this.demand.set(k, { ...b });
      this.newestBucket = Math.max(this.newestBucket, b.bucket);
    }
    for (const [k, d] of this.demand) if (d.bucket < this.newestBucket - DEMAND_KEEP_MS) this.demand.delete(k);
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null> {
    const now = this.clock();
    const l = this.leases.get(name);
    if (l && l.holder !== holder && l.until > now) return null;
    const token = l && l.holder === holder && l.until > now ? l.token : ++this.leaseTokens;
    const lease: Lease = { name, holder, token, until: now + ttlMs };
    this.leases.set(name, lease);
    return { ...lease };
  }

  async releaseLease(name: string, holder: string, token: number): Promise<void> {
    const l = this.leases.get(name);
    if (l && l.holder === holder && l.token === token) this.leases.delete(name);
  }

  async time(): Promise<number> {
    return this.clock();
  }

  onRevision(listener: (revision: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
