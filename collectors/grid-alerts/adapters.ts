/**
 * The four ISO adapters: each reads one feed body (text, already bounded in size by the
 * fetcher) into one `grid.alert` value for its zone, or throws a FeedError. Pure: no I/O, no
 * clock (the caller passes `now`).
 *
 * Contract:
 * - A body whose shape is not what the adapter expects (not JSON or not RSS 2.0, a required
 *   field missing, a field of the wrong type, a state or status it does not know, a time it
 *   cannot read) throws FeedError with code GRID_ALERTS_ERR_PARSE or GRID_ALERTS_ERR_SHAPE.
 *   Nothing is ever guessed: no shape mismatch turns into level 0.
 * - Notices of kinds an adapter does not map (PJM's local transmission postings, say) are
 *   skipped and returned in `ignored` (their labels); they are not a shape mismatch.
 * - Facts are what the source said, normalised (levels 0–3, types of GRID_ALERT_TYPES); what
 *   they mean for traffic is gridPolicy's.
 * - Bounded: at most MAX_NOTICES notices per body, labels read on at most 500 characters,
 *   messages cut to 2000 characters, program names to 200.
 */
import type { KindValue } from '../../gslb/model/kinds/index.js';
import { decodeEntities, parseRss, RssError, stripTags, type RssItem } from './rss.js';
import { parseTime } from './time.js';
import { defineErrors } from '../kit/errors.js';

type GridAlert = KindValue<'grid.alert'>;
type GridAlertType = NonNullable<KindValue<'grid.alert'>['type']>;

/** Failure codes (logged, and counted per code in gridAlertsStats.failuresByCode). */
export const FEED_ERROR_CODES = {
  GRID_ALERTS_ERR_FETCH: 'the feed could not be fetched (refused, timed out, HTTP status not 2xx, cut short)',
  GRID_ALERTS_ERR_TOO_LARGE: 'the body is larger than the limit',
  GRID_ALERTS_ERR_PARSE: 'the body is not the format the adapter reads (JSON, RSS 2.0) or exceeds its bounds',
  GRID_ALERTS_ERR_SHAPE: 'the body parses but its fields are not what the adapter expects',
  GRID_ALERTS_ERR_STALE: 'the newest alert in an RSS history is older than alertMaxAgeMs and was never ended',
} as const;
export type FeedErrorCode = keyof typeof FEED_ERROR_CODES;

/** Why a feed gave no fact. `message` starts with `collectors/grid-alerts: `. */
export const FeedError = defineErrors('collectors/grid-alerts', FEED_ERROR_CODES, { name: 'FeedError' });
export type FeedError = InstanceType<typeof FeedError>;

export type Iso = 'ercot' | 'caiso' | 'pjm' | 'aeso';

/** Each adapter's zone name (the fact's `zone` and the signal's key) and the zone its local times are in. */
export const ZONES: Record<Iso, { zone: string; tz: string }> = {
  ercot: { zone: 'ERCOT', tz: 'America/Chicago' },
  caiso: { zone: 'CAISO', tz: 'America/Los_Angeles' },
  pjm: { zone: 'PJM', tz: 'America/New_York' },
  aeso: { zone: 'AESO', tz: 'America/Edmonton' },
};

export interface ReadOptions {
  /** ms epoch: what "in force now" is measured against. */
  now: number;
  /** AESO: an alert with no later "ended" item counts as stale (a failure) this long after it was issued. */
  alertMaxAgeMs: number;
  /** PJM: only postings whose region is one of these (case-insensitive); postings without a region always count. */
  areas?: readonly string[];
}

/** What a feed said: the fact, and the labels of notices it skipped as not mapped. */
export interface Reading {
  value: GridAlert;
  ignored: string[];
}

/** Most notices (list entries, RSS items) read from one body. */
export const MAX_NOTICES = 1000;
const LABEL_MAX = 500;
const MESSAGE_MAX = 2000;
const PROGRAM_MAX = 200;

// ---------------------------------------------------------------------------------------
// Small helpers

function shapeError(why: string): never {
  throw new FeedError('GRID_ALERTS_ERR_SHAPE', why);
}

