/**
 * The housekeeping jobs (docs/schedules.md "Housekeeping jobs"), run by JobRunner (jobs.ts):
 * - `gc-signals` (hourly): removes signal records expired for longer than their stale keep
 *   plus a day, only those whose removal leaves the plan identical from now on
 *   (gslb/policy/gc.ts), compare-and-delete in the store;
 * - `practice-runs` (every minute): records each practice run's outcome in the audit log —
 *   skipped (why), started, aborted (why), finished — from the plan in force, which decides them
 *   (gslb/policy/rules/practice.ts), with what was measured: the demand of the run's regions'
 *   clients before, during and moved, and failing health probes seen while it acted;
 *   GET /v1/practice-runs reads them back.
 * - `audit-trim` (daily): removes audit entries older than `housekeeping.auditRetentionDays`,
 *   appending them first to `housekeeping.auditExport` when set (fsync'd before the trim);
 * - `verify-hooks` (every 15 minutes): re-sends each hooked region's state in force to its drain
 *   hook — the same payload and id the hook runner sent (`<region>@<at>`), so a gateway applies
 *   it once — and reports any hook that does not answer 2xx;
 * - `geoip-check` (hourly, on every node: each has its own copy): re-checks this node's GeoIP
 *   database file and compiles a new table in the background when the file changed.
 * All are idempotent: a second run of a slot (or of the next) finds nothing left to do.
 */
import { appendFileSync, closeSync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Plan, RegionStep } from '../model/types.js';
import type { AuditEntry, DemandBucket, SignalRecord, StoreSnapshot } from '../model/snapshot.js';
import type { KindValue } from '../model/kinds/index.js';
import { BUCKET_MS } from './demand.js';
import type { WindowOccurrence } from '../model/windows.js';
import { collectable } from '../policy/gc.js';
import type { JobContext, JobDef } from './jobs.js';
import type { DrainHookConfig } from '../config/drain-hook.js';
import { bearerToken, DRAIN_HOOK_DEFAULTS, dueDrainHookCall, postOnce, RESERVED_HEADERS } from './hooks.js';
import type { StateService } from './service.js';

type HealthProbe = KindValue<'health.probe'>;

/** How long past its stale keep a record is kept at least, ms. */
export const GC_RETENTION_MS = 24 * 3_600_000;

/** The GeoIP service as the geoip-check job sees it. */
export interface GeoCheck {
  readonly state: { version: string; error: string | null; building: number | null; database: string | null };
  refresh(why: string): Promise<void>;
}

/** audit-trim's settings (config `housekeeping`). */
export interface AuditTrim {
  /** Keep this long, ms (0: the job does nothing). */
  retentionMs: number;
  /** Append what goes to this file first (absolute path); absent = no export. */
  exportFile?: string;
}

/** The regions' drain hooks (verify-hooks), read at each run. */
export interface HookCheck {
  /** The hooks to check now (empty when housekeeping.verifyHooks is false). */
  hooks: () => ReadonlyMap<string, DrainHookConfig>;
  env: Readonly<Record<string, string | undefined>>;
}

export interface HousekeepingDeps {
  /** The regions' drain hooks; absent = no verify-hooks job. */
  hookCheck?: HookCheck;
  /** audit-trim's settings, read at each run (a reload changes them); absent = no such job. */
  auditTrim?: () => AuditTrim;
  /** This node's GeoIP service (geoip-check); absent = no such job. */
  geo?: GeoCheck;
  svc: StateService;
  plan: () => Plan | null;
  node: string;
  clock: () => number;
  /** Counts of practice outcomes this node recorded (metrics). */
  practiceCounts?: Map<string, number>;
}

/** Measured demand from a practice run's regions' clients over one span (bucket-aligned, ms epoch). */
export interface PracticeSpan {
  from: number;
  to: number;
  /** Steered queries counted fleet-wide from clients homed in the run's regions, in the closed 10-second buckets of [from, to). */
  queries: number;
  /** queries / the span's seconds. */
  qps: number;
}

