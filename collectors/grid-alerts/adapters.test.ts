/**
 * The four adapters on case tables built from the (synthetic, unverified) fixtures: normal,
 * each level, malformed and hostile bodies. Every value read must make a signal that passes
 * the state layer's own validation; every body of an unexpected shape must fail with a code,
 * never turn into level 0.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { validateSignal } from '../../gslb/state/signals.js';
import type { KindValue } from '../../gslb/model/kinds/index.js';
import { countStringWork } from '../../test/helpers/work.js';
import { FeedError, genericKind, pjmKind, readAeso, readCaiso, readErcot, readPjm, type FeedErrorCode, type ReadOptions, type Reading } from './adapters.js';

type GridAlert = KindValue<'grid.alert'>;

// dist/collectors/grid-alerts → the source fixtures three levels up.
const FIXTURES = fileURLToPath(new URL('../../../collectors/grid-alerts/fixtures/', import.meta.url));
const fixture = (name: string) => readFileSync(FIXTURES + name, 'utf8');

/** The fixtures' instant: 17:00 CDT, 15:00 PDT, 18:00 EDT, 16:00 MDT. */
const NOW = Date.parse('2025-07-15T22:00:00Z');
const H = 3600_000;
const opts = (now = NOW, extra: Partial<ReadOptions> = {}): ReadOptions => ({ now, alertMaxAgeMs: 48 * H, ...extra });

/** The value read must validate as a grid.alert signal. */
function valid(r: Reading): GridAlert {
  validateSignal({ region: 'r1', kind: 'grid.alert', source: 'grid-alerts/test', key: r.value.zone ?? 'z', observedAt: NOW, expiresAt: NOW + 180_000, value: structuredClone(r.value) }, NOW, new Set(['r1']));
  return r.value;
}

function fails(fn: () => unknown, code: FeedErrorCode, why: RegExp, what: string): void {
  assert.throws(
    fn,
    (e: unknown) => {
      assert.ok(e instanceof FeedError, `${what}: a FeedError, got ${String(e)}`);
      assert.equal(e.code, code, `${what}: code (${e.message})`);
      assert.match(e.message, /^collectors\/grid-alerts: /, `${what}: message starts with the module`);
      assert.match(e.message, why, `${what}: message`);
      return true;
    },
    what,
  );
}

type Want = { [K in keyof GridAlert]?: GridAlert[K] | RegExp } & Pick<GridAlert, 'type' | 'level'>;
function check(got: GridAlert, want: Want, what: string): void {
  for (const [k, v] of Object.entries(want)) {
    if (v instanceof RegExp) assert.match(String(got[k as keyof GridAlert]), v, `${what}: ${k}`);
    else assert.deepEqual(got[k as keyof GridAlert], v, `${what}: ${k}`);
  }
}

// ---------------------------------------------------------------------------------------

const ercotDoc = () => JSON.parse(fixture('ercot-daily-prc.json')) as { lastUpdated?: unknown; current_condition: Record<string, unknown> };
const ercotWith = (cc: Record<string, unknown>, top: Record<string, unknown> = {}) => {
  const d = ercotDoc();
  Object.assign(d.current_condition, cc);
  for (const [k, v] of Object.entries(cc)) if (v === undefined) delete d.current_condition[k];
  return JSON.stringify({ ...d, ...top });
};

