/**
 * Recurring windows at the edge (docs/schedules.md, ADR 0015): a window as written (the
 * config's `windows:` entry, the API's body) checked with node-cron's detailed validation and
 * Intl's time zones, and turned into the planner's plain form (PlannerWindow: the expression
 * parsed by node-cron, so the pure planner never imports it). Used by the config loader
 * (load.ts) and by the API's window routes, so both say the same thing about the same input.
 */
import cron from 'node-cron';
import { durationMs, windowExceedsLimits, MAX_WINDOW_MS, type PlannerWindow, type SafetyFacts, type WindowSpec } from '../model/windows.js';

/** One problem with a window: the field (relative to the window, e.g. `cron`), and what is wrong, with the fix. */
export interface WindowProblem {
  path: (string | number)[];
  message: string;
}

/** A problem's path as a field name: `regions[0]`. */
export function fieldOf(path: readonly (string | number)[]): string {
  return path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('').replace(/^\./, '');
}

/** The safety facts of a configuration (policy.drain's limits, capacity units, the names and their regions). */
export function safetyFactsOf(c: { policy: { drain: { maxAutoShare: number; minDrainIntervalMs: number } }; names: { name: string; regions?: string[] }[] }, regions: readonly { id: string; capacity?: { units?: number } }[]): SafetyFacts {
  const all = regions.map((r) => r.id);
  return {
    maxAutoShare: c.policy.drain.maxAutoShare,
    minDrainIntervalMs: c.policy.drain.minDrainIntervalMs,
    units: Object.fromEntries(regions.map((r) => [r.id, r.capacity?.units ?? 1])),
    names: c.names.length > 0 ? c.names.map((n) => ({ name: n.name, regions: n.regions ?? all })) : [{ name: 'the fleet', regions: all }],
  };
}

/** Whether Intl knows the time zone (the Node build's tz data). */
export function knownTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks a window (already valid against WindowSpecSchema) and makes its planner form, or
 * lists every problem: the cron expression (node-cron's validateDetailed: the message names
 * the cron field and the bad part), the time zone, the duration, from/until, the regions
 * (`regions` = the fleet's ids) and, for maintenance, the safety limits without `force`.
 */
export function checkWindow(w: WindowSpec, regions: ReadonlySet<string>, safety: SafetyFacts, source: 'config' | 'api', learnedAt?: number): { window?: PlannerWindow; problems: WindowProblem[] } {
  const problems: WindowProblem[] = [];
  const v = cron.validateDetailed(w.cron);
  if (!v.valid || !v.fields) {
    for (const e of v.errors) {
      const part = e.field === 'expression' ? 'the expression' : `its ${e.field} field`;
      problems.push({
        path: ['cron'],
        message: `"${w.cron}" is not a cron expression node-cron accepts: ${part}${e.value !== undefined && e.field !== 'expression' ? ` ("${e.value}")` : ''}: ${e.message}; write minute hour day-of-month month day-of-week, e.g. "0 2 * * sun"`,
      });
    }
    if (v.errors.length === 0) problems.push({ path: ['cron'], message: `"${w.cron}" is not a cron expression node-cron accepts; write minute hour day-of-month month day-of-week, e.g. "0 2 * * sun"` });
  } else if (v.fields.second.length !== 1 || v.fields.second[0] !== 0) {
    problems.push({ path: ['cron'], message: `"${w.cron}": its second field must be 0 (windows start on whole minutes): drop the seconds field` });
  }
  if (!knownTimeZone(w.timezone)) {
    problems.push({ path: ['timezone'], message: `"${w.timezone}" is not a time zone this build knows (tz data ${process.versions.tz ?? 'unknown'}): use an IANA name such as Europe/Dublin or America/Chicago` });
  }
  const ms = durationMs(w.duration);
  if (!(ms >= 60_000)) problems.push({ path: ['duration'], message: `"${w.duration}" is not a duration of at least a minute: write e.g. 2h, 90m or 3h30m` });
  else if (ms > MAX_WINDOW_MS) problems.push({ path: ['duration'], message: `"${w.duration}" is longer than 7 days: split it into shorter windows` });
  if (w.from !== undefined && w.until !== undefined && w.until < w.from) problems.push({ path: ['until'], message: `${w.until} is before from (${w.from}): no occurrence could start` });
  w.regions.forEach((r, i) => {
    if (!regions.has(r)) problems.push({ path: ['regions', i], message: `unknown region "${r}": use one of ${[...regions].sort().join(', ') || '(none)'}` });
  });
  if (w.minCapacityLeft !== undefined && w.kind !== 'practice') problems.push({ path: ['minCapacityLeft'], message: `applies to practice runs only (this is a ${w.kind} window): leave it out` });
  if (w.force !== undefined && w.kind !== 'maintenance') problems.push({ path: ['force'], message: `applies to maintenance windows only (a ${w.kind} window is automation, always under the safety limits): leave it out` });
  if (w.kind === 'maintenance' && w.force !== true) {
    const excess = windowExceedsLimits(w, safety);
    if (excess) problems.push({ path: ['force'], message: `this maintenance window exceeds the automation's safety limits: ${excess}; set force: true to confirm it (audited), or drain fewer regions` });
  }
  if (problems.length > 0 || !v.fields) return { problems };
  const f = v.fields;
  const window: PlannerWindow = {
    id: w.id,
    kind: w.kind,
    regions: [...w.regions],
    cron: w.cron,
    fields: { minute: [...f.minute], hour: [...f.hour], dayOfMonth: [...f.dayOfMonth], month: [...f.month], dayOfWeek: [...f.dayOfWeek] },
    timezone: w.timezone,
    durationMs: ms,
    cap: w.cap,
    reason: w.reason,
    blockedDates: [...(w.blockedDates ?? [])].sort(),
    ...(w.from !== undefined ? { from: w.from } : {}),
    ...(w.until !== undefined ? { until: w.until } : {}),
    ...(w.force !== undefined ? { force: w.force } : {}),
    ...(w.kind === 'practice' ? { minCapacityLeft: w.minCapacityLeft ?? 0.5 } : {}),
    source,
    ...(learnedAt !== undefined ? { learnedAt } : {}),
  };
  return { window, problems };
}