/**
 * What a practice run did to traffic, measured (GET /v1/demand's buckets: steered queries by the
 * client's home region, summed over the fleet). The run's regions are the homes read: their
 * clients are the ones it moves.
 */
export interface PracticeTraffic {
  homes: string[];
  /** The 5 minutes before the run's first step. */
  before: PracticeSpan;
  /** While the run held its regions at its least share: its start until its end (or abort). */
  held: PracticeSpan;
  /** From its first step until its regions were back at full share (or the record was written). */
  acting: PracticeSpan & {
    /** Of `acting.queries`, those the plan sent to other regions: each bucket's queries × (1 − its home region's planned share, averaged over the bucket). */
    moved: number;
  };
}

/** A failing health probe seen while a practice run acted (its first step until restored). */
export interface PracticeProbeError {
  region: string;
  source: string;
  key: string;
  /** The probe's observedAt, ms epoch. */
  at: number;
  detail?: string;
}

/** One practice run as GET /v1/practice-runs lists it. */
export interface PracticeRunView {
  window: string;
  regions: string[];
  start: number;
  end: number;
  /** skipped, started (in progress), aborted, finished. */
  outcome: 'skipped' | 'started' | 'aborted' | 'finished';
  why?: string;
  /** The least share the regions were planned down to during the run (1 = nothing moved). */
  share?: number;
  /** Every region back to full share when the run was recorded finished. */
  restored?: boolean;
  /** When the regions were back at full share (the plan's first full-share step after the run), ms epoch. */
  restoredAt?: number;
  /** Measured traffic (recorded with `finished`). */
  traffic?: PracticeTraffic;
  /** Failing health probes anywhere in the fleet while the run acted, oldest first (recorded as they are seen, and with `finished`). */
  probeErrors?: PracticeProbeError[];
  recordedBy: string;
}

const practiceTarget = (o: WindowOccurrence) => `practice:${o.window}@${new Date(o.start).toISOString()}`;

function leastShare(p: Plan, o: WindowOccurrence, until: number): number {
  let least = 1;
  for (const r of o.regions) for (const st of p.regions[r] ?? []) if (st.at >= o.start - 3_600_000 && st.at < until) least = Math.min(least, st.down ? 0 : st.share);
  return least;
}

function shareAt(p: Plan, region: string, t: number): number {
  let cur = 1;
  for (const st of p.regions[region] ?? []) {
    if (st.at > t) break;
    cur = st.down ? 0 : st.share;
  }
  return cur;
}

/** The region's planned share averaged over [a, b). */
function meanShare(p: Plan, region: string, a: number, b: number): number {
  let sum = 0;
  let t = a;
  let cur = shareAt(p, region, a);
  for (const st of p.regions[region] ?? []) {
    if (st.at <= a) continue;
    if (st.at >= b) break;
    sum += cur * (st.at - t);
    t = st.at;
    cur = st.down ? 0 : st.share;
  }
  return (sum + cur * (b - t)) / (b - a);
}

/**
 * When the run acts: the first step of the unbroken run of below-full steps its regions are in
 * at its start (the drain's first ramp step), and the first step back at full share after it
 * stops (null: not yet planned).
 */
function actingSpan(p: Plan, o: WindowOccurrence): { first: number; restoredAt: number | null } {
  const stop = o.aborted?.at ?? o.end;
  const below = (st: RegionStep) => st.down || st.share < 1;
  let first = o.start;
  let restoredAt: number | null = 0;
  for (const r of o.regions) {
    const steps = p.regions[r] ?? [];
    let i = steps.findLastIndex((st) => st.at <= o.start);
    if (i >= 0 && below(steps[i]!)) {
      while (i > 0 && below(steps[i - 1]!)) i--;
      first = Math.min(first, steps[i]!.at);
    }
    const back = steps.find((st) => st.at >= stop && !below(st));
    restoredAt = back === undefined || restoredAt === null ? null : Math.max(restoredAt, back.at);
  }
  return { first, restoredAt };
}

