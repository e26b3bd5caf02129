/**
 * The housekeeping jobs (docs/schedules.md "Housekeeping jobs"), run by JobRunner (jobs.ts):
 * - `gc-signals` (hourly): removes signal records expired for longer than their stale keep
 *   plus a day, only those whose removal leaves the plan identical from now on
 *   (gslb/policy/gc.ts), compare-and-delete in the store;
 * - `practice-runs` (every minute): records each practice run's outcome in the audit log —
 *   skipped (why), started, aborted (why), finished — from the plan in force, which decides them
 *   (gslb/policy/rules/practice.ts); GET /v1/practice-runs reads them back.
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
import type { Plan } from '../model/types.js';
import type { AuditEntry } from '../model/snapshot.js';
import type { WindowOccurrence } from '../model/windows.js';
import { collectable } from '../policy/gc.js';
import type { JobContext, JobDef } from './jobs.js';
import type { DrainHookConfig } from '../config/drain-hook.js';
import { bearerToken, DRAIN_HOOK_DEFAULTS, dueDrainHookCall, postOnce, RESERVED_HEADERS } from './hooks.js';
import type { StateService } from './service.js';

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

/** Records what the plan decided of each practice run that is due (idempotent: what is in the audit log already is not written again). */
export async function recordPracticeRuns(d: HousekeepingDeps): Promise<{ outcome: 'ok'; detail: string }> {
  const p = d.plan();
  const now = d.clock();
  const runs = (p?.windows ?? []).filter((o) => o.kind === 'practice');
  if (!p || runs.length === 0) return { outcome: 'ok', detail: 'no practice run in the plan' };
  const log = await d.svc.audit(2000);
  const done = new Set(log.filter((e) => e.action.startsWith('practice.')).map((e) => `${e.action}|${e.target}`));
  let written = 0;
  const write = async (action: string, o: WindowOccurrence, reason: string, after: Record<string, unknown>) => {
    const target = practiceTarget(o);
    if (done.has(`${action}|${target}`)) return;
    await d.svc.store.appendAudit({ at: now, actor: `automation/${d.node}`, action, target, reason, before: null, after: { window: o.window, regions: o.regions, start: o.start, end: o.end, ...after } });
    done.add(`${action}|${target}`);
    d.practiceCounts?.set(action, (d.practiceCounts.get(action) ?? 0) + 1);
    written++;
  };
  for (const o of runs) {
    if (o.start > now) continue;
    if (o.skipped !== undefined) {
      await write('practice.skipped', o, o.skipped, {});
      continue;
    }
    await write('practice.started', o, `${o.window}: ${o.reason}`, {});
    const stop = o.aborted?.at ?? o.end;
    if (o.aborted && now >= o.aborted.at) await write('practice.aborted', o, o.aborted.why, { at: o.aborted.at });
    if (now >= stop) {
      const restored = o.regions.every((r) => shareAt(p, r, now) === 1);
      if (restored || now >= o.end + 3_600_000) await write('practice.finished', o, restored ? 'restored' : 'not restored an hour after its end', { share: leastShare(p, o, stop), restored, aborted: o.aborted ?? null });
    }
  }
  return { outcome: 'ok', detail: written === 0 ? 'nothing new to record' : `${written} outcome(s) recorded` };
}

/** Practice runs from the audit log, newest first. */
export function practiceRuns(entries: readonly AuditEntry[]): PracticeRunView[] {
  const by = new Map<string, PracticeRunView>();
  for (const e of [...entries].sort((a, b) => a.seq - b.seq)) {
    if (!e.action.startsWith('practice.')) continue;
    const a = e.after as { window: string; regions: string[]; start: number; end: number; share?: number; restored?: boolean };
    const cur = by.get(e.target) ?? { window: a.window, regions: a.regions, start: a.start, end: a.end, outcome: 'started' as const, recordedBy: e.actor };
    switch (e.action) {
      case 'practice.skipped':
        Object.assign(cur, { outcome: 'skipped', why: e.reason });
        break;
      case 'practice.aborted':
        Object.assign(cur, { outcome: 'aborted', why: e.reason });
        break;
      case 'practice.finished':
        Object.assign(cur, { ...(cur.outcome === 'aborted' ? {} : { outcome: 'finished' }), share: a.share, restored: a.restored });
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