test('ercot: normal, each level and state', () => {
  const cases: [string, string, Want][] = [
    ['the fixture: normal', fixture('ercot-daily-prc.json'), { type: 'normal', level: 0, zone: 'ERCOT', issued: NOW, message: 'Normal Conditions: There is enough power for current demand. (PRC 8,642 MW)', program: 'ERCOT normal' }],
    ['EEA 1', ercotWith({ eea_level: 1, state: 'eea1', title: 'Energy Emergency Alert Level 1' }), { type: 'eea', level: 1 }],
    ['EEA 2', ercotWith({ eea_level: 2, state: 'emergency' }), { type: 'eea', level: 2 }],
    ['EEA 3 (whatever the state says)', ercotWith({ eea_level: 3, state: 'normal' }), { type: 'eea', level: 3 }],
    ['conservation appeal', ercotWith({ state: 'conservation', title: 'Conservation Appeal' }), { type: 'conservation', level: 0, message: /^Conservation Appeal/ }],
    ['Voluntary Conservation Notice', ercotWith({ state: 'Voluntary Conservation Notice' }), { type: 'conservation', level: 0 }],
    ['weather watch', ercotWith({ state: 'Weather Watch' }), { type: 'watch', level: 0 }],
    ['advisory', ercotWith({ state: 'advisory' }), { type: 'watch', level: 0 }],
    ['no datetime: lastUpdated', ercotWith({ datetime: undefined }), { type: 'normal', level: 0, issued: Date.parse('2025-07-15T22:00:10Z') }],
    ['no times, no title or note', ercotWith({ datetime: undefined, title: undefined, condition_note: undefined, prc_value: undefined }, { lastUpdated: undefined }), { type: 'normal', level: 0, message: 'ERCOT: normal', issued: undefined }],
    ['datetime in ms', ercotWith({ datetime: NOW }), { type: 'normal', level: 0, issued: NOW }],
    ['a huge note is cut', ercotWith({ condition_note: 'x'.repeat(1_000_000) }), { type: 'normal', level: 0, message: /^Normal Conditions: x{1900,}…$/ }],
    ['BOM', `\ufeff${fixture('ercot-daily-prc.json')}`, { type: 'normal', level: 0 }],
  ];
  for (const [what, body, want] of cases) check(valid(readErcot(body, opts())), want, what);
});

test('ercot: malformed and hostile bodies fail', () => {
  const cases: [string, string, FeedErrorCode, RegExp][] = [
    ['empty', '', 'GRID_ALERTS_ERR_PARSE', /empty/],
    ['truncated JSON', fixture('ercot-daily-prc.json').slice(0, 120), 'GRID_ALERTS_ERR_PARSE', /not JSON/],
    ['an HTML error page', '<html><body>Access Denied</body></html>', 'GRID_ALERTS_ERR_PARSE', /not JSON/],
    ['deep nesting', '['.repeat(100_000), 'GRID_ALERTS_ERR_PARSE', /not JSON/],
    ['an array', '[]', 'GRID_ALERTS_ERR_SHAPE', /expected a JSON object/],
    ['null', 'null', 'GRID_ALERTS_ERR_SHAPE', /expected a JSON object/],
    ['no current_condition', '{"lastUpdated":"x"}', 'GRID_ALERTS_ERR_SHAPE', /current_condition must be an object; got nothing/],
    ['current_condition a string', '{"current_condition":"normal"}', 'GRID_ALERTS_ERR_SHAPE', /current_condition must be an object/],
    ['eea_level missing', ercotWith({ eea_level: undefined }), 'GRID_ALERTS_ERR_SHAPE', /eea_level must be an integer from 0 to 3; got nothing/],
    ['eea_level a string', ercotWith({ eea_level: '2' }), 'GRID_ALERTS_ERR_SHAPE', /eea_level must be an integer.*"2"/],
    ['eea_level 4', ercotWith({ eea_level: 4 }), 'GRID_ALERTS_ERR_SHAPE', /eea_level/],
    ['eea_level 1.5', ercotWith({ eea_level: 1.5 }), 'GRID_ALERTS_ERR_SHAPE', /eea_level/],
    ['eea_level -1', ercotWith({ eea_level: -1 }), 'GRID_ALERTS_ERR_SHAPE', /eea_level/],
    ['eea_level null', ercotWith({ eea_level: null }), 'GRID_ALERTS_ERR_SHAPE', /eea_level/],
    ['state missing', ercotWith({ state: undefined }), 'GRID_ALERTS_ERR_SHAPE', /state must be a non-empty string/],
    ['state a number', ercotWith({ state: 0 }), 'GRID_ALERTS_ERR_SHAPE', /state must be a non-empty string/],
    ['state unknown', ercotWith({ state: 'purple' }), 'GRID_ALERTS_ERR_SHAPE', /"purple" is not a state this adapter knows/],
    ['emergency state but level 0', ercotWith({ state: 'emergency' }), 'GRID_ALERTS_ERR_SHAPE', /"emergency" is not a state/],
    ['title an object', ercotWith({ title: { a: 1 } }), 'GRID_ALERTS_ERR_SHAPE', /current_condition\.title must be a string/],
    ['prc_value an array', ercotWith({ prc_value: [1] }), 'GRID_ALERTS_ERR_SHAPE', /prc_value/],
    ['datetime garbage', ercotWith({ datetime: 'soon' }), 'GRID_ALERTS_ERR_SHAPE', /current_condition\.datetime is not a time/],
    ['lastUpdated garbage', ercotWith({ datetime: undefined }, { lastUpdated: 'Tuesday' }), 'GRID_ALERTS_ERR_SHAPE', /ercot: lastUpdated is not a time/],
  ];
  for (const [what, body, code, why] of cases) fails(() => readErcot(body, opts()), code, why, what);
});