/** The spans a run's traffic is measured over, bucket-aligned (see PracticeTraffic). */
interface Spans {
  before: [number, number];
  held: [number, number];
  acting: [number, number];
}

function spansOf(o: WindowOccurrence, first: number, until: number): Spans {
  const F = Math.floor(first / BUCKET_MS) * BUCKET_MS;
  const stop = Math.min(o.aborted?.at ?? o.end, until);
  const held0 = Math.ceil(o.start / BUCKET_MS) * BUCKET_MS;
  return { before: [F - 300_000, F], held: [held0, Math.max(held0, Math.floor(stop / BUCKET_MS) * BUCKET_MS)], acting: [F, Math.max(F, Math.ceil(until / BUCKET_MS) * BUCKET_MS)] };
}

/** One stretch [from, to) of closed buckets, summed per span (a `practice.measured` entry; the demand store keeps an hour only). */
interface Chunk {
  from: number;
  to: number;
  before: number;
  held: number;
  acting: number;
  moved: number;
}

function measureChunk(p: Plan, o: WindowOccurrence, rows: readonly DemandBucket[], sp: Spans, from: number, to: number): Chunk {
  const c: Chunk = { from, to, before: 0, held: 0, acting: 0, moved: 0 };
  const inside = (b: number, [x, y]: [number, number]) => b >= x && b < y;
  for (const r of rows) {
    if (!o.regions.includes(r.home) || r.bucket < from || r.bucket >= to) continue;
    if (inside(r.bucket, sp.before)) c.before += r.queries;
    if (inside(r.bucket, sp.held)) c.held += r.queries;
    if (inside(r.bucket, sp.acting)) {
      c.acting += r.queries;
      c.moved += r.queries * (1 - meanShare(p, r.home, r.bucket, r.bucket + BUCKET_MS));
    }
  }
  c.moved = Math.round(c.moved * 1000) / 1000;
  return c;
}

function trafficOf(o: WindowOccurrence, sp: Spans, chunks: readonly Chunk[]): PracticeTraffic {
  const sum = (k: 'before' | 'held' | 'acting' | 'moved') => Math.round(chunks.reduce((n, c) => n + c[k], 0) * 1000) / 1000;
  const span = ([from, to]: [number, number], queries: number): PracticeSpan => ({ from, to, queries, qps: to > from ? Math.round((queries / ((to - from) / 1000)) * 1000) / 1000 : 0 });
  return { homes: [...o.regions], before: span(sp.before, sum('before')), held: span(sp.held, sum('held')), acting: { ...span(sp.acting, sum('acting')), moved: sum('moved') } };
}

/** How much closed demand a `practice.measured` entry covers at least (the store keeps an hour of buckets). */
const MEASURE_CHUNK_MS = 10 * 60_000;

/** Failing health probes anywhere in the fleet observed in [a, b). */
function probeErrorsIn(records: readonly SignalRecord[], a: number, b: number): PracticeProbeError[] {
  const out: PracticeProbeError[] = [];
  for (const { signal: sg } of records) {
    if (sg.kind !== 'health.probe' || sg.observedAt < a || sg.observedAt >= b) continue;
    const v = sg.value as HealthProbe;
    if (v.up) continue;
    out.push({ region: sg.region, source: sg.source, key: sg.key, at: sg.observedAt, ...(v.detail !== undefined ? { detail: v.detail } : {}) });
  }
  return out.sort((x, y) => x.at - y.at || (x.region + x.source + x.key < y.region + y.source + y.key ? -1 : 1));
}

const probeKey = (e: PracticeProbeError) => `${e.region}|${e.source}|${e.key}@${e.at}`;

