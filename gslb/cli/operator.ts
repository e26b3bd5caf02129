/**
 * The operator's commands against a running server:
 *
 *   gridsteer drain <region> --reason TEXT [--cap SHARE] [--ramp DURATION] [--by WHEN]
 *   gridsteer undrain <region> --reason TEXT
 *   gridsteer force <region> up|down [--until WHEN] --reason TEXT
 *   gridsteer force <region> clear --reason TEXT
 *   gridsteer freeze on|off --reason TEXT [--until WHEN]
 *   gridsteer distrust <source|principal> on|off --reason TEXT [--until WHEN]
 *   gridsteer status
 *   gridsteer store [confirm-loss --reason TEXT]
 *   gridsteer quarantine [release|drop <target> --reason TEXT]
 *   gridsteer preview drain|undrain|force|event|freeze …
 *   gridsteer windows list | add <id> … | remove <id> --reason TEXT | skip-next <id> --reason TEXT
 *
 * (POST/DELETE /v1/regions/:id/drain, POST/DELETE /v1/regions/:id/force, POST /v1/automation/freeze,
 * GET /v1/status, GET /v1/store, POST /v1/store/confirm-loss, GET /v1/quarantine, POST /v1/quarantine/release|drop, POST /v1/plan/preview.) Each takes --server, --token, --json and --help like
 * `gridsteer explain`. Durations are `90s`, `2m`, `1h30m`; a WHEN is ISO 8601 with a zone
 * (`2026-12-01T14:00Z`) or `+DURATION` from now.
 *
 * Exit codes: 0 done; 1 the server is unreachable or refused (its message, code and field are
 * printed); 2 usage error (with the command's usage).
 */
import { parseArgs } from 'node:util';
import { INSTANT_MAX, INSTANT_MIN, MAX_DURATION_MS, isoOf } from '../model/domains.js';
import type { Override } from '../model/types.js';
import type { FleetStatus, Preview } from '../control/operator.js';
import type { GridEventView } from '../control/fleet.js';
import { GRID_EVENT_PHASE_TABLE, isHistory } from '../model/grid-event-phase.js';
import type { WindowListing } from '../control/windows.js';
import type { WindowOccurrence } from '../model/windows.js';
import { CONNECTION_OPTIONS, callApi, connection, connectionUsage, defaultIo, type ApiRequest, type CliIo, type Connection } from './http.js';

// ---------------------------------------------------------------------------------------
// The API's shapes (as far as the CLI reads them)

/** An override as the API returns it. */
export type OverrideView = Override;

/** GET /v1/status, with the drain hooks' last calls when a region has a hook. */
export type StatusView = Omit<FleetStatus, 'hooks'> & { hooks?: { regions?: Record<string, HookView> } };

/**
 * One region's drain hook in GET /v1/status (gslb/control/hooks.ts DrainHookRegionStatus), read
 * leniently: the CLI prints whatever phase and outcome words the server sends.
 */
export interface HookView {
  url: string;
  lastCall: { phase: string; share: number; refuseNewStreams: boolean; outcome: string; at: number; httpStatus: number | null; error: string | null } | null;
  lastSuccessAt?: number | null;
}

/** A data loss in GET /v1/store (gslb/state/store.ts StoreLoss). */
export interface StoreLossView {
  detectedAt: number;
  seenRevision: number;
  revision: number;
  why: string;
}

/** GET /v1/store. */
export interface StoreView {
  backend: string;
  ready: boolean;
  stale: boolean;
  detail: string;
  loss: StoreLossView | null;
  losses: number;
}

/** A data loss held, in `gridsteer store` and `gridsteer status`: what was seen, since when, and what confirms it. */
export function lossLines(loss: StoreLossView, now: number): string[] {
  return [
    `DATA LOSS seen ${formatInstant(loss.detectedAt)} (${formatRelative(loss.detectedAt, now)}): ${loss.why}`,
    `  this node serves its plan of revision ${loss.seenRevision} until confirmed: put back what was lost, then`,
    '  gridsteer store confirm-loss --reason "…"',
  ];
}

/** The lines of `gridsteer store`. */
export function storeLines(s: StoreView, now: number): string[] {
  const lines = [`${s.backend} store: ${s.detail}`];
  if (s.loss) lines.push(...lossLines(s.loss, now));
  else if (s.losses > 0) lines.push(`${s.losses} data loss(es) seen since this node started, all confirmed`);
  return lines;
}

/** One entry of GET /v1/quarantine (gslb/model/snapshot.ts QuarantineEntry). */
export interface QuarantineEntryView {
  target: string;
  fingerprint: string;
  why: string;
  at: number;
  by: string;
}

/** GET /v1/quarantine. */
export interface QuarantineView {
  held: QuarantineEntryView[];
  idle: number;
  planError: string | null;
}

/** The lines of `gridsteer quarantine`. */
export function quarantineLines(q: QuarantineView, now: number): string[] {
  const lines: string[] = [];
  if (q.planError) lines.push(`PLANNING FAILS and no stored record is to blame: ${q.planError}`, '  this node answers from its last good plan; check the configuration and the logs');
  if (q.held.length === 0) lines.push('nothing is quarantined: every stored record is planned');
  else {
    lines.push(`${q.held.length} stored record${q.held.length === 1 ? ' is' : 's are'} held out of planning (every node plans without ${q.held.length === 1 ? 'it' : 'them'}):`);
    for (const e of q.held) lines.push(`  ${e.target}`, `    ${e.why}`, `    found ${formatRelative(e.at, now)} by ${e.by}`);
    lines.push('fix the source, then: gridsteer quarantine release <target> --reason "…" (plan with it again)', '              or: gridsteer quarantine drop <target> --reason "…" (delete it; audited)');
  }
  if (q.idle > 0) lines.push(`${q.idle} entr${q.idle === 1 ? 'y holds' : 'ies hold'} nothing any more (the record is gone or was written again): released by the next plan`);
  return lines;
}

/** POST /v1/plan/preview. */
export type PreviewView = Omit<Preview, 'plan'> & { plan?: Preview['plan'] };

// ---------------------------------------------------------------------------------------
// Durations, instants, shares: parsing and wording

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `90s`, `2m`, `1h30m`, `1.5h`, `500ms`, `2d` or `0` → milliseconds (an integer);
 * throws an Error whose message says what is accepted.
 */
export function parseDuration(text: string): number {
  const s = text.trim().toLowerCase();
  if (/^0+$/.test(s)) return 0;
  const parts = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/.test(s) ? [...s.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)] : [];
  if (parts.length === 0) throw new Error(`"${text}" is not a duration like 90s, 2m, 1h or 1h30m`);
  let ms = 0;
  for (const p of parts) ms += Number(p[1]) * UNIT_MS[p[2]!]!;
  if (!(ms <= MAX_DURATION_MS)) throw new Error(`"${text}" is longer than any duration GridSteer takes (100 years)`);
  return Math.round(ms);
}

const ISO_RE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