// ---------------------------------------------------------------------------------------

const caisoStats = (gridstatus: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ ...(JSON.parse(fixture('caiso-stats.json')) as object), gridstatus, ...extra });
const notice = (type: string, startH: number, endH: number, extra: Record<string, unknown> = {}) => ({ type, start: new Date(NOW + startH * H).toISOString(), end: new Date(NOW + endH * H).toISOString(), message: `${type} text`, ...extra });

test('caiso: stats statuses, notices (JSON and RSS) and what is in force when', () => {
  const stats = fixture('caiso-stats.json');
  const notices = fixture('caiso-notices.json');
  const rss = fixture('caiso-notices.rss');
  const pdt = (s: string) => Date.parse(`${s}-07:00`);
  const cases: [string, string, string | undefined, number, Want][] = [
    ['stats: Normal', stats, undefined, NOW, { type: 'normal', level: 0, zone: 'CAISO', issued: NOW, message: 'CAISO: no alert in force (Normal; demand 38412 MW, reserve 4120 MW)' }],
    ['stats: Flex Alert', caisoStats(['Flex Alert']), undefined, NOW, { type: 'flex-alert', level: 0, message: 'Flex Alert: demand 38412 MW, reserve 4120 MW', issued: NOW }],
    ['stats: EEA Watch', caisoStats(['EEA Watch']), undefined, NOW, { type: 'watch', level: 0 }],
    ['stats: EEA 1', caisoStats(['EEA 1']), undefined, NOW, { type: 'eea', level: 1 }],
    ['stats: EEA Level 2', caisoStats(['Flex Alert', 'EEA Level 2']), undefined, NOW, { type: 'eea', level: 2 }],
    ['stats: Energy Emergency Alert 3', caisoStats(['Energy Emergency Alert 3']), undefined, NOW, { type: 'eea', level: 3 }],
    ['stats: RMO', caisoStats(['Normal', 'Restricted Maintenance Operations']), undefined, NOW, { type: 'watch', level: 0 }],
    ['stats + notices 15:00: RMO in force, Flex Alert not yet', stats, notices, NOW, { type: 'watch', level: 0, program: 'Restricted Maintenance Operations', start: pdt('2025-07-14T00:00:00'), end: pdt('2025-07-16T23:59:00') }],
    ['stats + notices 16:30: Flex Alert beats EEA Watch and RMO', stats, notices, pdt('2025-07-15T16:30:00'), { type: 'flex-alert', level: 0, start: pdt('2025-07-15T16:00:00'), end: pdt('2025-07-15T21:00:00'), issued: pdt('2025-07-14T19:30:00'), message: /^Flex Alert: Consumers are urged/ }],
    ['stats + notices 21:30: RMO again', stats, notices, pdt('2025-07-15T21:30:00'), { type: 'watch', level: 0 }],
    ['stats + notices on the 17th: normal', stats, notices, pdt('2025-07-17T12:00:00'), { type: 'normal', level: 0 }],
    ['notices alone as url', notices, undefined, pdt('2025-07-15T16:30:00'), { type: 'flex-alert', level: 0 }],
    ['notices RSS: upcoming Flex Alert announced with its start', stats, rss, NOW, { type: 'flex-alert', level: 0, start: pdt('2025-07-15T16:00:00'), message: 'Flex Alert: Consumers are urged to conserve electricity from 4 p.m. to 9 p.m.' }],
    ['notices RSS at 21:30: over', stats, rss, pdt('2025-07-15T21:30:00'), { type: 'normal', level: 0, message: /1 notice\(s\) of kinds not mapped/ }],
    ['notices: EEA 2 in force beats an upcoming EEA 3', stats, JSON.stringify([notice('EEA 2', -1, 2), notice('EEA 3', 1, 3)]), NOW, { type: 'eea', level: 2 }],
    ['notices: only upcoming, the most severe', stats, JSON.stringify([notice('Flex Alert', 1, 3), notice('EEA 1', 5, 6), notice('EEA Watch', 2, 4)]), NOW, { type: 'eea', level: 1, start: NOW + 5 * H }],
    ['notices: an ended marker closes an open Flex Alert', stats, JSON.stringify([{ type: 'Flex Alert', issued: new Date(NOW - 3 * H).toISOString() }, { type: 'Flex Alert ended', issued: new Date(NOW - H).toISOString() }]), NOW, { type: 'normal', level: 0 }],
    ['notices: open-ended and listed = in force', stats, JSON.stringify([{ type: 'EEA Watch', issued: new Date(NOW - 100 * H).toISOString() }]), NOW, { type: 'watch', level: 0 }],
    ['notices: unknown types ignored', stats, JSON.stringify({ notices: [{ type: 'Transmission outage notice' }] }), NOW, { type: 'normal', level: 0 }],
    ['notices: empty list', stats, '[]', NOW, { type: 'normal', level: 0 }],
  ];
  for (const [what, body, more, now, want] of cases) check(valid(readCaiso(body, more, opts(now))), want, what);
});