/** A received value, short, for a message. */
function shown(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  return `${typeof v} ${String(v)}`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function readJson(body: string, what: string): unknown {
  const text = body.charCodeAt(0) === 0xfeff ? body.slice(1) : body;
  if (text.trim() === '') throw new FeedError('GRID_ALERTS_ERR_PARSE', `${what}: the body is empty`);
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new FeedError('GRID_ALERTS_ERR_PARSE', `${what}: the body is not JSON (${(e as Error).message.slice(0, 200)})`);
  }
}

function readRss(body: string, what: string): RssItem[] {
  try {
    return parseRss(body, { maxItems: MAX_NOTICES }).items;
  } catch (e) {
    if (e instanceof RssError) throw new FeedError('GRID_ALERTS_ERR_PARSE', `${what}: not a readable RSS 2.0 document: ${e.message}`);
    throw e;
  }
}

/** `ercot: current_condition` + `state` → `ercot: current_condition.state`; `ercot:` + `lastUpdated` → `ercot: lastUpdated`. */
function at(path: string, k: string): string {
  return path.endsWith(':') ? `${path} ${k}` : `${path}.${k}`;
}

/** The first of `keys` present (not undefined/null) in `o`: a string, or absent; else a shape error naming `path.key`. */
function optString(o: Record<string, unknown>, keys: readonly string[], path: string): string | undefined {
  for (const k of keys) {
    const v = o[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string') shapeError(`${at(path, k)} must be a string; got ${shown(v)}`);
    return v;
  }
  return undefined;
}

/** The first of `keys` present in `o`, read as a time in `tz`; absent when none is; a shape error when unreadable. */
function optTime(o: Record<string, unknown>, keys: readonly string[], path: string, tz: string): number | undefined {
  for (const k of keys) {
    const v = o[k];
    if (v === undefined || v === null) continue;
    const t = parseTime(v, tz);
    if (t === null) shapeError(`${at(path, k)} is not a time this adapter reads; got ${shown(v)}`);
    if (t !== undefined) return t;
  }
  return undefined;
}

/** Plain text: markup and entities of RSS descriptions removed, control characters dropped, blanks collapsed. */
function plain(s: string, html: boolean): string {
  const t = html ? decodeEntities(stripTags(s)) : s;
  // eslint-disable-next-line no-control-regex
  return t.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/\s+/g, ' ').trim();
}

/** At most `max` UTF-16 units, ending in "…" when cut (never inside a surrogate pair). */
export function cut(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = max - 1;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return `${s.slice(0, end)}…`;
}

/** Lowercase words of `s` (at most LABEL_MAX characters read): "NERC EEA-2" → "nerc eea 2". */
function words(s: string): string {
  return s
    .slice(0, LABEL_MAX)
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
}

// ---------------------------------------------------------------------------------------
// What a notice says

/** A recognised notice: an alert of a type and level, or the end of earlier alerts (of `type`, or all when null). */
export type Kind = { end: false; type: GridAlertType; level: number } | { end: true; type: GridAlertType | null };

const alert = (type: GridAlertType, level: number): Kind => ({ end: false, type, level });

const END_WORDS = /\b(ended|has ended|cancell?ed|cancellation|terminated|lifted|expired|rescinded|all clear|no longer in effect|concluded|deactivated|discontinued|recalled)\b/;
const END_WORDS_G = new RegExp(END_WORDS.source, 'g');

/** An "ended" notice: the kind its remaining words name (null = every alert). */
function endOf(w: string, classify: (w: string) => Kind | null): Kind | null {
  if (!END_WORDS.test(w)) return null;
  const rest = classify(w.replace(END_WORDS_G, ' ').replace(/\s+/g, ' ').trim());
  return { end: true, type: rest && !rest.end ? rest.type : null };
}

/** CAISO statuses and notices, AESO items (the generic vocabulary: EEA n, EEA watch, Flex Alert, Grid Alert, load shed). */
export function genericKind(label: string): Kind | null {
  const w = words(label);
  return endOf(w, genericAlert) ?? genericAlert(w);
}

function genericAlert(w: string): Kind | null {
  if (/\b(manual load dump|load shed|load shedding|rotating outages|rotating blackouts|rolling blackouts|firm load interruption)\b/.test(w)) return alert('load-shed', 3);
  const eea = /\b(?:eea|energy emergency alert)(?: level)? ([1-3])\b/.exec(w);
  if (eea) return alert('eea', Number(eea[1]));
  if (/\b(?:eea|energy emergency alert) watch\b/.test(w)) return alert('watch', 0);
  if (/\bgrid alert\b/.test(w)) return alert('grid-alert', 2);
  if (/\bflex alert\b/.test(w)) return alert('flex-alert', 0);
  if (/\bconservation\b/.test(w)) return alert('conservation', 0);
  if (/\brestricted maintenance operations\b/.test(w)) return alert('watch', 0);
  if (/\bwatch\b/.test(w)) return alert('watch', 0);
  if (/^normal(?: conditions| operations| operating conditions)?$/.test(w)) return alert('normal', 0);
  return null;
}