/**
 * `--by`, `--until`, `--start`, `--end`: ISO 8601 with a time and a zone (`2026-12-01T14:00Z`,
 * `2026-12-01T15:00:00+01:00`), or `+DURATION` from `now` (`+30m`), or `now` → ms epoch.
 * Without a zone the instant would depend on this machine's, so that is refused.
 */
export function parseWhen(text: string, now: number): number {
  const t = whenOf(text, now);
  if (t < INSTANT_MIN || t > INSTANT_MAX) throw new Error(`"${text}" is ${isoOf(t)}, outside the instants GridSteer takes (2000-01-01 to 2200-01-01)`);
  return t;
}

function whenOf(text: string, now: number): number {
  const s = text.trim();
  if (s.toLowerCase() === 'now') return now;
  if (s.startsWith('+')) return now + parseDuration(s.slice(1));
  if (ISO_RE.test(s)) {
    const t = Date.parse(s.replace(' ', 'T').replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
    if (Number.isFinite(t)) return t;
  }
  if (/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$/i.test(s)) {
    throw new Error(`"${text}" has no time zone: add Z (UTC) or an offset, e.g. 2026-12-01T14:00Z or 2026-12-01T15:00+01:00`);
  }
  throw new Error(`"${text}" is neither an ISO 8601 instant like 2026-12-01T14:00Z nor +DURATION like +30m`);
}

/** `0.3`, `30%` → 0.3; a share of traffic in [0, 1]. */
export function parseShare(text: string): number {
  const s = text.trim();
  const pct = s.endsWith('%');
  const n = Number(pct ? s.slice(0, -1) : s);
  const v = pct ? n / 100 : n;
  if (s === '' || s === '%' || !Number.isFinite(v) || v < 0 || v > 1) throw new Error(`"${text}" is not a share between 0 and 1 (or 0% and 100%)`);
  return v;
}

/**
 * 90_000 → `1m 30s`, 3_775_000 → `1h 2m 55s`: to the second, zero units left out, at most
 * three units (the third rounded); below a second, `ms`.
 */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)}ms`;
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  const first = units.findIndex(([, u]) => abs >= u);
  const shown = units.slice(first, first + 3);
  const step = shown[shown.length - 1]![1];
  let rest = Math.round(abs / step) * step;
  const parts: string[] = [];
  for (const [name, u] of shown) {
    const n = Math.floor(rest / u);
    rest -= n * u;
    if (n > 0) parts.push(`${n}${name}`);
  }
  return parts.join(' ');
}

/** `in 2m 30s`, `now`, `5m ago` (to the second). */
export function formatRelative(at: number, now: number): string {
  const d = Math.round((at - now) / 1000) * 1000;
  if (d === 0) return 'now';
  return d > 0 ? `in ${formatDuration(d)}` : `${formatDuration(d)} ago`;
}

/** ms epoch → `2026-12-01T14:00:00Z` (to the second). */
export function formatInstant(t: number): string {
  return new Date(Math.floor(t / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * 0.3 → `30%`, 0.025 → `2.5%`, 0.333 → `33%`: whole percents from 10 % up, one decimal below;
 * a share that is neither 0 nor 1 never shows as `0%` or `100%`.
 */
export function formatShare(share: number): string {
  const p = share * 100;
  if (Number.isInteger(p)) return `${p}%`;
  if (p > 0 && p < 0.05) return '<0.1%';
  if (p > 99.95 && p < 100) return '>99.9%';
  const r = Math.round(p);
  if (p >= 10 && r !== 100) return `${r}%`;
  return `${p.toFixed(1).replace(/\.0$/, '')}%`;
}

/** An override in words, e.g. `drain us-va to 30% over 2m, done by 2026-12-01T14:00:00Z (in 2h)`. */
export function describeOverride(o: OverrideView, now: number): string {
  const when = (t: number) => `${formatInstant(t)} (${formatRelative(t, now)})`;
  const ramp = o.ramp > 0 ? ` over ${formatDuration(o.ramp)}` : ' at once';
  const start = o.start > now + 1000 ? `, from ${when(o.start)}` : '';
  const end = o.end !== undefined ? `, until ${when(o.end)}` : '';
  let what: string;
  switch (o.action) {
    case 'drain':
      // With a deadline and no ramp of its own, the server places its policy's ramp before it.
      what = `drain ${o.region} ${o.value ? `to ${formatShare(o.value)} of its traffic` : 'fully'}${o.by !== undefined && o.ramp === 0 ? '' : ramp}${o.by !== undefined ? `, done by ${when(o.by)}` : ''}`;
      break;
    case 'undrain':
      what = `undrain ${o.region}: back ${o.value !== undefined ? `from ${formatShare(o.value)} ` : ''}to full${o.ramp > 0 ? ` over ${formatDuration(o.ramp)} (slow start)` : ' at once'}`;
      break;
    case 'force-up':
      what = `force ${o.region} up (its health is ignored)`;
      break;
    case 'force-down':
      what = `force ${o.region} down (it takes no traffic)`;
      break;
    case 'weight':
      what = `weight ${o.region} ${o.value ?? '?'}${ramp}`;
      break;
    case 'freeze': {
      // The automated caps it holds (regions held at 100 % say nothing).
      const held = Object.entries(o.hold ?? {}).filter(([, v]) => v < 1);
      what = `freeze automation fleet-wide${held.length > 0 ? `, holding ${held.map(([r, v]) => `${r} at ${formatShare(v)}`).join(', ')}` : ''}`;
      break;
    }
    case 'distrust':
      what = o.principal !== undefined ? `distrust principal ${o.principal} (every claim of physical loss it wrote no longer bypasses the safety limits)` : `distrust grid source ${o.source ?? '?'} (its claims of physical loss no longer bypass the safety limits)`;
      break;
    case 'window': {
      const w = o.window;
      what = w ? `${w.kind} window ${w.id}: ${w.regions.join(', ')} ${w.cap > 0 ? `capped at ${formatShare(w.cap)}` : 'drained'} at "${w.cron}" (${w.timezone}) for ${formatDuration(w.durationMs)}` : 'window';
      return what;
    }
    case 'window-skip':
      return o.skip ? `skip window ${o.skip.window}'s occurrence at ${when(o.skip.at)}` : 'window skip';
    default:
      what = `${o.action} ${o.region}`;
  }
  return `${what}${start}${end}`;
}

function overrideLines(verb: string, o: OverrideView, now: number): string[] {
  return [`${verb} ${o.id}: ${describeOverride(o, now)}`, `  by ${o.actor}: "${o.reason}"`];
}

// ---------------------------------------------------------------------------------------
// Tables

/** Columns two spaces apart; `right` lists the columns aligned right. Trailing blanks trimmed. */
export function alignTable(rows: string[][], right: number[] = []): string[] {
  const n = Math.max(...rows.map((r) => r.length));
  const widths = Array.from({ length: n }, (_, i) => Math.max(...rows.map((r) => [...(r[i] ?? '')].length)));
  return rows.map((r) =>
    r
      .map((c, i) => {
        const pad = ' '.repeat(widths[i]! - [...c].length);
        return right.includes(i) ? pad + c : c + pad;
      })
      .join('  ')
      .trimEnd(),
  );
}