test('caiso: malformed and hostile bodies fail', () => {
  const stats = fixture('caiso-stats.json');
  const cases: [string, string, string | undefined, FeedErrorCode, RegExp][] = [
    ['stats truncated', stats.slice(0, 50), undefined, 'GRID_ALERTS_ERR_PARSE', /not JSON/],
    ['stats: unknown status', caisoStats(['Purple Alert']), undefined, 'GRID_ALERTS_ERR_SHAPE', /gridstatus\[0\] "Purple Alert" is not a status/],
    ['stats: empty gridstatus', caisoStats([]), undefined, 'GRID_ALERTS_ERR_SHAPE', /1 to 20 status strings/],
    ['stats: gridstatus a string', caisoStats('Normal'), undefined, 'GRID_ALERTS_ERR_SHAPE', /must be an array/],
    ['stats: a number in gridstatus', caisoStats([1]), undefined, 'GRID_ALERTS_ERR_SHAPE', /gridstatus\[0\] must be a string/],
    ['stats: thousands of statuses', caisoStats(Array(10_000).fill('Normal')), undefined, 'GRID_ALERTS_ERR_SHAPE', /1 to 20/],
    ['stats: demand a string', caisoStats(['Normal'], { CurrentSystemDemand: '38412' }), undefined, 'GRID_ALERTS_ERR_SHAPE', /CurrentSystemDemand must be a number/],
    ['stats: slotDate garbage', caisoStats(['Normal'], { slotDate: 'now' }), undefined, 'GRID_ALERTS_ERR_SHAPE', /slotDate is not a time/],
    ['stats: an "ended" status', caisoStats(['Flex Alert ended']), undefined, 'GRID_ALERTS_ERR_SHAPE', /not a status/],
    ['neither stats nor notices', '{"foo":1}', undefined, 'GRID_ALERTS_ERR_SHAPE', /expected a JSON array, or an object whose "notices"/],
    ['notices not JSON', stats, 'Service Unavailable', 'GRID_ALERTS_ERR_PARSE', /caiso notices: the body is not JSON/],
    ['notices: an entry not an object', stats, '["Flex Alert"]', 'GRID_ALERTS_ERR_SHAPE', /notices\[0\] must be an object/],
    ['notices: type missing', stats, '[{"message":"x"}]', 'GRID_ALERTS_ERR_SHAPE', /notices\[0\]\.type is required/],
    ['notices: type a number', stats, '[{"type":2}]', 'GRID_ALERTS_ERR_SHAPE', /notices\[0\]\.type must be a string/],
    ['notices: start unreadable', stats, '[{"type":"Flex Alert","start":"tomorrow 4pm"}]', 'GRID_ALERTS_ERR_SHAPE', /notices\[0\]\.start is not a time/],
    ['notices: end before start', stats, JSON.stringify([notice('Flex Alert', 3, 1)]), 'GRID_ALERTS_ERR_SHAPE', /is not after its start/],
    ['notices: too many', stats, JSON.stringify(Array(1001).fill({ type: 'x' })), 'GRID_ALERTS_ERR_PARSE', /more than 1000 entries/],
    ['notices RSS truncated', stats, fixture('caiso-notices.rss').slice(0, 400), 'GRID_ALERTS_ERR_PARSE', /not a readable RSS 2\.0 document/],
    ['notices RSS: bad pubDate', stats, '<rss><channel><item><title>Flex Alert</title><pubDate>yesterday</pubDate></item></channel></rss>', 'GRID_ALERTS_ERR_SHAPE', /<pubDate> is not a time/],
  ];
  for (const [what, body, more, code, why] of cases) fails(() => readCaiso(body, more, opts()), code, why, what);
});