/** PJM emergency procedures posting types (PJM Manual 13 names, NERC EEA levels). */
export function pjmKind(label: string): Kind | null {
  const w = words(label);
  return endOf(w, pjmAlert) ?? pjmAlert(w);
}

function pjmAlert(w: string): Kind | null {
  if (/\b(manual load dump|load shed|load shedding)\b/.test(w)) return alert('load-shed', 3);
  if (/\beea(?: level)? 3\b/.test(w)) return alert('load-shed', 3);
  if (/\beea(?: level)? 2\b/.test(w)) return alert('eea', 2);
  if (/\bload (?:management|mgmt)(?: reduction)? action\b/.test(w)) return alert('eea', 2);
  if (/\b(?:maximum|max) (?:generation|gen) emergency action\b/.test(w)) return alert('eea', 2);
  if (/\bvoltage reduction (?:warning|action)\b/.test(w)) return alert('eea', 2);
  if (/\beea(?: level)? 1\b/.test(w)) return alert('eea', 1);
  if (/\b(maximum generation|max gen|capacity emergency)\b/.test(w)) return alert('eea', 1);
  if (/\bload (?:management|mgmt) alert\b/.test(w)) return alert('eea', 1);
  if (/\b(?:hot|cold) weather alert\b/.test(w)) return alert('watch', 0);
  return null;
}

// ---------------------------------------------------------------------------------------
// From notices to one fact

/** One notice as read from a feed. */
export interface Notice {
  /** The source's own name for it (a type, a title, a status). */
  label: string;
  kind: Kind | null;
  text?: string;
  area?: string;
  issued?: number;
  start?: number;
  end?: number;
  /** Position in the body (0 = first). */
  order: number;
}

const RANK: Record<GridAlertType, number> = { normal: 0, watch: 1, conservation: 2, 'flex-alert': 3, eea: 4, 'grid-alert': 5, 'load-shed': 6, emergency: 7 };

type AlertNotice = Notice & { kind: { end: false; type: GridAlertType; level: number } };

function isAlert(n: Notice): n is AlertNotice {
  return n.kind !== null && !n.kind.end;
}

function closes(marker: { type: GridAlertType | null }, a: AlertNotice): boolean {
  return marker.type === null || marker.type === 'grid-alert' || marker.type === 'normal' || marker.type === a.kind.type;
}

/** More severe first: level, then type. */
function severity(a: AlertNotice, b: AlertNotice): number {
  return b.kind.level - a.kind.level || RANK[b.kind.type] - RANK[a.kind.type];
}

function noticeValue(n: AlertNotice, zone: string, html: boolean): GridAlert {
  const text = n.text !== undefined ? plain(n.text, html) : '';
  const label = plain(n.label, html);
  const message = `${label}${n.area ? ` (${plain(n.area, false)})` : ''}${text && text !== label ? `: ${text}` : ''}`;
  return {
    level: n.kind.level,
    type: n.kind.type,
    zone,
    ...(message ? { message: cut(message, MESSAGE_MAX) } : {}),
    ...(n.issued !== undefined ? { issued: n.issued } : {}),
    ...(n.start !== undefined ? { start: n.start } : {}),
    ...(n.end !== undefined ? { end: n.end } : {}),
    ...(label ? { program: cut(label, PROGRAM_MAX) } : {}),
  };
}

export interface EvaluateOptions {
  /**
   * list: the body lists what is current (PJM's board, CAISO notices); every listed alert not
   * past its end is in force, an "ended" entry closes earlier ones.
   * history: the body is a log, newest first (AESO's RSS); a newer alert of a type replaces
   * the older one, an "ended" item closes what it names, and an un-ended alert older than
   * alertMaxAgeMs is a failure (GRID_ALERTS_ERR_STALE), never a guess.
   */
  mode: 'list' | 'history';
  zone: string;
  /** Descriptions are HTML (RSS). */
  html: boolean;
  /** For the normal fact: extra words and the feed's own time. */
  normalDetail?: string;
  normalIssued?: number;
}