function cut(s: string, width: number | undefined): string {
  if (width === undefined || [...s].length <= width) return s;
  return [...s].slice(0, Math.max(1, width - 1)).join('') + '…';
}

/**
 * The status report: the plan, a data loss of the store held (not cut), the freeze, one row per
 * region (share, state, the TTL its answers carry now, the next change, the first reason) and
 * demand no region could take. `columns` (a terminal's width) cuts long lines with `…`.
 */
export function renderStatus(s: StatusView, columns?: number): string {
  const lines: string[] = [];
  lines.push(`plan ${s.planVersion} at ${formatInstant(s.now)}`);
  if (s.storeLoss) {
    lines.push(...lossLines(s.storeLoss, s.now));
    if (s.regions.some((r) => r.reasons.some((x) => x.includes('[ended]')))) lines.push("  the plan's reasons say [ended] for an override the store no longer holds");
  }
  if (s.planError) lines.push(`PLANNING FAILS (${s.planError}): this node answers from its last good plan; no stored record is to blame (gridsteer quarantine, the logs)`);
  if (s.frozen) {
    const f = s.frozen;
    lines.push(`automation: FROZEN by ${f.actor} ${formatRelative(f.start, s.now)}${f.end !== undefined ? `, until ${formatInstant(f.end)} (${formatRelative(f.end, s.now)})` : ', until unfrozen'}: "${f.reason}"`);
  } else lines.push('automation: running (not frozen)');
  lines.push('');
  const rows: string[][] = [['REGION', 'SHARE', 'STATE', 'TTL', 'NEXT', 'REASON']];
  for (const r of s.regions) {
    const next = r.next ? `${formatRelative(r.next.at, s.now)} → ${r.next.down ? 'down' : formatShare(r.next.share)}${r.next.ifNotRefreshed ? ' if stale' : ''}` : '-';
    const more = r.reasons.length > 1 ? ` (+${r.reasons.length - 1} more)` : '';
    rows.push([r.id, r.down ? '-' : formatShare(r.share), r.state, r.ttl === undefined ? '-' : `${r.ttl}s`, next, r.reasons.length > 0 ? `${r.reasons[0]}${more}` : '-']);
  }
  for (const line of alignTable(rows, [1])) lines.push(cut(line, columns));
  const hooks = Object.entries(s.hooks?.regions ?? {});
  if (hooks.length > 0) {
    lines.push('');
    lines.push('drain hooks (last call):');
    const hookRows = hooks.map(([region, h]) => {
      const c = h.lastCall;
      if (!c) return [region, 'no call yet', '', '', h.url];
      const what = `${c.phase}, share ${formatShare(c.share)}${c.refuseNewStreams ? ', refuse new streams' : ''}`;
      const outcome = `${c.outcome}${c.httpStatus !== null ? ` (HTTP ${c.httpStatus})` : ''}${c.error ? `: ${c.error}` : ''}`;
      return [region, what, outcome, formatRelative(c.at, s.now), h.url];
    });
    for (const line of alignTable(hookRows)) lines.push(cut(`  ${line}`, columns));
  }
  if (s.alerts && s.alerts.length > 0) {
    lines.push('');
    lines.push('alerts:');
    for (const a of s.alerts) {
      const when = a.at > s.now ? ` (starts ${formatRelative(a.at, s.now)}${a.actBy !== undefined && a.actBy > s.now ? `; act ${formatRelative(a.actBy, s.now)} for a full proactive drain` : ''})` : '';
      lines.push(cut(`  ${a.severity.toUpperCase()} ${a.kind}${when}: ${a.message}`, columns));
    }
  }
  const unplaced = Object.entries(s.unplaced ?? {}).filter(([, q]) => q > 0);
  if (unplaced.length > 0) {
    lines.push('');
    lines.push(`unplaced demand (no region with headroom): ${unplaced.map(([home, q]) => `${home} ${formatQps(q)} q/s`).join(', ')}`);
  }
  return lines.join('\n') + '\n';
}

function formatQps(q: number): string {
  return q >= 100 ? q.toFixed(0) : q >= 10 ? q.toFixed(1) : q.toFixed(2);
}

/**
 * The preview report: what was asked (`asked`, in words), which regions' schedules change, and
 * the share of measured demand each region would take at each listed instant.
 */