// ---------------------------------------------------------------------------------------

const posting = (messageTypeName: string, extra: Record<string, unknown> = {}) => ({ priority: 'Alert', messageTypeName, regionName: 'PJM-RTO', message: 'm', effectiveStartTime: '07.15.2025 00:00', effectiveEndTime: '07.15.2025 23:59', ...extra });

test('pjm: posting types, areas and times', () => {
  const body = fixture('pjm-postings.json');
  const edt = (s: string) => Date.parse(`${s}-04:00`);
  const cases: [string, string, ReadOptions, Want, string[]?][] = [
    ['the fixture at 18:00 EDT: Max Gen alert (EEA 1) beats the Hot Weather Alert', body, opts(), { type: 'eea', level: 1, zone: 'PJM', program: 'Maximum Generation Emergency/Load Management Alert', start: edt('2025-07-15T00:01:00'), end: edt('2025-07-15T23:59:00'), issued: edt('2025-07-14T16:05:00'), message: /^Maximum Generation Emergency\/Load Management Alert \(PJM-RTO\): \[Alert\] NERC EEA Level 1/ }, ['Post Contingency Local Load Relief Warning']],
    ['the fixture at 19:30 EDT: BGE load management action (EEA 2)', body, opts(edt('2025-07-15T19:30:00')), { type: 'eea', level: 2, message: /\(BGE\)/ }],
    ['areas PJM-RTO and Mid-Atlantic at 19:30: BGE not counted', body, opts(edt('2025-07-15T19:30:00'), { areas: ['pjm-rto', 'Mid-Atlantic'] }), { type: 'eea', level: 1 }],
    ['areas Mid-Atlantic: the Hot Weather Alert', body, opts(NOW, { areas: ['Mid-Atlantic'] }), { type: 'watch', level: 0, program: 'Hot Weather Alert' }],
    ['areas Dominion: only a local posting, not mapped', body, opts(NOW, { areas: ['Dominion'] }), { type: 'normal', level: 0, message: 'PJM: no alert in force; 1 notice(s) of kinds not mapped' }],
    ['the 17th: everything has ended but the open local posting', body, opts(edt('2025-07-17T12:00:00')), { type: 'normal', level: 0 }],
    ['a bare array', JSON.stringify([posting('Hot Weather Alert')]), opts(), { type: 'watch', level: 0 }],
    ['empty', '[]', opts(), { type: 'normal', level: 0, message: 'PJM: no alert in force' }],
    ['ISO times and type alias', JSON.stringify([{ type: 'NERC EEA 2', start: '2025-07-15T17:00:00-04:00' }]), opts(), { type: 'eea', level: 2, start: edt('2025-07-15T17:00:00') }],
    ['announced for tomorrow', JSON.stringify([posting('Maximum Generation Emergency Alert', { effectiveStartTime: '07.16.2025 14:00', effectiveEndTime: '07.16.2025 20:00' })]), opts(), { type: 'eea', level: 1, start: edt('2025-07-16T14:00:00') }],
    ['null fields are absent', JSON.stringify([posting('Cold Weather Alert', { message: null, regionName: null, priority: null, effectiveEndTime: null })]), opts(), { type: 'watch', level: 0, message: 'Cold Weather Alert', end: undefined }],
  ];
  for (const [what, b, o, want, ignored] of cases) {
    const r = readPjm(b, o);
    check(valid(r), want, what);
    if (ignored) assert.deepEqual(r.ignored, ignored, `${what}: ignored`);
  }
});