/**
 * The fact a set of notices states at `now`: the most severe alert in force (level, then
 * type; the newest on ties); else, when none is in force yet, the most severe announced one
 * (with its `start`, the earliest on ties); else normal, level 0.
 */
export function evaluate(notices: Notice[], r: ReadOptions, o: EvaluateOptions): Reading {
  const ignored = notices.filter((n) => n.kind === null).map((n) => n.label.slice(0, 200));
  const key = (n: Notice) => n.issued ?? n.start ?? -Infinity;
  const sorted = [...notices].sort((a, b) => key(a) - key(b) || (o.mode === 'history' ? b.order - a.order : a.order - b.order));
  let open: AlertNotice[] = [];
  for (const n of sorted) {
    if (n.kind === null) continue;
    if (n.kind.end) {
      const marker = n.kind;
      open = open.filter((a) => !closes(marker, a));
      continue;
    }
    if (!isAlert(n)) continue;
    if (n.kind.type === 'normal') {
      if (o.mode === 'history') open = [];
      continue;
    }
    if (o.mode === 'history') open = open.filter((a) => a.kind.type !== n.kind.type);
    open.push(n);
  }
  open = open.filter((a) => a.end === undefined || a.end > r.now);
  if (o.mode === 'history') {
    const stale = open.find((a) => a.end === undefined && (a.start ?? a.issued ?? -Infinity) < r.now - r.alertMaxAgeMs);
    if (stale) {
      const at = stale.start ?? stale.issued;
      throw new FeedError(
        'GRID_ALERTS_ERR_STALE',
        `${o.zone}: the newest "${cut(plain(stale.label, o.html), 100)}" was issued ${at === undefined ? 'at an unknown time' : new Date(at).toISOString()} and never ended; older than alertMaxAgeMs (${r.alertMaxAgeMs} ms), so nothing is known`,
      );
    }
  }
  const active = open.filter((a) => a.start === undefined || a.start <= r.now);
  if (active.length > 0) {
    active.sort((a, b) => severity(a, b) || key(b) - key(a));
    return { value: noticeValue(active[0]!, o.zone, o.html), ignored };
  }
  const upcoming = open.filter((a) => a.start !== undefined && a.start > r.now);
  if (upcoming.length > 0) {
    upcoming.sort((a, b) => severity(a, b) || a.start! - b.start!);
    return { value: noticeValue(upcoming[0]!, o.zone, o.html), ignored };
  }
  const others = ignored.length > 0 ? `; ${ignored.length} notice(s) of kinds not mapped` : '';
  return {
    value: {
      level: 0,
      type: 'normal',
      zone: o.zone,
      message: cut(`${o.zone}: no alert in force${o.normalDetail ? ` (${o.normalDetail})` : ''}${others}`, MESSAGE_MAX),
      ...(o.normalIssued !== undefined ? { issued: o.normalIssued } : {}),
    },
    ignored,
  };
}

/** A notice's start and end, checked for order. */
function checkSpan(n: Notice, path: string): Notice {
  if (n.start !== undefined && n.end !== undefined && n.end <= n.start) shapeError(`${path}: its end (${new Date(n.end).toISOString()}) is not after its start (${new Date(n.start).toISOString()})`);
  return n;
}

function listOf(v: unknown, wrapper: string, what: string): unknown[] {
  const list = Array.isArray(v) ? v : isObject(v) && Array.isArray(v[wrapper]) ? (v[wrapper] as unknown[]) : null;
  if (list === null) shapeError(`${what}: expected a JSON array, or an object whose "${wrapper}" is one; got ${shown(v)}`);
  if (list.length > MAX_NOTICES) throw new FeedError('GRID_ALERTS_ERR_PARSE', `${what}: more than ${MAX_NOTICES} entries`);
  return list;
}