export function renderPreview(p: PreviewView, asked: string, now: number): string {
  const lines: string[] = [];
  lines.push(`preview: ${asked}`);
  lines.push(`against plan ${p.current}; nothing is changed`);
  lines.push(p.changed.length > 0 ? `changes the schedule of: ${p.changed.join(', ')}` : "no region's schedule changes");
  lines.push('');
  if (p.shares.length === 0) {
    lines.push('no instants to show (no measured demand to share out)');
    return lines.join('\n') + '\n';
  }
  const all = [...new Set(p.shares.flatMap((x) => Object.keys(x.regions)))].sort();
  const changed = new Set(p.changed);
  // Regions that take nothing at every instant and whose schedule does not change say nothing.
  const shown = all.filter((r) => changed.has(r) || p.shares.some((x) => (x.regions[r] ?? 0) > 0));
  const withUnplaced = p.shares.some((x) => x.unplaced > 0);
  // Wall-clock time beside the relative one: the time of day when every instant is on one UTC day.
  const day = (t: number) => formatInstant(t).slice(0, 10);
  const oneDay = p.shares.every((x) => day(x.at) === day(p.shares[0]!.at));
  const clock = (t: number) => (oneDay ? formatInstant(t).slice(11, 19) : formatInstant(t).slice(0, 19).replace('T', ' '));
  const header = ['WHEN', 'UTC', ...shown.map((r) => (changed.has(r) ? `${r}*` : r))];
  if (withUnplaced) header.push('unplaced');
  const rows = [header];
  // An instant whose shares read the same as the row above says nothing new: left out.
  let same = 0;
  let previous = '';
  for (const x of p.shares) {
    const cells = shown.map((r) => formatShare(x.regions[r] ?? 0));
    if (withUnplaced) cells.push(formatShare(x.unplaced));
    const key = cells.join(' ');
    if (rows.length > 1 && key === previous) {
      same++;
      continue;
    }
    previous = key;
    rows.push([formatRelative(x.at, now), clock(x.at), ...cells]);
  }
  lines.push(...alignTable(rows, header.map((_, i) => i).slice(2)));
  lines.push('');
  const hidden = all.length - shown.length;
  const notes = ['shares of measured demand', '* = schedule changes'];
  if (same > 0) notes.push(`${same} instant(s) with the same shares as the row above not shown`);
  if (hidden > 0) notes.push(`${hidden} region(s) taking nothing throughout not shown`);
  lines.push(notes.join('; '));
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------
// Usage

const USAGES: Record<string, string> = {
  windows: `usage: gridsteer windows list
       gridsteer windows add <id> --regions R[,R…] --cron EXPR --duration D --reason TEXT
                             [--kind maintenance|tariff|practice] [--timezone TZ] [--cap SHARE]
                             [--blocked YYYY-MM-DD[,…]] [--from YYYY-MM-DD] [--until YYYY-MM-DD] [--force]
       gridsteer windows remove <id> --reason TEXT
       gridsteer windows skip-next <id> --reason TEXT

  Recurring windows (docs/schedules.md): maintenance windows, tariff windows, practice runs.
  list: every window (the configuration's and those added here) with its next occurrences
  (GET /v1/windows). add: a window as windows: in the configuration takes it, checked the same
  way (POST /v1/windows; audited): --cron is node-cron syntax in --timezone (default UTC), e.g.
  "0 2 * * sun"; --duration 2h, 90m, 3h30m; --cap the share kept (default 0: drained); --force
  confirms a maintenance window past the automation's safety limits. remove: a window added
  here (DELETE /v1/windows/:id). skip-next: the next occurrence that has not started does not
  act (POST /v1/windows/:id/skip-next; audited).

${connectionUsage('operator')}`,
  drain: `usage: gridsteer drain <region> --reason TEXT [--cap SHARE] [--ramp DURATION] [--by WHEN]

  Take traffic away from a region (POST /v1/regions/<region>/drain).

  --reason TEXT      why, in words (required; audited, shown in explain and status)
  --cap SHARE        the share of its traffic to keep: 0.3 or 30% (default 0: drain fully)
  --ramp DURATION    spread the change over e.g. 90s, 2m, 1h (default: at once; with
                     --by, the server's policy.drain.rampMs)
  --by WHEN          be drained by then: 2026-12-01T14:00Z or +30m; the ramp ends there
${connectionUsage('operator')}`,
  undrain: `usage: gridsteer undrain <region> --reason TEXT

  End the drains of a region; it takes traffic back with slow start (DELETE /v1/regions/<region>/drain).

  --reason TEXT      why, in words (required)
${connectionUsage('operator')}`,
  force: `usage: gridsteer force <region> up|down [--until WHEN] --reason TEXT
       gridsteer force <region> clear --reason TEXT

  Force a region up (ignore its health; needs --until) or down (it takes no traffic)
  (POST /v1/regions/<region>/force); a new force replaces the region's earlier ones.
  clear ends its forces: its health decides again (DELETE /v1/regions/<region>/force).

  --until WHEN       until then: 2026-12-01T14:00Z or +2h (required for up)
  --reason TEXT      why, in words (required)
${connectionUsage('operator')}`,
  freeze: `usage: gridsteer freeze on|off --reason TEXT [--until WHEN]

  Freeze automation (grid events, power budgets: the caps in force are held) or end the
  freeze (POST /v1/automation/freeze). Operator overrides still apply.

  --reason TEXT      why, in words (required)
  --until WHEN       on: end the freeze by itself then (2026-12-01T14:00Z or +2h)
${connectionUsage('operator')}`,
  distrust: `usage: gridsteer distrust <source|principal> on|off --reason TEXT [--until WHEN]

  Stop trusting a grid source's claims of physical loss (POST /v1/grid/distrust, audited): a
  bound source's load-shed or power-off is otherwise planned whatever the automation safety
  limits and the freeze say (docs/adr/0014-physical-loss.md). Distrusted, its claims count as
  any cap: the safety limits and the freeze apply. <source> is a prefix of the signals' source
  (e.g. openadr3/vtn.utility.example); token:<name> or collector:<name> is a principal instead:
  every claim it wrote, whatever source it names (docs/adr/0021-principals-and-grants.md).
  off trusts it again.

  --reason TEXT      why, in words (required)
  --until WHEN       on: end the distrust by itself then (2026-12-01T14:00Z or +2h)
${connectionUsage('operator')}`,
  events: `usage: gridsteer events

  The grid events and alerts the store holds (GET /v1/grid-events): those in force and
  announced first, by start, each with its phase, its times and when it was learned (the notice
  a drain had); then the history: events whose end has passed, marked "replay" when they were
  learned after their end (a collector reading a feed's history), which never drove a drain.
  Phases: ${GRID_EVENT_PHASE_TABLE.map((p) => p.phase).join(', ')}.

${connectionUsage('viewer')}`,
  jobs: `usage: gridsteer jobs

  The housekeeping jobs (GET /v1/jobs, docs/schedules.md): each job's schedule (UTC), this
  node's next slot, the fleet's last run with its node and outcome (ok, failed, running, or
  incomplete: no finish was recorded and a later slot has started — the node died mid-run)
  and what it did.

${connectionUsage('viewer')}`,
  'practice-runs': `usage: gridsteer practice-runs

  The practice runs recorded (GET /v1/practice-runs), newest first: skipped and why (the
  blocking condition the planner found as the run would begin), started, aborted and why,
  finished with the least share planned and whether every region was restored, the queries
  it moved (measured demand) and the health probes that failed during it.

${connectionUsage('viewer')}`,
  status: `usage: gridsteer status

  Each region's share of traffic, state, answer TTL now, next change and why; the freeze; demand no
  region can take (GET /v1/status). A data loss of the store this node holds is said first, with
  the command that confirms it; a reason citing an override no longer stored says [ended].

${connectionUsage('viewer')}`,
  store: `usage: gridsteer store
       gridsteer store confirm-loss --reason TEXT

  The state store as this node sees it (GET /v1/store), with a data loss it holds: the store's
  revision went back or its markers vanished (a Redis restarted without persistence), and the
  node keeps serving its last plan. Put back what was lost (the audit log before the loss,
  your own records), then confirm-loss: the node (and every node holding the same loss)
  plans from the store as it is now (POST /v1/store/confirm-loss; audited).

  --reason TEXT      confirm-loss: why the store as it is now is right (required)
${connectionUsage('viewer')}`,
  quarantine: `usage: gridsteer quarantine
       gridsteer quarantine release <target> --reason TEXT
       gridsteer quarantine drop <target> --reason TEXT

  Stored records held out of planning (GET /v1/quarantine; docs/adr/0020): planning with them
  failed (a record written by an older build, by hand, or a defect) or they could not be read.
  Every node plans without them and the plan carries a critical alert. release: plan with the
  record again, after a fix (POST /v1/quarantine/release); drop: delete it from the store
  (POST /v1/quarantine/drop). Both are audited.

  --reason TEXT      release, drop: why (required)
${connectionUsage('viewer')}`,
  preview: `usage: gridsteer preview drain <region> [--cap SHARE] [--ramp DURATION] [--by WHEN]
       gridsteer preview undrain <region>
       gridsteer preview force <region> up|down [--until WHEN]
       gridsteer preview event <region> --type TYPE [--start WHEN] --end WHEN [--level N] [--cap SHARE] [--limit-w W]
       gridsteer preview freeze
       gridsteer preview shadow      (the plan shadowed grid sources would produce)

  What would change, without changing anything (POST /v1/plan/preview): the regions whose
  schedule changes and each region's share of measured demand at the plan's instants.
  freeze: what freezing automation now would hold.
  event: a grid event (TYPE simple, import-capacity-limit, dispatch-setpoint, grid-emergency,
  load-shed, cap or drain), from --start (default now) to --end.

${connectionUsage('operator')}`,
};

/** The operator commands and one line each, for the top-level usage. */
export const OPERATOR_COMMANDS: Record<string, string> = {
  drain: 'drain <region> --reason TEXT [--cap SHARE] [--ramp DURATION] [--by WHEN]',
  undrain: 'undrain <region> --reason TEXT',
  force: 'force <region> up|down|clear [--until WHEN] --reason TEXT',
  freeze: 'freeze on|off --reason TEXT [--until WHEN]',
  distrust: 'distrust <source|principal> on|off --reason TEXT [--until WHEN] (a grid source\'s or principal\'s claims of loss)',
  status: 'status',
  events: 'events (grid events and alerts: in force, announced, and history)',
  jobs: 'jobs (housekeeping jobs: schedule, last run and outcome)',
  'practice-runs': 'practice-runs (the practice runs recorded, and why)',
  store: 'store [confirm-loss --reason TEXT] (the state store; confirm a data loss)',
  quarantine: 'quarantine [release|drop <target> --reason TEXT] (stored records held out of planning)',
  preview: 'preview drain|undrain|force|event|freeze|shadow … (what would change)',
  windows: 'windows list | add <id> --regions R --cron EXPR --duration D --reason TEXT … | remove <id> | skip-next <id>',
};

// ---------------------------------------------------------------------------------------
// The commands

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  reason: { type: 'string' },
  cap: { type: 'string' },
  ramp: { type: 'string' },
  by: { type: 'string' },
  until: { type: 'string' },
  type: { type: 'string' },
  start: { type: 'string' },
  end: { type: 'string' },
  level: { type: 'string' },
  'limit-w': { type: 'string' },
  regions: { type: 'string' },
  cron: { type: 'string' },
  timezone: { type: 'string' },
  duration: { type: 'string' },
  kind: { type: 'string' },
  blocked: { type: 'string' },
  from: { type: 'string' },
  force: { type: 'boolean' },
} as const;