test('pjm: each posting type maps to its level', () => {
  const cases: [string, GridAlert['type'], number][] = [
    ['Hot Weather Alert', 'watch', 0],
    ['Cold Weather Alert', 'watch', 0],
    ['Maximum Generation Emergency Alert', 'eea', 1],
    ['Maximum Generation Emergency/Load Management Alert', 'eea', 1],
    ['Capacity Emergency', 'eea', 1],
    ['NERC EEA Level 1', 'eea', 1],
    ['Load Management Reduction Action', 'eea', 2],
    ['Pre-Emergency Load Management Reduction Action', 'eea', 2],
    ['Emergency Load Mgmt Reduction Action', 'eea', 2],
    ['Maximum Generation Emergency Action', 'eea', 2],
    ['Voltage Reduction Warning', 'eea', 2],
    ['NERC EEA-2', 'eea', 2],
    ['Manual Load Dump Warning', 'load-shed', 3],
    ['Manual Load Dump Action', 'load-shed', 3],
    ['NERC EEA Level 3', 'load-shed', 3],
    ['Post Contingency Local Load Relief Warning', 'normal', 0],
    ['Geomagnetic Disturbance Warning', 'normal', 0],
    ['Synchronized Reserve Event', 'normal', 0],
  ];
  for (const [type, want, level] of cases) {
    const v = valid(readPjm(JSON.stringify([posting(type)]), opts()));
    assert.deepEqual([v.type, v.level], [want, level], type);
  }
  assert.deepEqual(pjmKind('Hot Weather Alert cancelled'), { end: true, type: 'watch' });
});