/**
 * Records each practice run that is due (idempotent: what is in the audit log already is not
 * written again): what the plan decided (skipped and why, started, aborted and why), and what
 * was measured — failing health probes anywhere in the fleet while the run acts
 * (`practice.probe-failed`, at each run of the job that sees new ones: a probe that fails and
 * recovers between two runs of the job is not seen), the demand of the run's regions' clients
 * (`practice.measured`, every 10 minutes of closed buckets: the store keeps an hour of them),
 * and with `finished` (once its regions are back at full share and the demand bucket holding
 * that instant is closed) the measured demand before, held and moved, and every probe failure
 * seen.
 */
export async function recordPracticeRuns(d: HousekeepingDeps): Promise<{ outcome: 'ok'; detail: string }> {
  const p = d.plan();
  const now = d.clock();
  const runs = (p?.windows ?? []).filter((o) => o.kind === 'practice');
  if (!p || runs.length === 0) return { outcome: 'ok', detail: 'no practice run in the plan' };
  const log = await d.svc.audit(2000);
  const repeated = new Set(['practice.probe-failed', 'practice.measured']);
  const done = new Set(log.filter((e) => e.action.startsWith('practice.') && !repeated.has(e.action)).map((e) => `${e.action}|${e.target}`));
  /** Probe failures already recorded, per run; demand measured so far, per run. */
  const seen = new Map<string, Set<string>>();
  const chunks = new Map<string, Chunk[]>();
  for (const e of log) {
    if (e.action === 'practice.measured') (chunks.get(e.target) ?? chunks.set(e.target, []).get(e.target)!).push((e.after as { chunk: Chunk }).chunk);
    if (e.action !== 'practice.probe-failed') continue;
    const xs = (e.after as { probeErrors?: PracticeProbeError[] } | null)?.probeErrors ?? [];
    const set = seen.get(e.target) ?? seen.set(e.target, new Set()).get(e.target)!;
    for (const x of xs) set.add(probeKey(x));
  }
  let snapshot: StoreSnapshot | null = null;
  const snap = async () => (snapshot ??= await d.svc.snapshot());
  let written = 0;
  const write = async (action: string, o: WindowOccurrence, reason: string, after: Record<string, unknown>) => {
    const target = practiceTarget(o);
    if (!repeated.has(action) && done.has(`${action}|${target}`)) return;
    await d.svc.store.appendAudit({ at: now, actor: `automation/${d.node}`, action, target, reason, before: null, after: { window: o.window, regions: o.regions, start: o.start, end: o.end, ...after } });
    done.add(`${action}|${target}`);
    const count = (k: string, n: number) => d.practiceCounts?.set(k, (d.practiceCounts.get(k) ?? 0) + n);
    count(action, 1);
    // For the metrics: queries the runs moved (recorded with finished) and probe failures seen.
    const moved = (after.traffic as { acting?: { moved?: number } } | undefined)?.acting?.moved;
    if (typeof moved === 'number') count('practice.moved-queries', moved);
    const errors = after.probeErrors as unknown[] | undefined;
    if (action === 'practice.probe-failed' && Array.isArray(errors)) count('practice.probe-errors', errors.length);
    written++;
  };
  for (const o of runs) {
    if (o.skipped !== undefined) {
      if (o.start <= now) await write('practice.skipped', o, o.skipped, {});
      continue;
    }
    const target = practiceTarget(o);
    if (done.has(`practice.finished|${target}`)) continue;
    const { first, restoredAt } = actingSpan(p, o);
    if (first > now) continue;
    // Probe failures while the run acts, as they are seen (the signal records keep each probe's latest result only).
    const known = seen.get(target) ?? new Set<string>();
    const fresh = probeErrorsIn((await snap()).records, first, restoredAt ?? Number.POSITIVE_INFINITY).filter((e) => !known.has(probeKey(e)));
    if (fresh.length > 0) {
      await write('practice.probe-failed', o, `${fresh.length} failing health probe(s) during the practice run: ${fresh.map((e) => `${e.region} ${e.source} ${e.key}`).join(', ')}`, { probeErrors: fresh });
      for (const e of fresh) known.add(probeKey(e));
    }
    // Demand measured so far: closed buckets (ended a bucket ago: written by every node), in stretches of at least MEASURE_CHUNK_MS.
    const stop = o.aborted?.at ?? o.end;
    const restored = restoredAt !== null && restoredAt <= now;
    const finishing = o.start <= now && now >= stop && ((restored && now >= restoredAt + 2 * BUCKET_MS) || now >= o.end + 3_600_000);
    const until = restored ? restoredAt : Math.floor(now / BUCKET_MS) * BUCKET_MS - BUCKET_MS;
    const sp = spansOf(o, first, until);
    const had = chunks.get(target) ?? [];
    const measuredTo = had.reduce((m, c) => Math.max(m, c.to), sp.before[0]);
    const closedTo = Math.min(sp.acting[1], Math.floor(now / BUCKET_MS) * BUCKET_MS - BUCKET_MS);
    let last: Chunk | null = null;
    if (closedTo > measuredTo && (finishing || closedTo - measuredTo >= MEASURE_CHUNK_MS)) {
      last = measureChunk(p, o, (await snap()).demand, sp, measuredTo, closedTo);
      if (!finishing && (last.before > 0 || last.acting > 0)) await write('practice.measured', o, `demand measured ${new Date(measuredTo).toISOString()} – ${new Date(closedTo).toISOString()}`, { chunk: last });
    }
    if (o.start > now) continue;
    await write('practice.started', o, `${o.window}: ${o.reason}`, {});
    if (o.aborted && now >= o.aborted.at) await write('practice.aborted', o, o.aborted.why, { at: o.aborted.at });
    // Finished once restored and the bucket holding the restore is closed (and written: one more bucket), or an hour after its end regardless.
    if (finishing) {
      const errors = [...new Map([...recordedProbeErrors(log, target), ...probeErrorsIn((await snap()).records, first, until)].map((e) => [probeKey(e), e])).values()].sort((x, y) => x.at - y.at);
      await write('practice.finished', o, restored ? 'restored' : 'not restored an hour after its end', {
        share: leastShare(p, o, stop),
        restored,
        ...(restored ? { restoredAt } : {}),
        aborted: o.aborted ?? null,
        traffic: trafficOf(o, sp, [...had, ...(last ? [last] : [])]),
        probeErrors: errors,
      });
    }
  }
  return { outcome: 'ok', detail: written === 0 ? 'nothing new to record' : `${written} outcome(s) recorded` };
}