type Values = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

/** Which options each command takes (besides the connection's). */
const ALLOWED: Record<string, (keyof typeof OPTIONS)[]> = {
  drain: ['reason', 'cap', 'ramp', 'by'],
  undrain: ['reason'],
  force: ['reason', 'until'],
  freeze: ['reason', 'until'],
  distrust: ['reason', 'until'],
  status: [],
  events: [],
  jobs: [],
  'practice-runs': [],
  store: ['reason'],
  quarantine: ['reason'],
  preview: ['reason', 'cap', 'ramp', 'by', 'until', 'type', 'start', 'end', 'level', 'limit-w'],
  windows: ['reason', 'cap', 'regions', 'cron', 'timezone', 'duration', 'kind', 'blocked', 'from', 'until', 'force'],
};

/** Usage problem: written with the command's usage, exit 2. */
class Usage extends Error {}

/** What one command asks the server, and how to print the answer. */
interface Plan {
  request: ApiRequest;
  role: 'viewer' | 'operator';
  render(body: unknown, now: number): string;
}

/** Runs `gridsteer <cmd> …` for an operator command (`args` after the command word). */
export async function runOperator(cmd: string, args: string[], io: CliIo = defaultIo): Promise<number> {
  const usage = USAGES[cmd];
  if (usage === undefined) {
    io.err(`gridsteer: unknown command "${cmd}"\n`);
    return 2;
  }
  // The platform clock (loaded here, not at start-up: only these commands read it) follows
  // GRIDSTEER_TEST_CLOCK like the server, so `+2h` and "in 5m" are on the server's clock.
  const now = io.now ? io.now() : (await import('../platform/clock.js')).now();
  let values: Values;
  let plan: Plan;
  let conn: Connection | string;
  try {
    let parsed;
    try {
      parsed = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: true });
    } catch (e) {
      throw new Usage((e as Error).message);
    }
    values = parsed.values as Values;
    if (values.help) {
      io.out(usage);
      return 0;
    }
    for (const k of Object.keys(values) as (keyof typeof OPTIONS)[]) {
      if (!(k in CONNECTION_OPTIONS) && !ALLOWED[cmd]!.includes(k)) throw new Usage(`${cmd} does not take --${k}`);
    }
    plan = build(cmd, parsed.positionals, values, now, io.columns?.());
    conn = connection(values, io);
    if (typeof conn === 'string') throw new Usage(conn);
  } catch (e) {
    if (!(e instanceof Usage)) throw e;
    io.err(`gridsteer: ${e.message}\n${usage}`);
    return 2;
  }
  const r = await callApi(io, conn, plan.request);
  if (r.kind === 'failed') return 1;
  if (r.kind === 'refused') {
    const e = r.error;
    const what = [e?.code ?? `HTTP ${r.status}`, e?.field ? `field ${e.field}` : undefined].filter(Boolean).join(', ');
    io.err(`gridsteer: ${e?.message ?? `HTTP ${r.status}: ${r.text.slice(0, 300)}`} (${what})\n`);
    if (r.status === 401 && !conn.token) io.err(`gridsteer: pass ${plan.role === 'operator' ? 'an operator' : 'a viewer'} token with --token or $GRIDSTEER_TOKEN\n`);
    return 1;
  }
  io.out(values.json ? `${JSON.stringify(r.body, null, 2)}\n` : plan.render(r.body, now));
  return 0;
}

function positionals(cmd: string, got: string[], names: string[]): string[] {
  if (got.length !== names.length) {
    throw new Usage(`${cmd} takes ${names.length === 0 ? 'no arguments' : names.map((n) => `<${n}>`).join(' ')} (got ${got.length === 0 ? 'none' : got.map((g) => `"${g}"`).join(' ')})`);
  }
  return got;
}

function option<T>(name: string, text: string | undefined, parse: (s: string) => T): T | undefined {
  if (text === undefined) return undefined;
  try {
    return parse(text);
  } catch (e) {
    throw new Usage(`--${name}: ${(e as Error).message}`);
  }
}

function reasonOf(cmd: string, v: Values): string {
  if (v.reason === undefined || v.reason.trim() === '') throw new Usage(`${cmd} needs --reason TEXT: why, in words (it is audited)`);
  return v.reason;
}

function upDown(cmd: string, s: string): 'up' | 'down' {
  if (s !== 'up' && s !== 'down') throw new Usage(`${cmd} takes up or down after the region (got "${s}")`);
  return s;
}

function render(lines: string[]): string {
  return lines.join('\n') + '\n';
}

const regionPath = (region: string, what: string) => `/v1/regions/${encodeURIComponent(region)}/${what}`;