test('pjm: malformed and hostile bodies fail', () => {
  const cases: [string, string, FeedErrorCode, RegExp][] = [
    ['not JSON', '<html></html>', 'GRID_ALERTS_ERR_PARSE', /not JSON/],
    ['an object without postings', '{"items":[]}', 'GRID_ALERTS_ERR_SHAPE', /"postings"/],
    ['postings a string', '{"postings":"none"}', 'GRID_ALERTS_ERR_SHAPE', /"postings"/],
    ['a posting not an object', '[null]', 'GRID_ALERTS_ERR_SHAPE', /postings\[0\] must be an object; got null/],
    ['no type', '[{"message":"x"}]', 'GRID_ALERTS_ERR_SHAPE', /postings\[0\]\.messageTypeName is required/],
    ['type a number', '[{"messageTypeName":7}]', 'GRID_ALERTS_ERR_SHAPE', /messageTypeName must be a string; got number 7/],
    ['message an array', JSON.stringify([posting('Hot Weather Alert', { message: ['a'] })]), 'GRID_ALERTS_ERR_SHAPE', /postings\[0\]\.message must be a string/],
    ['start out of range', JSON.stringify([posting('Hot Weather Alert', { effectiveStartTime: '13.45.2025 25:00' })]), 'GRID_ALERTS_ERR_SHAPE', /effectiveStartTime is not a time/],
    ['end a boolean', JSON.stringify([posting('Hot Weather Alert', { effectiveEndTime: true })]), 'GRID_ALERTS_ERR_SHAPE', /effectiveEndTime is not a time/],
    ['end before start', JSON.stringify([posting('Hot Weather Alert', { effectiveEndTime: '07.14.2025 00:00' })]), 'GRID_ALERTS_ERR_SHAPE', /not after its start/],
    ['one bad posting among good ones', JSON.stringify([posting('Manual Load Dump Action'), 5]), 'GRID_ALERTS_ERR_SHAPE', /postings\[1\]/],
    ['ten thousand postings', JSON.stringify(Array(10_000).fill(posting('Hot Weather Alert'))), 'GRID_ALERTS_ERR_PARSE', /more than 1000 entries/],
  ];
  for (const [what, body, code, why] of cases) fails(() => readPjm(body, opts()), code, why, what);
});

// ---------------------------------------------------------------------------------------

const rss = (...items: string[]) => `<?xml version="1.0"?><rss version="2.0"><channel><title>AESO</title>${items.join('')}</channel></rss>`;
const item = (title: string, hoursAgo: number, description = '') => `<item><title>${title}</title><description>${description}</description><pubDate>${new Date(NOW - hoursAgo * H).toUTCString()}</pubDate></item>`;

test('aeso: the RSS history, newest first', () => {
  const cases: [string, string, Want][] = [
    ['the fixture: a Grid Alert issued 50 min ago', fixture('aeso-grid-alerts.rss'), { type: 'grid-alert', level: 2, zone: 'AESO', issued: Date.parse('2025-07-15T21:10:00Z'), message: 'Grid Alert issued: The AESO has declared a Grid Alert: supply is tight & Albertans are asked to reduce non-essential use.', program: 'Grid Alert issued' }],
    ['a Grid Alert', rss(item('Grid Alert', 1)), { type: 'grid-alert', level: 2, issued: NOW - H }],
    ['a Grid Alert, ended', rss(item('Grid Alert ended', 1), item('Grid Alert issued', 3)), { type: 'normal', level: 0, message: 'AESO: no alert in force' }],
    ['a Grid Alert, then EEA 3 in it', rss(item('Energy Emergency Alert Level 3', 1), item('Grid Alert', 3)), { type: 'eea', level: 3 }],
    ['EEA 2 then downgraded to EEA 1', rss(item('EEA Level 1', 1), item('EEA Level 2', 2)), { type: 'eea', level: 1 }],
    ['EEA 1 alone', rss(item('Energy Emergency Alert 1 declared', 1)), { type: 'eea', level: 1 }],
    ['rotating outages', rss(item('Rotating outages in effect', 1), item('Grid Alert', 2)), { type: 'load-shed', level: 3 }],
    ['EEA ended, Grid Alert goes on', rss(item('EEA Level 2 ended', 1), item('EEA Level 2', 2), item('Grid Alert', 3)), { type: 'grid-alert', level: 2 }],
    ['all clear ends everything', rss(item('All clear', 1), item('EEA Level 2', 2), item('Grid Alert', 3)), { type: 'normal', level: 0 }],
    ['an alert again after an end', rss(item('Grid Alert issued', 1), item('Grid Alert ended', 2), item('Grid Alert issued', 5)), { type: 'grid-alert', level: 2, issued: NOW - H }],
    ['items out of order: pubDate decides', rss(item('Grid Alert issued', 5), item('Grid Alert ended', 1)), { type: 'normal', level: 0 }],
    ['CDATA and entities in titles', rss(item('<![CDATA[Grid Alert — update & details]]>', 1), item('Grid&#32;Alert ended', 2)), { type: 'grid-alert', level: 2 }],
    ['unrelated items among known ones', rss(item('Consultation open', 1), item('Grid Alert ended', 2)), { type: 'normal', level: 0, message: 'AESO: no alert in force; 1 notice(s) of kinds not mapped' }],
    ['an empty feed', rss(), { type: 'normal', level: 0 }],
    ['an alert just inside the age bound', rss(item('Grid Alert', 47)), { type: 'grid-alert', level: 2 }],
    ['an old alert that was ended is fine', rss(item('Grid Alert ended', 60), item('Grid Alert', 70)), { type: 'normal', level: 0 }],
  ];
  for (const [what, body, want] of cases) check(valid(readAeso(body, opts())), want, what);
  assert.deepEqual(genericKind('Grid Alert has ended'), { end: true, type: 'grid-alert' });
});