/** The probe failures the `practice.probe-failed` entries of a run hold. */
function recordedProbeErrors(log: readonly AuditEntry[], target: string): PracticeProbeError[] {
  return log.filter((e) => e.action === 'practice.probe-failed' && e.target === target).flatMap((e) => (e.after as { probeErrors?: PracticeProbeError[] }).probeErrors ?? []);
}

/** Practice runs from the audit log, newest first. */
export function practiceRuns(entries: readonly AuditEntry[]): PracticeRunView[] {
  const by = new Map<string, PracticeRunView>();
  for (const e of [...entries].sort((a, b) => a.seq - b.seq)) {
    if (!e.action.startsWith('practice.')) continue;
    const a = e.after as { window: string; regions: string[]; start: number; end: number; share?: number; restored?: boolean; restoredAt?: number; traffic?: PracticeTraffic; probeErrors?: PracticeProbeError[] };
    const cur = by.get(e.target) ?? { window: a.window, regions: a.regions, start: a.start, end: a.end, outcome: 'started' as const, recordedBy: e.actor };
    switch (e.action) {
      case 'practice.skipped':
        Object.assign(cur, { outcome: 'skipped', why: e.reason });
        break;
      case 'practice.aborted':
        Object.assign(cur, { outcome: 'aborted', why: e.reason });
        break;
      case 'practice.probe-failed': {
        const all = new Map([...(cur.probeErrors ?? []), ...(a.probeErrors ?? [])].map((x) => [probeKey(x), x]));
        cur.probeErrors = [...all.values()].sort((x, y) => x.at - y.at);
        break;
      }
      case 'practice.finished':
        Object.assign(cur, {
          ...(cur.outcome === 'aborted' ? {} : { outcome: 'finished' }),
          share: a.share,
          restored: a.restored,
          ...(a.restoredAt !== undefined ? { restoredAt: a.restoredAt } : {}),
          ...(a.traffic ? { traffic: a.traffic } : {}),
          ...(a.probeErrors ? { probeErrors: a.probeErrors } : {}),
        });
        break;
    }
    by.set(e.target, cur);
  }
  return [...by.values()].sort((x, y) => y.start - x.start);
}