function build(cmd: string, pos: string[], v: Values, now: number, columns: number | undefined): Plan {
  const when = (name: 'by' | 'until' | 'start' | 'end') => option(name, v[name], (s) => parseWhen(s, now));
  switch (cmd) {
    case 'drain': {
      const [region] = positionals(cmd, pos, ['region']) as [string];
      const body = { reason: reasonOf(cmd, v), cap: option('cap', v.cap, parseShare), ramp: option('ramp', v.ramp, parseDuration), by: when('by') };
      return {
        role: 'operator',
        request: { method: 'POST', path: regionPath(region, 'drain'), body },
        // `{override}` (or the override itself, as the first servers answered).
        render: (b, t) => render(overrideLines('created', (b as { override?: OverrideView }).override ?? (b as OverrideView), t)),
      };
    }
    case 'undrain': {
      const [region] = positionals(cmd, pos, ['region']) as [string];
      return {
        role: 'operator',
        request: { method: 'DELETE', path: regionPath(region, 'drain'), query: { reason: reasonOf(cmd, v) } },
        render: (b, t) => {
          const { ended, undrain } = b as { ended: OverrideView[]; undrain: OverrideView | null };
          const lines = ended.flatMap((o) => overrideLines('ended', o, t));
          if (undrain) lines.push(...overrideLines('created', undrain, t));
          if (lines.length === 0) lines.push(`${region} had no drain in force: nothing changed`);
          return render(lines);
        },
      };
    }
    case 'force': {
      const [region, stateText] = positionals(cmd, pos, ['region', 'up|down|clear']) as [string, string];
      if (stateText === 'clear') {
        if (v.until !== undefined) throw new Usage('force clear takes no --until');
        return {
          role: 'operator',
          request: { method: 'DELETE', path: regionPath(region, 'force'), query: { reason: reasonOf(cmd, v) } },
          render: (b, t) => render((b as { ended: OverrideView[] }).ended.flatMap((o) => overrideLines('ended', o, t))),
        };
      }
      if (stateText !== 'up' && stateText !== 'down') throw new Usage(`force takes up, down or clear after the region (got "${stateText}")`);
      const state = stateText;
      const until = when('until');
      if (state === 'up' && until === undefined) throw new Usage('force up needs --until WHEN: forcing a region up ignores its health, so it must end');
      return {
        role: 'operator',
        request: { method: 'POST', path: regionPath(region, 'force'), body: { state, until, reason: reasonOf(cmd, v) } },
        render: (b, t) => {
          const { force, ended } = b as { force: OverrideView; ended: OverrideView[] };
          return render([...ended.flatMap((o) => overrideLines('ended', o, t)), ...overrideLines('created', force, t)]);
        },
      };
    }
    case 'store': {
      if (pos.length === 0) {
        if (v.reason !== undefined) throw new Usage('store takes --reason only with confirm-loss');
        return { role: 'viewer', request: { method: 'GET', path: '/v1/store' }, render: (b, t) => render(storeLines(b as StoreView, t)) };
      }
      const [what] = positionals(cmd, pos, ['confirm-loss']) as [string];
      if (what !== 'confirm-loss') throw new Usage(`store takes confirm-loss or nothing (got "${what}")`);
      return {
        role: 'operator',
        request: { method: 'POST', path: '/v1/store/confirm-loss', body: { reason: reasonOf('store confirm-loss', v) } },
        render: (b) => {
          const { confirmed, revision } = b as { confirmed: StoreLossView; revision: number };
          return render([`confirmed the data loss: ${confirmed.why}`, `  planning from the store as it is now (revision ${revision})`]);
        },
      };
    }
    case 'quarantine': {
      if (pos.length === 0) {
        if (v.reason !== undefined) throw new Usage('quarantine takes --reason only with release or drop');
        return { role: 'viewer', request: { method: 'GET', path: '/v1/quarantine' }, render: (b, t) => render(quarantineLines(b as QuarantineView, t)) };
      }
      const [how, target] = positionals(cmd, pos, ['release|drop', 'target']) as [string, string];
      if (how !== 'release' && how !== 'drop') throw new Usage(`quarantine takes release or drop before the target (got "${how}")`);
      return {
        role: 'operator',
        request: { method: 'POST', path: `/v1/quarantine/${how}`, body: { target, reason: reasonOf(`quarantine ${how}`, v) } },
        render: (b) => {
          const e = (b as { released?: QuarantineEntryView; dropped?: QuarantineEntryView }).released ?? (b as { dropped: QuarantineEntryView }).dropped;
          return render([how === 'release' ? `released ${e.target}: it is planned again (if planning with it still fails, it is quarantined again)` : `dropped ${e.target} from the store (the audit log keeps it)`]);
        },
      };
    }
    case 'distrust': {
      const [who, onOff] = positionals(cmd, pos, ['source|principal', 'on|off']) as [string, string];
      if (onOff !== 'on' && onOff !== 'off') throw new Usage(`distrust takes a source prefix or a principal, and on or off (got "${onOff}")`);
      // token:<name> and collector:<name> are principals (ADR 0021): every claim they wrote, whatever its source.
      const target = /^(token|collector):/.test(who) ? { principal: who } : { source: who };
      const until = when('until');
      if (onOff === 'off' && until !== undefined) throw new Usage('distrust off takes no --until');
      return {
        role: 'operator',
        request: { method: 'POST', path: '/v1/grid/distrust', body: { ...target, distrusted: onOff === 'on', reason: reasonOf(cmd, v), until } },
        render: (b, t) => {
          const { distrusted, ended } = b as { distrusted: OverrideView | null; ended: OverrideView[] };
          const lines = ended.flatMap((o) => overrideLines('ended', o, t));
          if (distrusted) lines.push(...overrideLines('created', distrusted, t));
          return render(lines);
        },
      };
    }
    case 'freeze': {
      const [onOff] = positionals(cmd, pos, ['on|off']) as [string];
      if (onOff !== 'on' && onOff !== 'off') throw new Usage(`freeze takes on or off (got "${onOff}")`);
      const until = when('until');
      if (onOff === 'off' && until !== undefined) throw new Usage('freeze off takes no --until');
      return {
        role: 'operator',
        request: { method: 'POST', path: '/v1/automation/freeze', body: { frozen: onOff === 'on', reason: reasonOf(cmd, v), until } },
        render: (b, t) => {
          const { frozen, ended } = b as { frozen: OverrideView | null; ended: OverrideView[] };
          const lines = ended.flatMap((o) => overrideLines('ended', o, t));
          if (frozen) lines.push(...overrideLines('created', frozen, t));
          if (lines.length === 0) lines.push('automation was not frozen: nothing changed');
          return render(lines);
        },
      };
    }
    case 'status':
      positionals(cmd, pos, []);
      return {
        role: 'viewer',
        request: { path: '/v1/status' },
        render: (b) => renderStatus(b as StatusView, columns),
      };
    case 'preview':
      return buildPreview(pos, v, now, when);
    case 'windows':
      return buildWindows(pos, v, columns);
    case 'events':
      positionals(cmd, pos, []);
      return { role: 'viewer', request: { path: '/v1/grid-events' }, render: (b) => renderEvents(b as EventsView, columns) };
    case 'jobs':
      positionals(cmd, pos, []);
      return { role: 'viewer', request: { path: '/v1/jobs' }, render: (b, t) => renderJobs(b as { jobs: JobView[] }, t, columns) };
    case 'practice-runs':
      positionals(cmd, pos, []);
      return { role: 'viewer', request: { path: '/v1/practice-runs' }, render: (b) => renderPracticeRuns(b as { runs: PracticeRunView[] }, columns) };
    default:
      throw new Usage(`unknown command "${cmd}"`);
  }
}