test('aeso: malformed, stale and hostile feeds fail', () => {
  const cases: [string, string, FeedErrorCode, RegExp][] = [
    ['JSON instead of RSS', '{"alerts":[]}', 'GRID_ALERTS_ERR_PARSE', /not a readable RSS 2\.0 document/],
    ['an HTML page', '<!DOCTYPE html><html><body>Maintenance</body></html>', 'GRID_ALERTS_ERR_PARSE', /root element is <html>/],
    ['truncated', fixture('aeso-grid-alerts.rss').slice(0, 700), 'GRID_ALERTS_ERR_PARSE', /truncated|unterminated/],
    ['wording changed: nothing recognised', rss(item('Supply Advisory', 1), item('Supply Advisory over', 2)), 'GRID_ALERTS_ERR_SHAPE', /none of the 2 items has a title this adapter knows/],
    ['no titles at all', rss('<item><description>x</description></item>'), 'GRID_ALERTS_ERR_SHAPE', /none of the 1 items/],
    ['a Grid Alert without pubDate', rss('<item><title>Grid Alert</title></item>'), 'GRID_ALERTS_ERR_SHAPE', /<pubDate> is required/],
    ['an unreadable pubDate', rss('<item><title>Grid Alert</title><pubDate>15/07/2025</pubDate></item>'), 'GRID_ALERTS_ERR_SHAPE', /<pubDate> is not a time/],
    ['a Grid Alert never ended, 3 days old', rss(item('Grid Alert', 72)), 'GRID_ALERTS_ERR_STALE', /older than alertMaxAgeMs/],
    ['entity declarations', `<!DOCTYPE rss [<!ENTITY x "Grid Alert">]>${rss('<item><title>&x;</title></item>')}`, 'GRID_ALERTS_ERR_PARSE', /internal subset/],
    ['a million items', rss('<item/>'.repeat(1_000_000)), 'GRID_ALERTS_ERR_PARSE', /more than 1000 items/],
  ];
  // A bounded reader stops at item 1001: counted in characters of string work (about 5 per
  // character read), not timed. The million items are 7 MB; the first 1001 are 7 kB.
  const upTo = new Map([['a million items', rss().length + 1001 * '<item/>'.length]]);
  for (const [what, body, code, why] of cases) {
    const w = countStringWork(() => readAeso(body, opts()));
    fails(() => {
      throw w.error ?? new Error('no error');
    }, code, why, what);
    const budget = 8 * (upTo.get(what) ?? body.length) + 256;
    assert.ok(w.chars <= budget, `${what}: ${w.chars} characters of work, more than ${budget}: the feed was read past the bound`);
  }
});