function rssNotices(items: RssItem[], classify: (s: string) => Kind | null, tz: string, what: string): Notice[] {
  return items.map((it, order) => {
    const path = `${what} item ${order + 1}`;
    const time = (v: string | undefined, name: string): number | undefined => {
      const t = parseTime(v, tz);
      if (t === null) shapeError(`${path}: <${name}> is not a time this adapter reads; got ${shown(v)}`);
      return t;
    };
    const label = it.title !== undefined ? plain(it.title, true) : '';
    const n: Notice = {
      label: label || '(untitled item)',
      kind: label ? classify(label) : null,
      ...(it.description !== undefined ? { text: it.description } : {}),
      order,
    };
    const issued = time(it.pubDate, 'pubDate');
    const start = time(it.start, 'start');
    const end = time(it.end, 'end');
    if (issued !== undefined) n.issued = issued;
    if (start !== undefined) n.start = start;
    if (end !== undefined) n.end = end;
    return checkSpan(n, path);
  });
}

// ---------------------------------------------------------------------------------------
// ERCOT

/**
 * ERCOT's grid conditions dashboard JSON (`/api/1/services/read/dashboards/daily-prc.json`):
 * `current_condition.eea_level` (an integer 0–3) and `current_condition.state` (a string)
 * are required. EEA 1–3 → eea with that level (whatever the state says); with level 0 the
 * state decides: normal → normal, conservation … → conservation, watch or advisory → watch.
 * Any other state with level 0 (e.g. "emergency", "eea2") is a contradiction: a shape error.
 * `issued` is `current_condition.datetime` (epoch seconds), else `lastUpdated`.
 */
export function readErcot(body: string, _r: ReadOptions): Reading {
  const { zone, tz } = ZONES.ercot;
  const doc = readJson(body, 'ercot');
  if (!isObject(doc)) shapeError(`ercot: expected a JSON object; got ${shown(doc)}`);
  const cc = doc.current_condition;
  if (!isObject(cc)) shapeError(`ercot: current_condition must be an object; got ${cc === undefined ? 'nothing' : shown(cc)}`);
  const lvl = cc.eea_level;
  if (typeof lvl !== 'number' || !Number.isInteger(lvl) || lvl < 0 || lvl > 3) shapeError(`ercot: current_condition.eea_level must be an integer from 0 to 3; got ${lvl === undefined ? 'nothing' : shown(lvl)}`);
  const state = cc.state;
  if (typeof state !== 'string' || state.trim() === '') shapeError(`ercot: current_condition.state must be a non-empty string; got ${state === undefined ? 'nothing' : shown(state)}`);
  const title = optString(cc, ['title'], 'ercot: current_condition');
  const note = optString(cc, ['condition_note'], 'ercot: current_condition');
  const prc = cc.prc_value;
  if (prc !== undefined && prc !== null && typeof prc !== 'string' && typeof prc !== 'number') shapeError(`ercot: current_condition.prc_value must be a string or number; got ${shown(prc)}`);
  const issued = optTime(cc, ['datetime'], 'ercot: current_condition', tz) ?? optTime(doc, ['lastUpdated'], 'ercot:', tz);

  let kind: { type: GridAlertType; level: number };
  if (lvl > 0) kind = { type: 'eea', level: lvl };
  else {
    const w = words(state);
    if (/^normal\b/.test(w)) kind = { type: 'normal', level: 0 };
    else if (/\bconservation\b/.test(w)) kind = { type: 'conservation', level: 0 };
    else if (/\b(watch|advisory)\b/.test(w)) kind = { type: 'watch', level: 0 };
    else shapeError(`ercot: current_condition.state ${shown(state)} is not a state this adapter knows with eea_level 0`);
  }
  const parts = [title, note].filter((s): s is string => s !== undefined && s.trim() !== '').map((s) => plain(s, false));
  const prcText = prc !== undefined && prc !== null && String(prc).trim() !== '' ? ` (PRC ${plain(String(prc), false)} MW)` : '';
  const message = parts.length > 0 ? `${parts.join(': ')}${prcText}` : '';
  return {
    value: {
      level: kind.level,
      type: kind.type,
      zone,
      message: cut(message || `${zone}: ${plain(state, false)}`, MESSAGE_MAX),
      ...(issued !== undefined ? { issued } : {}),
      program: cut(`ERCOT ${plain(state, false)}`, PROGRAM_MAX),
    },
    ignored: [],
  };
}

// ---------------------------------------------------------------------------------------
// CAISO

function caisoNoticesBody(body: string, what: string): Notice[] {
  const { tz } = ZONES.caiso;
  if (body.trimStart().startsWith('<')) return rssNotices(readRss(body, what), genericKind, tz, what);
  return caisoNoticesJson(readJson(body, what), what);
}