function buildPreview(pos: string[], v: Values, now: number, when: (name: 'by' | 'until' | 'start' | 'end') => number | undefined): Plan {
  const [what, ...rest] = pos;
  const only = (name: string, allowed: (keyof typeof OPTIONS)[]) => {
    for (const k of ['cap', 'ramp', 'by', 'until', 'type', 'start', 'end', 'level', 'limit-w'] as const) {
      if (v[k] !== undefined && !allowed.includes(k)) throw new Usage(`preview ${name} does not take --${k}`);
    }
  };
  let body: Record<string, unknown>;
  let asked: string;
  const reason = v.reason;
  switch (what) {
    case 'drain': {
      only(what, ['cap', 'ramp', 'by']);
      const [region] = positionals('preview drain', rest, ['region']) as [string];
      const cap = option('cap', v.cap, parseShare);
      const ramp = option('ramp', v.ramp, parseDuration);
      const by = when('by');
      body = { override: { region, action: 'drain', value: cap, ramp, by, reason } };
      asked = `drain ${region} ${cap ? `to ${formatShare(cap)}` : 'fully'}${ramp !== undefined ? (ramp > 0 ? ` over ${formatDuration(ramp)}` : ' at once') : ''}${by !== undefined ? ` by ${formatInstant(by)} (${formatRelative(by, now)})` : ''}`;
      break;
    }
    case 'undrain': {
      only(what, []);
      const [region] = positionals('preview undrain', rest, ['region']) as [string];
      body = { override: { region, action: 'undrain', reason } };
      asked = `undrain ${region}`;
      break;
    }
    case 'force': {
      only(what, ['until']);
      const [region, stateText] = positionals('preview force', rest, ['region', 'up|down']) as [string, string];
      const state = upDown('preview force', stateText);
      const end = when('until');
      if (state === 'up' && end === undefined) throw new Usage('preview force up needs --until WHEN: forcing a region up ignores its health, so it must end');
      body = { override: { region, action: state === 'up' ? 'force-up' : 'force-down', end, reason } };
      asked = `force ${region} ${state}${end !== undefined ? ` until ${formatInstant(end)} (${formatRelative(end, now)})` : ''}`;
      break;
    }
    case 'event': {
      only(what, ['type', 'start', 'end', 'level', 'cap', 'limit-w']);
      const [region] = positionals('preview event', rest, ['region']) as [string];
      if (v.type === undefined) throw new Usage('preview event needs --type TYPE (e.g. load-shed)');
      const start = when('start') ?? now;
      const end = when('end');
      if (end === undefined) throw new Usage('preview event needs --end WHEN (e.g. +1h)');
      if (end <= start) throw new Usage('preview event: --end must be after --start');
      const level = option('level', v.level, (s) => {
        if (!/^\d+$/.test(s)) throw new Error(`"${s}" is not a level 0–3`);
        return Number(s);
      });
      const cap = option('cap', v.cap, parseShare);
      const limitW = option('limit-w', v['limit-w'], (s) => {
        const n = Number(s);
        if (s.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`"${s}" is not a number of watts`);
        return n;
      });
      body = { event: { region, type: v.type, start, end, level, cap, limitW } };
      asked = `grid event ${v.type} at ${region} from ${formatRelative(start, now)} to ${formatRelative(end, now)} (${formatInstant(start)} – ${formatInstant(end)})`;
      break;
    }
    case 'freeze': {
      only(what, []);
      positionals('preview freeze', rest, []);
      body = { freeze: true };
      asked = 'freeze automation';
      break;
    }
    case 'shadow': {
      only(what, []);
      positionals('preview shadow', rest, []);
      body = { applyShadow: true };
      asked = 'apply the grid facts of shadowed sources (policy.grid.shadow, or mode shadow)';
      break;
    }
    default:
      throw new Usage(what === undefined ? 'preview needs what to preview: drain, undrain, force, event, freeze or shadow' : `preview cannot preview "${what}": drain, undrain, force, event, freeze or shadow`);
  }
  return {
    role: 'operator',
    request: { method: 'POST', path: '/v1/plan/preview', body },
    render: (b, t) => renderPreview(b as PreviewView, asked, t),
  };
}

// ---------------------------------------------------------------------------------------
// gridsteer windows (docs/schedules.md)

/** An occurrence in words: `2026-10-25T02:00:00Z (in 13h) for 2h` and why it is skipped. */
function occurrenceWords(o: WindowOccurrence, now: number): string {
  const state = o.start <= now && now < o.end ? ' (in progress)' : '';
  return `${formatInstant(o.start)} (${formatRelative(o.start, now)}) for ${formatDuration(o.end - o.start)}${state}${o.skipped ? ` — skipped: ${o.skipped}` : ''}`;
}

/** The listing of `gridsteer windows list`: one row per window, then its next occurrences. */
export function renderWindows(l: WindowListing, columns?: number): string {
  if (l.windows.length === 0) return 'no recurring windows (windows: in the configuration, or gridsteer windows add)\n';
  const rows = [['window', 'kind', 'regions', 'cron (time zone)', 'for', 'cap', 'source']];
  for (const w of l.windows) {
    rows.push([w.id, w.kind, w.regions.join(','), `${w.cron} (${w.timezone})`, formatDuration(w.durationMs), formatShare(w.cap), w.source === 'api' ? `api, by ${w.addedBy ?? '?'}` : 'config']);
  }
  const lines = alignTable(rows).map((x) => cut(x, columns));
  for (const w of l.windows) {
    lines.push('', `${w.id}: ${w.reason}${w.force ? ' (forced past the safety limits)' : ''}${w.blockedDates.length > 0 ? `; blocked ${w.blockedDates.join(', ')}` : ''}${w.from ? `; from ${w.from}` : ''}${w.until ? `; until ${w.until}` : ''}`);
    if (w.next.length === 0) lines.push('  no occurrence in the next 62 days');
    for (const o of w.next) lines.push(cut(`  ${occurrenceWords(o, l.now)}`, columns));
  }
  return render(lines);
}