/** How many audit entries audit-trim reads at most per run (the rest go at the next run). */
const TRIM_SCAN = 200_000;

/** audit-trim's run: export what is older than the retention (if configured), then trim it. */
export async function trimAudit(d: HousekeepingDeps, a: AuditTrim, ctx?: JobContext): Promise<{ outcome: 'ok' | 'failed'; detail: string }> {
  if (!(a.retentionMs > 0)) return { outcome: 'ok', detail: 'housekeeping.auditRetentionDays is 0: everything is kept' };
  const cutoff = d.clock() - a.retentionMs;
  const all = await d.svc.audit(TRIM_SCAN);
  // The oldest entries come last: with more than the scan reads, they could go unexported.
  if (a.exportFile && all.length >= TRIM_SCAN) return { outcome: 'failed', detail: `the audit log holds more than ${TRIM_SCAN} entries: export them by hand (GET /v1/audit) and trim, or raise the retention` };
  const old = all.filter((e) => e.at < cutoff).sort((x, y) => x.seq - y.seq);
  if (old.length === 0) return { outcome: 'ok', detail: `nothing older than ${new Date(cutoff).toISOString()}` };
  await ctx?.changing();
  if (a.exportFile) {
    mkdirSync(dirname(a.exportFile), { recursive: true });
    appendFileSync(a.exportFile, old.map((e) => JSON.stringify(e)).join('\n') + '\n');
    const fd = openSync(a.exportFile, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
  // Trim up to the newest exported entry only: one written meanwhile is not lost unexported.
  const upTo = Math.min(cutoff, Math.max(...old.map((e) => e.at)) + 1);
  const { removed } = await d.svc.store.trimAudit(upTo);
  return { outcome: 'ok', detail: `removed ${removed} audit entr${removed === 1 ? 'y' : 'ies'} older than ${new Date(cutoff).toISOString()}${a.exportFile ? ` (exported first to ${a.exportFile})` : ''}` };
}

/** verify-hooks' run: one attempt per hooked region (its timeout), all regions in parallel. */
export async function verifyHooks(d: HousekeepingDeps, h: HookCheck): Promise<{ outcome: 'ok' | 'failed'; detail: string }> {
  const hooks = h.hooks();
  if (hooks.size === 0) return { outcome: 'ok', detail: 'no drain hook to check (none configured, or housekeeping.verifyHooks is false)' };
  const p = d.plan();
  if (!p) return { outcome: 'ok', detail: 'no plan yet' };
  const now = d.clock();
  const results = await Promise.all(
    [...hooks].sort(([a], [b]) => (a < b ? -1 : 1)).map(async ([region, hook]) => {
      const call = dueDrainHookCall(p, region, null, now)!;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(hook.headers ?? {})) if (!RESERVED_HEADERS.includes(k.toLowerCase())) headers[k] = v;
      headers['content-type'] = 'application/json';
      headers['idempotency-key'] = call.payload.id;
      headers['user-agent'] ??= 'gridsteer-drain-hook';
      if (hook.tokenEnv !== undefined) {
        const token = bearerToken(h.env, hook.tokenEnv);
        if (token.error !== undefined) return { region, ok: false, words: `${region}: ${token.error}` };
        headers.authorization = `Bearer ${token.token}`;
      }
      const r = await postOnce(hook.url, headers, JSON.stringify(call.payload), hook.timeoutMs ?? DRAIN_HOOK_DEFAULTS.timeoutMs, new AbortController().signal);
      if (r.outcome === 'ok') return { region, ok: true, words: `${region} ok (HTTP ${r.status}, ${call.payload.id})` };
      return { region, ok: false, words: `${region} ${r.outcome}: ${'error' in r ? r.error : 'stopped'}` };
    }),
  );
  const bad = results.filter((r) => !r.ok);
  return { outcome: bad.length === 0 ? 'ok' : 'failed', detail: results.map((r) => r.words).join('; ') };
}

/** The housekeeping jobs of a node. */
export function housekeepingJobs(d: HousekeepingDeps): JobDef[] {
  return [
    {
      name: 'gc-signals',
      cron: '17 * * * *',
      what: 'remove signal records expired a day past their stale keep whose removal leaves the plan identical from now on',
      async run(ctx) {
        const now = d.clock();
        const { configHash, settings, horizonEpoch } = d.svc.planInputs();
        const snapshot = await d.svc.snapshot();
        const { remove, candidates, kept } = collectable({ configHash, snapshot, settings, horizonEpoch }, now, GC_RETENTION_MS);
        if (remove.length > 0) await ctx.changing();
        const { removed } = remove.length > 0 ? await d.svc.store.removeSignals(remove) : { removed: 0 };
        return { outcome: 'ok', detail: `removed ${removed} of ${candidates} long-expired record(s)${kept > 0 ? `; ${kept} kept (removing them would change the plan)` : ''}` };
      },
    },
    ...(d.auditTrim
      ? [
          {
            name: 'audit-trim',
            cron: '23 3 * * *',
            what: 'remove audit entries older than housekeeping.auditRetentionDays, exported first to housekeeping.auditExport when set',
            run: (ctx) => trimAudit(d, d.auditTrim!(), ctx),
          } satisfies JobDef,
        ]
      : []),
    ...(d.hookCheck
      ? [
          {
            name: 'verify-hooks',
            cron: '*/15 * * * *',
            what: "re-send each hooked region's state in force to its drain hook (the runner's id: applied once) and report a hook that does not answer 2xx",
            run: () => verifyHooks(d, d.hookCheck!),
          } satisfies JobDef,
        ]
      : []),
    ...(d.geo
      ? [
          {
            name: 'geoip-check',
            cron: '41 * * * *',
            perNode: true,
            what: "re-check this node's GeoIP database file; a changed file is compiled into a new table in the background",
            async run() {
              const geo = d.geo!;
              if (geo.state.database === null && geo.state.error === null) return { outcome: 'ok' as const, detail: 'no GeoIP database configured (geoip.enabled false)' };
              const before = geo.state.version;
              await geo.refresh('housekeeping: geoip-check');
              const s = geo.state;
              if (s.error) return { outcome: 'failed' as const, detail: s.error };
              return { outcome: 'ok' as const, detail: s.version !== before ? `a newer database: table ${s.version} in force` : s.building !== null ? 'a newer database: compiling' : `unchanged (table ${s.version})` };
            },
          } satisfies JobDef,
        ]
      : []),
    {
      name: 'practice-runs',
      cron: '* * * * *',
      what: 'record each practice run\'s outcome (skipped, started, aborted, finished) from the plan in the audit log',
      run: () => recordPracticeRuns(d),
    },
  ];
}