function caisoNoticesJson(doc: unknown, what: string): Notice[] {
  const { tz } = ZONES.caiso;
  return listOf(doc, 'notices', what).map((e, order) => {
    const path = `${what}: notices[${order}]`;
    if (!isObject(e)) shapeError(`${path} must be an object; got ${shown(e)}`);
    const type = optString(e, ['type'], path);
    if (type === undefined || type.trim() === '') shapeError(`${path}.type is required: the notice's type, e.g. "Flex Alert"`);
    const text = optString(e, ['message'], path);
    const area = optString(e, ['area'], path);
    const n: Notice = { label: plain(type, false), kind: genericKind(type), order, ...(text !== undefined ? { text } : {}), ...(area !== undefined ? { area } : {}) };
    const issued = optTime(e, ['issued'], path, tz);
    const start = optTime(e, ['start'], path, tz);
    const end = optTime(e, ['end'], path, tz);
    if (issued !== undefined) n.issued = issued;
    if (start !== undefined) n.start = start;
    if (end !== undefined) n.end = end;
    return checkSpan(n, path);
  });
}

/**
 * CAISO: `body` is Today's Outlook stats JSON (`/outlook/SP/stats.txt`: `gridstatus`, an array
 * of status strings such as "Normal", "Flex Alert", "EEA Watch", "EEA 2", "Restricted
 * Maintenance Operations", with `slotDate`, `CurrentSystemDemand`, `Current_reserve`), or a
 * notices list; `notices` (optional) is a notices list: JSON (an array, or `{notices: […]}`,
 * of `{type, message?, start?, end?, issued?, area?}`) or RSS 2.0 (title = type,
 * description = message, pubDate = issued, optional <start>/<end>). Every status and notice
 * counts as one list: Flex Alert → flex-alert 0, EEA watch and RMO → watch 0, EEA 1–3 →
 * eea 1–3. A status string it does not know is a shape error; a notice type it does not know
 * is ignored.
 */
export function readCaiso(body: string, notices: string | undefined, r: ReadOptions): Reading {
  const { zone, tz } = ZONES.caiso;
  let list: Notice[];
  let normalDetail: string | undefined;
  let normalIssued: number | undefined;
  let html = false;
  if (body.trimStart().startsWith('<')) {
    list = caisoNoticesBody(body, 'caiso');
    html = true;
  } else {
    const doc = readJson(body, 'caiso');
    if (isObject(doc) && 'gridstatus' in doc) {
      const gs = doc.gridstatus;
      if (!Array.isArray(gs) || gs.length === 0 || gs.length > 20) shapeError(`caiso: gridstatus must be an array of 1 to 20 status strings; got ${shown(gs)}`);
      const slot = optTime(doc, ['slotDate'], 'caiso:', tz);
      const num = (k: string): number | undefined => {
        const v = doc[k];
        if (v === undefined || v === null) return undefined;
        if (typeof v !== 'number' || !Number.isFinite(v)) shapeError(`caiso: ${k} must be a number; got ${shown(v)}`);
        return v;
      };
      const demand = num('CurrentSystemDemand');
      const reserve = num('Current_reserve');
      const detail = [demand !== undefined ? `demand ${Math.round(demand)} MW` : '', reserve !== undefined ? `reserve ${Math.round(reserve)} MW` : ''].filter((s) => s !== '').join(', ');
      list = gs.map((s, order) => {
        if (typeof s !== 'string') shapeError(`caiso: gridstatus[${order}] must be a string; got ${shown(s)}`);
        const kind = genericKind(s);
        if (kind === null || kind.end) shapeError(`caiso: gridstatus[${order}] ${shown(s)} is not a status this adapter knows`);
        return { label: plain(s, false), kind, order, ...(detail ? { text: detail } : {}), ...(slot !== undefined ? { issued: slot } : {}) };
      });
      normalDetail = detail ? `Normal; ${detail}` : 'Normal';
      normalIssued = slot;
    } else {
      list = caisoNoticesJson(doc, 'caiso');
    }
  }
  if (notices !== undefined) {
    const more = caisoNoticesBody(notices, 'caiso notices');
    html ||= notices.trimStart().startsWith('<');
    list = [...list, ...more.map((n) => ({ ...n, order: n.order + list.length }))];
  }
  return evaluate(list, r, { mode: 'list', zone, html, ...(normalDetail !== undefined ? { normalDetail } : {}), ...(normalIssued !== undefined ? { normalIssued } : {}) });
}