function buildWindows(pos: string[], v: Values, columns: number | undefined): Plan {
  const [what, ...rest] = pos;
  const only = (allowed: (keyof typeof OPTIONS)[]) => {
    for (const k of ALLOWED.windows!) if (v[k] !== undefined && !allowed.includes(k)) throw new Usage(`windows ${what} does not take --${k}`);
  };
  const path = (id: string, tail = '') => `/v1/windows/${encodeURIComponent(id)}${tail}`;
  switch (what) {
    case 'list':
      positionals('windows list', rest, []);
      only([]);
      return { role: 'viewer', request: { path: '/v1/windows' }, render: (b) => renderWindows(b as WindowListing, columns) };
    case 'add': {
      const [id] = positionals('windows add', rest, ['id']) as [string];
      only(['reason', 'cap', 'regions', 'cron', 'timezone', 'duration', 'kind', 'blocked', 'from', 'until', 'force']);
      for (const k of ['regions', 'cron', 'duration'] as const) if (v[k] === undefined) throw new Usage(`windows add needs --${k}`);
      const list = (s: string) => s.split(',').map((x) => x.trim()).filter((x) => x !== '');
      const body = {
        id,
        regions: list(v.regions!),
        cron: v.cron!,
        duration: v.duration!,
        reason: reasonOf('windows add', v),
        ...(v.kind !== undefined ? { kind: v.kind } : {}),
        ...(v.timezone !== undefined ? { timezone: v.timezone } : {}),
        ...(v.cap !== undefined ? { cap: option('cap', v.cap, parseShare) } : {}),
        ...(v.blocked !== undefined ? { blockedDates: list(v.blocked) } : {}),
        ...(v.from !== undefined ? { from: v.from } : {}),
        ...(v.until !== undefined ? { until: v.until } : {}),
        ...(v.force ? { force: true } : {}),
      };
      return { role: 'operator', request: { method: 'POST', path: '/v1/windows', body }, render: (b, t) => render(overrideLines('created', b as OverrideView, t)) };
    }
    case 'remove': {
      const [id] = positionals('windows remove', rest, ['id']) as [string];
      only(['reason']);
      return { role: 'operator', request: { method: 'DELETE', path: path(id), query: { reason: reasonOf('windows remove', v) } }, render: (b, t) => render(overrideLines('ended', b as OverrideView, t)) };
    }
    case 'skip-next': {
      const [id] = positionals('windows skip-next', rest, ['id']) as [string];
      only(['reason']);
      return {
        role: 'operator',
        request: { method: 'POST', path: path(id, '/skip-next'), body: { reason: reasonOf('windows skip-next', v) } },
        render: (b, t) => {
          const { skip, occurrence } = b as { skip: OverrideView; occurrence: WindowOccurrence };
          return render([`skipped ${id}: ${occurrenceWords({ ...occurrence, skipped: undefined } as WindowOccurrence, t)}`, `  ${skip.id} by ${skip.actor}: "${skip.reason}"`]);
        },
      };
    }
    default:
      throw new Usage(`windows takes list, add, remove or skip-next (got ${what === undefined ? 'nothing' : `"${what}"`})`);
  }
}

/** GET /v1/grid-events (the parts the table shows). */
export interface EventsView {
  now: number;
  events: Pick<GridEventView, 'region' | 'kind' | 'source' | 'principal' | 'grant' | 'key' | 'type' | 'level' | 'start' | 'end' | 'phase' | 'replay' | 'learnedAt'>[];
}

/**
 * `gridsteer events`: the events in force, announced or cancelled (by start), then the history
 * (phase over) apart, so an event whose end has passed never reads as current.
 */
export function renderEvents(b: EventsView, columns?: number): string {
  if (b.events.length === 0) return 'no grid events or alerts in the store\n';
  const when = (t: number | undefined, open: string) => (t === undefined ? open : `${formatRelative(t, b.now)} (${formatInstant(t).slice(0, 16)}Z)`);
  const table = (list: EventsView['events']) => {
    const rows: string[][] = [['REGION', 'EVENT', 'TYPE', 'PHASE', 'START', 'END', 'LEARNED', 'SOURCE', 'WRITTEN BY']];
    for (const e of list) {
      const phase = e.replay ? `${e.phase} (replay)` : e.phase;
      const type = `${e.kind === 'grid.alert' ? 'alert ' : ''}${e.type}${e.level !== undefined ? ` level ${e.level}` : ''}`;
      rows.push([e.region, e.key, type, phase, when(e.start, 'now'), when(e.end, 'open'), formatRelative(e.learnedAt, b.now), e.source, e.principal === undefined ? '-' : `${e.principal}${e.grant === undefined ? ' (no grant)' : ''}`]);
    }
    return alignTable(rows).map((line) => cut(line, columns));
  };
  const current = b.events.filter((e) => !isHistory(e.phase));
  const history = b.events.filter((e) => isHistory(e.phase));
  const lines: string[] = current.length > 0 ? table(current) : ['no grid event or alert in force or announced'];
  if (history.length > 0) {
    lines.push('', 'history (ended; acted on no more; "replay": learned after its end, never acted on):');
    lines.push(...table(history).map((l) => `  ${l}`));
  }
  return lines.join('\n') + '\n';
}

/** A housekeeping job as GET /v1/jobs gives it (the parts the table shows). */
export interface JobView {
  name: string;
  cron: string;
  what: string;
  nextRun: number | null;
  lastRun: { slot: number; node: string; startedAt: number; finishedAt?: number; outcome: string; detail: string } | null;
}

/** `gridsteer jobs`: one row per job. */
export function renderJobs(b: { jobs: JobView[] }, now: number, columns?: number): string {
  if (b.jobs.length === 0) return 'no housekeeping jobs on this node\n';
  const rows: string[][] = [['JOB', 'CRON (UTC)', 'NEXT', 'LAST RUN', 'OUTCOME', 'DETAIL']];
  for (const j of b.jobs) {
    const l = j.lastRun;
    rows.push([
      j.name,
      j.cron,
      j.nextRun === null ? '-' : formatRelative(j.nextRun, now),
      l ? `${formatRelative(l.startedAt, now)} on ${l.node}` : 'never',
      l ? l.outcome : '-',
      l?.detail || j.what,
    ]);
  }
  return alignTable(rows).map((line) => cut(line, columns)).join('\n') + '\n';
}

/** A recorded practice run as GET /v1/practice-runs gives it. */
export interface PracticeRunView {
  window: string;
  regions: string[];
  start: number;
  end: number;
  outcome: string;
  why?: string;
  share?: number;
  restored?: boolean;
  /** Measured (docs/schedules.md "Practice runs"): the run's regions' clients' demand. */
  traffic?: { held: { qps: number }; acting: { queries: number; moved: number } };
  probeErrors?: { region: string }[];
}

/** `gridsteer practice-runs`: one row per run, newest first (the API's order). */
export function renderPracticeRuns(b: { runs: PracticeRunView[] }, columns?: number): string {
  if (b.runs.length === 0) return 'no practice runs recorded (windows of kind practice: docs/schedules.md)\n';
  const rows: string[][] = [['WINDOW', 'REGIONS', 'START (UTC)', 'OUTCOME', 'DETAIL']];
  for (const r of b.runs) {
    const planned = r.why ?? (r.share !== undefined ? `down to ${formatShare(r.share)}${r.restored === undefined ? '' : r.restored ? ', restored' : ', NOT restored'}` : '-');
    const measured = [
      ...(r.traffic ? [`moved ${Math.round(r.traffic.acting.moved)} of ${r.traffic.acting.queries} queries (${r.traffic.held.qps} q/s while held)`] : []),
      ...(r.probeErrors && r.probeErrors.length > 0 ? [`${r.probeErrors.length} probe error(s): ${[...new Set(r.probeErrors.map((e) => e.region))].join(',')}`] : []),
    ];
    const detail = [planned, ...measured].join('; ');
    rows.push([r.window, r.regions.join(','), formatInstant(r.start), r.outcome, detail]);
  }
  return alignTable(rows).map((line) => cut(line, columns)).join('\n') + '\n';
}