// ---------------------------------------------------------------------------------------
// PJM

/**
 * PJM emergency procedures postings as JSON: an array, or `{postings: […]}`, of
 * `{messageTypeName (or type), priority?, message?, regionName (or region)?,
 * effectiveStartTime (or start)?, effectiveEndTime (or end)?, postedTime (or issued)?}`;
 * times as the board shows them (`MM.DD.YYYY HH:MM`, Eastern) or ISO 8601. Types: hot/cold
 * weather alert → watch 0; maximum generation emergency / load management alert, capacity
 * emergency, NERC EEA 1 → eea 1; load management reduction action, maximum generation
 * emergency action, voltage reduction, NERC EEA 2 → eea 2; manual load dump, NERC EEA 3 →
 * load-shed 3. Other types (local load relief, synchronized reserve events …) are ignored.
 */
export function readPjm(body: string, r: ReadOptions): Reading {
  const { zone, tz } = ZONES.pjm;
  const doc = readJson(body, 'pjm');
  const areas = r.areas?.map((a) => a.trim().toLowerCase());
  const list: Notice[] = [];
  listOf(doc, 'postings', 'pjm').forEach((e, order) => {
    const path = `pjm: postings[${order}]`;
    if (!isObject(e)) shapeError(`${path} must be an object; got ${shown(e)}`);
    const type = optString(e, ['messageTypeName', 'type'], path);
    if (type === undefined || type.trim() === '') shapeError(`${path}.messageTypeName is required: the posting's type, e.g. "Hot Weather Alert"`);
    const priority = optString(e, ['priority'], path);
    const text = optString(e, ['message'], path);
    const area = optString(e, ['regionName', 'region'], path);
    const n: Notice = { label: plain(type, false), kind: pjmKind(type), order };
    const msg = [priority ? `[${plain(priority, false)}]` : '', text ?? ''].filter((s) => s !== '').join(' ');
    if (msg) n.text = msg;
    if (area !== undefined && area.trim() !== '') n.area = area;
    const issued = optTime(e, ['postedTime', 'issued'], path, tz);
    const start = optTime(e, ['effectiveStartTime', 'start'], path, tz);
    const end = optTime(e, ['effectiveEndTime', 'end'], path, tz);
    if (issued !== undefined) n.issued = issued;
    if (start !== undefined) n.start = start;
    if (end !== undefined) n.end = end;
    checkSpan(n, path);
    if (areas && n.area !== undefined && !areas.includes(n.area.trim().toLowerCase())) return;
    list.push(n);
  });
  return evaluate(list, r, { mode: 'list', zone, html: false });
}

// ---------------------------------------------------------------------------------------
// AESO

/**
 * AESO's grid alert RSS 2.0 feed: a history, newest first. Titles: "Grid Alert" (issued,
 * updated) → grid-alert 2; "Energy Emergency Alert" / "EEA" with a level → eea with that
 * level; load shed / rotating outages → load-shed 3; "… ended" (cancelled, lifted, all
 * clear) → the end of what it names ("Grid Alert ended" ends everything). A recognised item
 * needs a readable pubDate. Items of other titles are ignored, but a feed with items none of
 * which is recognised is a shape error (its wording has changed); an empty feed is normal.
 */
export function readAeso(body: string, r: ReadOptions): Reading {
  const { zone, tz } = ZONES.aeso;
  const notices = rssNotices(readRss(body, 'aeso'), genericKind, tz, 'aeso');
  if (notices.length > 0 && notices.every((n) => n.kind === null)) {
    shapeError(`aeso: none of the ${notices.length} items has a title this adapter knows (e.g. "${cut(notices[0]!.label, 80)}"): the feed's wording may have changed`);
  }
  for (const n of notices) if (n.kind !== null && n.issued === undefined) shapeError(`aeso item ${n.order + 1} ("${cut(n.label, 80)}"): <pubDate> is required to order the alerts`);
  return evaluate(notices, r, { mode: 'history', zone, html: true });
}

/** The adapter of an ISO. */
export function readFeed(iso: Iso, body: string, notices: string | undefined, r: ReadOptions): Reading {
  switch (iso) {
    case 'ercot':
      return readErcot(body, r);
    case 'caiso':
      return readCaiso(body, notices, r);
    case 'pjm':
      return readPjm(body, r);
    case 'aeso':
      return readAeso(body, r);
  }
}
