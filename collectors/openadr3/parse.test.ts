/**
 * Case tables for the pure parts of the openadr3 collector: ISO 8601 durations, RFC 3339
 * date-times, targets and region matching, GET /events queries, the event → grid.event mapping
 * (valid, malformed, hostile), notifications; and the fixtures read end to end, every fact
 * checked by the state layer's validateSignal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateSignal } from '../../gslb/state/signals.js';
import {
  addDuration,
  eventQueries,
  matchesRegion,
  notificationWantsPoll,
  openEnd,
  parseDateTime,
  parseDuration,
  readEvent,
  readNotification,
  readProgramNames,
  readTargets,
  type EventFact,
  type MapOptions,
  type ProgramInfo,
  type ReadEvent,
  type RegionMatch,
} from './parse.js';
import { fixture } from './test-vtn.js';
import { countIndexReads } from '../../test/helpers/work.js';

const T = (s: string) => Date.parse(s);
const H = 3_600_000;
const NOW = T('2031-06-01T12:00:00Z');
const DAY = 24 * H;

test('parseDuration: the definitions\' pattern, case table', () => {
  const d = (o: Partial<Record<'years' | 'months' | 'days' | 'hours' | 'minutes' | 'seconds', number>>, negative = false) => ({
    negative,
    years: 0,
    months: 0,
    days: 0,
    hours: 0,
    minutes: 0,
    seconds: 0,
    ...o,
  });
  const cases: [unknown, ReturnType<typeof d> | null][] = [
    ['PT1H', d({ hours: 1 })],
    ['PT15M', d({ minutes: 15 })],
    ['P1D', d({ days: 1 })],
    ['P2W', d({ days: 14 })],
    ['P9999Y', d({ years: 9999 })],
    ['PT0S', d({})],
    ['PT0.5S', d({ seconds: 0.5 })],
    ['P1Y2M3DT4H5M6S', d({ years: 1, months: 2, days: 3, hours: 4, minutes: 5, seconds: 6 })],
    ['P1M', d({ months: 1 })],
    ['PT1M', d({ minutes: 1 })],
    ['-PT1H', d({ hours: 1 }, true)],
    ['P1DT', d({ days: 1 })], // the definitions' pattern allows a bare T
    ['', null],
    ['P', null],
    ['PT', null],
    ['1H', null],
    ['PT1.5H', null],
    ['P1H', null],
    ['pt1h', null],
    ['PT1H ', null],
    ['P1W2D', null],
    [3600, null],
    [null, null],
    [`P${'9'.repeat(70)}Y`, null],
  ];
  for (const [input, want] of cases) assert.deepEqual(parseDuration(input), want, JSON.stringify(input));
});

test('addDuration: calendar-aware in UTC, case table', () => {
  const cases: [string, string, string][] = [
    ['2031-06-01T18:00:00Z', 'PT2H', '2031-06-01T20:00:00.000Z'],
    ['2031-06-01T23:30:00Z', 'PT45M', '2031-06-02T00:15:00.000Z'],
    ['2031-06-01T00:00:00Z', 'P1D', '2031-06-02T00:00:00.000Z'],
    ['2031-06-01T00:00:00Z', 'P2W', '2031-06-15T00:00:00.000Z'],
    ['2031-06-01T00:00:00Z', 'PT0.5S', '2031-06-01T00:00:00.500Z'],
    ['2031-01-31T10:00:00Z', 'P1M', '2031-02-28T10:00:00.000Z'],
    ['2032-02-29T10:00:00Z', 'P1Y', '2033-02-28T10:00:00.000Z'],
    ['2031-11-15T06:00:00Z', 'P3M', '2032-02-15T06:00:00.000Z'],
    ['2031-03-30T00:00:00Z', 'P1DT1H', '2031-03-31T01:00:00.000Z'],
  ];
  for (const [start, dur, want] of cases) assert.equal(new Date(addDuration(T(start), parseDuration(dur)!)).toISOString(), want, `${start} + ${dur}`);
  assert.ok(Number.isNaN(addDuration(T('2031-01-01T00:00:00Z'), parseDuration('P300000Y')!)), 'beyond the Date range → NaN');
  assert.ok(Number.isNaN(addDuration(T('2031-01-01T00:00:00Z'), parseDuration(`PT${'9'.repeat(40)}S`)!)), 'huge seconds → NaN');
});

test('parseDateTime: RFC 3339, case table', () => {
  const cases: [unknown, number | 'now' | null][] = [
    ['2031-06-01T18:00:00Z', T('2031-06-01T18:00:00Z')],
    ['2031-06-01T18:00:00z', T('2031-06-01T18:00:00Z')],
    ['2031-06-01T18:00:00.123Z', T('2031-06-01T18:00:00.123Z')],
    ['2031-06-01T18:00:00.123456789Z', T('2031-06-01T18:00:00.123Z')],
    ['2031-06-01T20:00:00+02:00', T('2031-06-01T18:00:00Z')],
    ['2031-06-01T12:30:00-0530', T('2031-06-01T18:00:00Z')],
    ['2031-06-01T18:00:00', T('2031-06-01T18:00:00Z')], // no offset: read as UTC
    ['2031-06-01T18:00', T('2031-06-01T18:00:00Z')],
    ['2031-06-01', T('2031-06-01T00:00:00Z')],
    ['2031-06-01 18:00:00Z', T('2031-06-01T18:00:00Z')],
    ['2032-02-29T00:00:00Z', T('2032-02-29T00:00:00Z')],
    ['0001-01-01', 'now'],
    ['0001-01-01T00:00:00', 'now'],
    ['0001-01-01T00:00:00Z', 'now'],
    ['2031-02-30T00:00:00Z', null],
    ['2031-13-01T00:00:00Z', null],
    ['2031-06-01T25:00:00Z', null],
    ['2031-06-01T18:00:00+25:00', null],
    ['June 1 2031', null],
    ['2031-06-01T18:00:00ZZ', null],
    ['0999-01-01T00:00:00Z', null],
    [1780000000000, null],
    [null, null],
    ['2'.repeat(100), null],
  ];
  for (const [input, want] of cases) assert.equal(parseDateTime(input), want, JSON.stringify(input));
});

test('targets and region matching: 3.0.1 valuesMaps and 3.1 strings, case table', () => {
  assert.deepEqual(readTargets(undefined), []);
  assert.deepEqual(readTargets(null), []);
  assert.deepEqual(readTargets([]), []);
  assert.equal(readTargets('site-a'), null);
  assert.equal(readTargets({ type: 'GROUP', values: ['a'] }), null);
  assert.deepEqual(readTargets([{ type: 'GROUP', values: ['a', 7, true, { x: 1 }] }, 'site-b']), [{ type: 'GROUP', values: ['a', '7', 'true'] }, { values: ['site-b'] }]);
  assert.equal(readTargets(new Array(5000).fill('x'))!.length, 1000, 'bounded');
  const [garbled] = readTargets([42])!;
  assert.deepEqual(garbled!.values, [], 'a garbled target matches nothing');

  const siteA: RegionMatch = { region: 'us-va', targets: [{ type: 'RESOURCE_NAME', values: ['site-a'] }], programs: ['dr-program-a'] };
  const ven: RegionMatch = { region: 'eu-west', venName: 'ven-eu' };
  const v31: RegionMatch = { region: 'ap-tyo', targets: ['site-b'] };
  const all: RegionMatch = { region: 'ap-sin' };
  const t = (raw: unknown) => readTargets(raw)!;
  const cases: [string, RegionMatch, string | undefined, unknown, boolean][] = [
    ['typed match', siteA, 'dr-program-a', [{ type: 'RESOURCE_NAME', values: ['site-z', 'site-a'] }], true],
    ['typed: other value', siteA, 'dr-program-a', [{ type: 'RESOURCE_NAME', values: ['site-z'] }], false],
    ['typed: same value, other type', siteA, 'dr-program-a', [{ type: 'GROUP', values: ['site-a'] }], false],
    ['3.1 string against a typed region target', siteA, 'dr-program-a', ['site-a'], true],
    ['untargeted event is for every VEN', siteA, 'dr-program-a', null, true],
    ['untargeted but another program', siteA, 'tou-price', [], false],
    ['program unknown and the region lists programs', siteA, undefined, [], false],
    ['one of several event targets', siteA, 'dr-program-a', [{ type: 'GROUP', values: ['g'] }, { type: 'RESOURCE_NAME', values: ['site-a'] }], true],
    ['venName against VEN_NAME', ven, 'x', [{ type: 'VEN_NAME', values: ['ven-eu'] }], true],
    ['venName against a 3.1 string', ven, 'x', ['ven-eu'], true],
    ['venName against RESOURCE_NAME', ven, 'x', [{ type: 'RESOURCE_NAME', values: ['ven-eu'] }], false],
    ['3.1 region target against a 3.1 string', v31, 'flex-east', ['site-c', 'site-b'], true],
    ['3.1 region target against a typed event target', v31, 'flex-east', [{ type: 'RESOURCE_NAME', values: ['site-b'] }], true],
    ['3.1 miss', v31, 'flex-east', ['site-q'], false],
    ['a region without targets takes every event', all, 'anything', ['site-q'], true],
    ['a garbled event target never widens', v31, 'flex-east', [42], false],
  ];
  for (const [what, r, prog, targets, want] of cases) assert.equal(matchesRegion(r, prog, t(targets)), want, what);
});

test('eventQueries: the targets query parameters of each version, case table', () => {
  const a: RegionMatch = { region: 'us-va', targets: [{ type: 'RESOURCE_NAME', values: ['site-a'] }] };
  const b: RegionMatch = { region: 'eu-west', targets: [{ type: 'GROUP', values: ['zone-west'] }, { type: 'RESOURCE_NAME', values: ['site-c'] }], venName: 'ven-eu' };
  const s: RegionMatch = { region: 'ap-tyo', targets: ['site-b', 'zone-east'] };
  const cases: [string, RegionMatch[], '3.0.1' | '3.1', boolean, string[]][] = [
    ['3.0.1 one region', [a], '3.0.1', true, ['targetType=RESOURCE_NAME&targetValues=site-a']],
    [
      '3.0.1 two regions, types grouped',
      [a, b],
      '3.0.1',
      true,
      ['targetType=GROUP&targetValues=zone-west', 'targetType=RESOURCE_NAME&targetValues=site-a', 'targetType=RESOURCE_NAME&targetValues=site-c', 'targetType=VEN_NAME&targetValues=ven-eu'],
    ],
    ['3.0.1 with a 3.1 string target: unfiltered', [a, s], '3.0.1', true, ['']],
    ['3.1 strings', [s], '3.1', true, ['targets=site-b&targets=zone-east']],
    ['3.1 from typed targets and venName', [b], '3.1', true, ['targets=site-c&targets=ven-eu&targets=zone-west']],
    ['a region taking every event: unfiltered', [a, { region: 'x' }], '3.0.1', true, ['']],
    ['filterQueries off', [a], '3.0.1', false, ['']],
  ];
  for (const [what, regions, version, filter, want] of cases) assert.deepEqual(eventQueries(regions, version, filter), want, what);
});

const opts = (o: Partial<MapOptions> = {}): MapOptions => ({ now: NOW, maxIntervals: 500, openEndedMs: DAY, ...o });
const prog = (name: string, units: Record<string, string> = {}): ProgramInfo => ({ name, descriptors: new Map(Object.entries(units)) });
const ev = (o: Record<string, unknown>) => ({ id: 'e1', programID: 'p1', modificationDateTime: '2031-06-01T10:00:00Z', ...o });
const one = (payloads: unknown[], extra: Record<string, unknown> = {}) => ev({ intervals: [{ id: 0, intervalPeriod: { start: '2031-06-01T18:00:00Z', duration: 'PT1H' }, payloads }], ...extra });
const at = (start: string, end: string) => ({ start: T(start), end: T(end) });

test('readEvent: event → facts, case table (valid, malformed, hostile)', () => {
  type Want = { facts: Partial<EventFact>[]; incomplete?: boolean; problem?: RegExp } | { error: RegExp };
  const slot = at('2031-06-01T18:00:00Z', '2031-06-01T19:00:00Z');
  const cases: [string, unknown, ProgramInfo | undefined, Partial<MapOptions>, Want][] = [
    ['SIMPLE level 3', one([{ type: 'SIMPLE', values: [3] }], { priority: 1 }), prog('dr'), {}, { facts: [{ id: 'e1/0', ...slot, type: 'simple', level: 3, priority: 1, program: 'dr' }] }],
    ['SIMPLE level 0', one([{ type: 'SIMPLE', values: [0] }]), undefined, {}, { facts: [{ id: 'e1/0', ...slot, type: 'simple', level: 0 }] }],
    ['SIMPLE 4 is refused', one([{ type: 'SIMPLE', values: [4] }]), undefined, {}, { facts: [], incomplete: true, problem: /SIMPLE value 4 is not an integer 0–3/ }],
    ['SIMPLE "3" (a string) is refused', one([{ type: 'SIMPLE', values: ['3'] }]), undefined, {}, { facts: [], incomplete: true, problem: /SIMPLE value "3"/ }],
    ['SIMPLE 1.5 is refused', one([{ type: 'SIMPLE', values: [1.5] }]), undefined, {}, { facts: [], incomplete: true }],
    ['SIMPLE without values', one([{ type: 'SIMPLE' }]), undefined, {}, { facts: [], incomplete: true, problem: /missing/ }],
    [
      'IMPORT_CAPACITY_LIMIT in KW (event descriptor)',
      one([{ type: 'IMPORT_CAPACITY_LIMIT', values: [1200] }], { payloadDescriptors: [{ objectType: 'EVENT_PAYLOAD_DESCRIPTOR', payloadType: 'IMPORT_CAPACITY_LIMIT', units: 'KW' }] }),
      undefined,
      {},
      { facts: [{ id: 'e1/0', ...slot, type: 'import-capacity-limit', limitW: 1_200_000 }] },
    ],
    ['IMPORT_CAPACITY_LIMIT, units from the program', one([{ type: 'IMPORT_CAPACITY_LIMIT', values: [0.1] }]), prog('dr', { IMPORT_CAPACITY_LIMIT: 'KW' }), {}, { facts: [{ type: 'import-capacity-limit', limitW: 100 }] }],
    [
      'the event\'s units win over the program\'s',
      one([{ type: 'IMPORT_CAPACITY_LIMIT', values: [3] }], { payloadDescriptors: [{ payloadType: 'IMPORT_CAPACITY_LIMIT', units: 'MW' }] }),
      prog('dr', { IMPORT_CAPACITY_LIMIT: 'KW' }),
      {},
      { facts: [{ limitW: 3_000_000 }] },
    ],
    ['units in lower case (kW)', one([{ type: 'IMPORT_CAPACITY_LIMIT', values: [2] }], { payloadDescriptors: [{ payloadType: 'IMPORT_CAPACITY_LIMIT', units: 'kW' }] }), undefined, {}, { facts: [{ limitW: 2000 }] }],
    ['no units anywhere: refused', one([{ type: 'IMPORT_CAPACITY_LIMIT', values: [2] }]), undefined, {}, { facts: [], incomplete: true, problem: /no units/ }],
    ['no units, unitsWhenMissing MW', one([{ type: 'IMPORT_CAPACITY_LIMIT', values: [2] }]), undefined, { unitsWhenMissing: 'MW' }, { facts: [{ limitW: 2_000_000 }] }],
    ['units KWH are not a power', one([{ type: 'IMPORT_CAPACITY_LIMIT', values: [2] }], { payloadDescriptors: [{ payloadType: 'IMPORT_CAPACITY_LIMIT', units: 'KWH' }] }), undefined, {}, { facts: [], incomplete: true, problem: /units "KWH", not a power/ }],
    ['negative limit refused', one([{ type: 'IMPORT_CAPACITY_LIMIT', values: [-5] }]), undefined, { unitsWhenMissing: 'W' }, { facts: [], incomplete: true, problem: /not a number ≥ 0/ }],
    ['DISPATCH_SETPOINT in W', one([{ type: 'DISPATCH_SETPOINT', values: [500] }], { payloadDescriptors: [{ payloadType: 'DISPATCH_SETPOINT', units: 'W' }] }), undefined, {}, { facts: [{ type: 'dispatch-setpoint', limitW: 500 }] }],
    ['DISPATCH_SETPOINT in GW', one([{ type: 'DISPATCH_SETPOINT', values: [1.25] }], { payloadDescriptors: [{ payloadType: 'DISPATCH_SETPOINT', units: 'GW' }] }), undefined, {}, { facts: [{ limitW: 1.25e9 }] }],
    ['ALERT_GRID_EMERGENCY', one([{ type: 'ALERT_GRID_EMERGENCY', values: ['shed now'] }]), undefined, {}, { facts: [{ id: 'e1/0', ...slot, type: 'grid-emergency' }] }],
    ['PRICE is not mapped (and not a problem)', one([{ type: 'PRICE', values: [0.2] }]), undefined, {}, { facts: [], incomplete: false }],
    ['ALERT_FLEX_ALERT is not mapped', one([{ type: 'ALERT_FLEX_ALERT', values: ['x'] }]), undefined, {}, { facts: [] }],
    [
      'two recognised payloads in one interval: ids carry the type',
      one([{ type: 'SIMPLE', values: [2] }, { type: 'IMPORT_CAPACITY_LIMIT', values: [5] }], { payloadDescriptors: [{ payloadType: 'IMPORT_CAPACITY_LIMIT', units: 'MW' }] }),
      undefined,
      {},
      { facts: [{ id: 'e1/0/simple', level: 2 }, { id: 'e1/0/import-capacity-limit', limitW: 5e6 }] },
    ],
    ['the same type twice: the first wins', one([{ type: 'SIMPLE', values: [2] }, { type: 'SIMPLE', values: [3] }]), undefined, {}, { facts: [{ id: 'e1/0', level: 2 }] }],
    [
      'the event\'s intervalPeriod: consecutive intervals',
      ev({ intervalPeriod: { start: '2031-06-01T13:00:00Z', duration: 'PT30M' }, intervals: [1, 2, 3].map((l, i) => ({ id: 10 + i, payloads: [{ type: 'SIMPLE', values: [l] }] })) }),
      undefined,
      {},
      {
        facts: [
          { id: 'e1/10', ...at('2031-06-01T13:00:00Z', '2031-06-01T13:30:00Z'), level: 1 },
          { id: 'e1/11', ...at('2031-06-01T13:30:00Z', '2031-06-01T14:00:00Z'), level: 2 },
          { id: 'e1/12', ...at('2031-06-01T14:00:00Z', '2031-06-01T14:30:00Z'), level: 3 },
        ],
      },
    ],
    [
      'an interval\'s own period overrides the event\'s, field by field',
      ev({
        intervalPeriod: { start: '2031-06-01T13:00:00Z', duration: 'PT30M' },
        intervals: [
          { id: 0, intervalPeriod: { start: '2031-06-01T16:00:00Z' }, payloads: [{ type: 'SIMPLE', values: [1] }] },
          { id: 1, intervalPeriod: { duration: 'PT2H' }, payloads: [{ type: 'SIMPLE', values: [2] }] },
        ],
      }),
      undefined,
      {},
      { facts: [{ id: 'e1/0', ...at('2031-06-01T16:00:00Z', '2031-06-01T16:30:00Z') }, { id: 'e1/1', ...at('2031-06-01T16:30:00Z', '2031-06-01T18:30:00Z') }] },
    ],
    [
      'ended intervals are skipped, current ones kept',
      ev({ intervalPeriod: { start: '2031-06-01T10:00:00Z', duration: 'PT1H' }, intervals: [0, 1, 2].map((i) => ({ id: i, payloads: [{ type: 'SIMPLE', values: [1] }] })) }),
      undefined,
      {},
      { facts: [{ id: 'e1/2', ...at('2031-06-01T12:00:00Z', '2031-06-01T13:00:00Z') }] },
    ],
    [
      'P9999Y is open-ended: capped at start + openEndedMs',
      ev({ intervalPeriod: { start: '2031-06-01T11:00:00Z', duration: 'P9999Y' }, intervals: [{ id: 7, payloads: [{ type: 'ALERT_GRID_EMERGENCY', values: ['x'] }] }] }),
      undefined,
      {},
      { facts: [{ id: 'e1/7', ...at('2031-06-01T11:00:00Z', '2031-06-02T11:00:00Z') }] },
    ],
    [
      'open-ended and long running: extended in steps, at least half a step left',
      ev({ intervalPeriod: { start: '2031-05-28T00:00:00Z', duration: 'P9999Y' }, intervals: [{ id: 0, payloads: [{ type: 'SIMPLE', values: [1] }] }] }),
      undefined,
      {},
      { facts: [{ ...at('2031-05-28T00:00:00Z', '2031-06-02T00:00:00Z') }] },
    ],
    ['PT0S is open-ended', ev({ intervals: [{ id: 0, intervalPeriod: { start: '2031-06-01T18:00:00Z', duration: 'PT0S' }, payloads: [{ type: 'SIMPLE', values: [1] }] }] }), undefined, {}, { facts: [{ ...at('2031-06-01T18:00:00Z', '2031-06-02T18:00:00Z') }] }],
    ['no duration is open-ended', ev({ intervals: [{ id: 0, intervalPeriod: { start: '2031-06-01T18:00:00Z' }, payloads: [{ type: 'SIMPLE', values: [1] }] }] }), undefined, {}, { facts: [{ ...at('2031-06-01T18:00:00Z', '2031-06-02T18:00:00Z') }] }],
    [
      'after an open-ended interval, one without a start cannot be placed',
      ev({ intervalPeriod: { start: '2031-06-01T18:00:00Z', duration: 'P9999Y' }, intervals: [0, 1].map((i) => ({ id: i, payloads: [{ type: 'SIMPLE', values: [1] }] })) }),
      undefined,
      {},
      { facts: [{ id: 'e1/0' }], incomplete: true, problem: /interval 1: no start/ },
    ],
    [
      '3.1 start 0001-01-01 ("now"): the event\'s modification time',
      ev({ intervalPeriod: { start: '0001-01-01', duration: 'PT4H' }, intervals: [{ id: 0, payloads: [{ type: 'SIMPLE', values: [2] }] }] }),
      undefined,
      {},
      { facts: [{ ...at('2031-06-01T10:00:00Z', '2031-06-01T14:00:00Z') }] },
    ],
    [
      '"now" without VTN times: when first seen',
      { id: 'e1', programID: 'p1', intervalPeriod: { start: '0001-01-01T00:00:00Z', duration: 'PT1H' }, intervals: [{ id: 0, payloads: [{ type: 'SIMPLE', values: [2] }] }] },
      undefined,
      { firstSeen: T('2031-06-01T11:30:00Z') },
      { facts: [{ ...at('2031-06-01T11:30:00Z', '2031-06-01T12:30:00Z') }] },
    ],
    [
      'randomizeStart is read as zero',
      ev({ intervals: [{ id: 0, intervalPeriod: { start: '2031-06-01T18:00:00Z', duration: 'PT1H', randomizeStart: 'PT15M' }, payloads: [{ type: 'SIMPLE', values: [1] }] }] }),
      undefined,
      {},
      { facts: [{ ...slot }] },
    ],
    ['priority above 1000 is kept as 1000', one([{ type: 'SIMPLE', values: [1] }], { priority: 5000 }), undefined, {}, { facts: [{ priority: 1000 }] }],
    ['priority -1 is left out (noted, not incomplete)', one([{ type: 'SIMPLE', values: [1] }], { priority: -1 }), undefined, {}, { facts: [{ level: 1 }], incomplete: false, problem: /priority -1/ }],
    ['priority null: none', one([{ type: 'SIMPLE', values: [1] }], { priority: null }), undefined, {}, { facts: [{ level: 1 }], incomplete: false }],
    ['3.1 intervals absent: no facts', { id: 'e1', programID: 'p1' }, undefined, {}, { facts: [] }],
    ['duplicate interval id', ev({ intervalPeriod: { start: '2031-06-01T13:00:00Z', duration: 'PT1H' }, intervals: [0, 0].map((i) => ({ id: i, payloads: [{ type: 'SIMPLE', values: [1] }] })) }), undefined, {}, { facts: [{ id: 'e1/0' }], incomplete: true, problem: /appears twice/ }],
    ['no start anywhere', ev({ intervals: [{ id: 0, payloads: [{ type: 'SIMPLE', values: [1] }] }] }), undefined, {}, { facts: [], incomplete: true, problem: /no start/ }],
    ['bad start', ev({ intervals: [{ id: 0, intervalPeriod: { start: 'tomorrow' }, payloads: [] }] }), undefined, {}, { facts: [], incomplete: true, problem: /start "tomorrow" is not a date-time/ }],
    ['bad duration', ev({ intervals: [{ id: 0, intervalPeriod: { start: '2031-06-01T13:00:00Z', duration: '1 hour' }, payloads: [] }] }), undefined, {}, { facts: [], incomplete: true, problem: /not an ISO 8601 duration/ }],
    ['negative duration', ev({ intervals: [{ id: 0, intervalPeriod: { start: '2031-06-01T13:00:00Z', duration: '-PT1H' }, payloads: [] }] }), undefined, {}, { facts: [], incomplete: true }],
    ['interval id not an integer', ev({ intervals: [{ id: 'zero', intervalPeriod: { start: '2031-06-01T13:00:00Z' }, payloads: [] }] }), undefined, {}, { facts: [], incomplete: true, problem: /id is not an integer/ }],
    ['payloads not an array', ev({ intervals: [{ id: 0, intervalPeriod: { start: '2031-06-01T13:00:00Z' }, payloads: { type: 'SIMPLE' } }] }), undefined, {}, { facts: [], incomplete: true }],
    ['an interval that is not an object', ev({ intervals: ['x'] }), undefined, {}, { facts: [], incomplete: true }],
    ['not an object', 'evt', undefined, {}, { error: /not a JSON object/ }],
    ['no id', { programID: 'p1', intervals: [] }, undefined, {}, { error: /no usable id/ }],
    ['id not URL-safe', { id: 'a/b', programID: 'p1', intervals: [] }, undefined, {}, { error: /no usable id/ }],
    ['id too long', { id: 'a'.repeat(129), programID: 'p1', intervals: [] }, undefined, {}, { error: /no usable id/ }],
    ['id an object with a toString', { id: { toString: 1 }, programID: 'p1', intervals: [] }, undefined, {}, { error: /no usable id \(an object\)/ }],
    ['prototype names as payload type and units', one([{ type: 'constructor', values: [1] }, { type: '__proto__', values: [1] }, { type: 'IMPORT_CAPACITY_LIMIT', values: [1] }], { payloadDescriptors: [{ payloadType: 'IMPORT_CAPACITY_LIMIT', units: 'constructor' }] }), undefined, {}, { facts: [], incomplete: true, problem: /not a power/ }],
    ['modificationDateTime an object', one([{ type: 'SIMPLE', values: [1] }], { modificationDateTime: { toString: 1 }, createdDateTime: [1] }), undefined, {}, { facts: [{ level: 1 }] }],
    ['no programID', { id: 'e1', intervals: [] }, undefined, {}, { error: /programID/ }],
    ['targets not an array', { id: 'e1', programID: 'p1', targets: 'site-a', intervals: [] }, undefined, {}, { error: /targets is not an array/ }],
    ['intervals not an array', { id: 'e1', programID: 'p1', intervals: { id: 0 } }, undefined, {}, { error: /intervals is not an array/ }],
    ['intervalPeriod not an object', { id: 'e1', programID: 'p1', intervalPeriod: 'PT1H', intervals: [] }, undefined, {}, { error: /intervalPeriod is not an object/ }],
  ];
  for (const [what, raw, program, o, want] of cases) {
    const r = readEvent(raw, program, opts(o));
    if ('error' in want) {
      assert.ok('error' in r, `${what}: an error`);
      assert.match((r as { error: string }).error, want.error, what);
      continue;
    }
    assert.ok(!('error' in r), `${what}: ${(r as { error?: string }).error}`);
    const got = r as ReadEvent;
    assert.equal(got.facts.length, want.facts.length, `${what}: ${JSON.stringify(got.facts)} ${got.problems.join('; ')}`);
    want.facts.forEach((f, i) => {
      for (const [k, v] of Object.entries(f)) assert.deepEqual(got.facts[i]![k as keyof EventFact], v, `${what}: facts[${i}].${k}`);
    });
    if (want.incomplete !== undefined) assert.equal(got.incomplete, want.incomplete, `${what}: incomplete`);
    if (want.problem) assert.ok(got.problems.some((p) => want.problem!.test(p)), `${what}: problems ${JSON.stringify(got.problems)}`);
    // Every fact is a valid grid.event.
    for (const f of got.facts) validateSignal({ region: 'r1', kind: 'grid.event', source: 'openadr3/test', key: f.id, observedAt: NOW, expiresAt: Math.max(f.end, NOW + 1), value: f }, NOW, new Set(['r1']));
  }
});

test('readEvent: hostile sizes are bounded (10^6 intervals, huge targets)', () => {
  // Work is counted in elements read (a counting Proxy over the arrays), not timed.
  const intervals = countIndexReads(Array.from({ length: 1_000_000 }, (_, i) => ({ id: i, payloads: [{ type: 'SIMPLE', values: [1] }] })));
  const r = readEvent(ev({ intervalPeriod: { start: '2031-06-01T12:00:00Z', duration: 'PT1M' }, intervals: intervals.buf }), undefined, opts({ maxIntervals: 500 })) as ReadEvent;
  assert.ok(intervals.reads() <= 500, `${intervals.reads()} of 10^6 intervals read, bound 500`);
  assert.equal(r.facts.length, 500);
  assert.equal(r.incomplete, true);
  assert.match(r.problems[0]!, /1000000 intervals; only the first 500 are read/);
  assert.ok(r.problems.length <= 5, 'problems bounded');
  // A million garbage intervals: bounded problems, no facts.
  const garbage = countIndexReads(new Array(1_000_000).fill(0));
  const junk = readEvent(ev({ intervals: garbage.buf }), undefined, opts({ maxIntervals: 1000 })) as ReadEvent;
  assert.equal(junk.facts.length, 0);
  assert.ok(junk.problems.length <= 5);
  assert.ok(garbage.reads() <= 1000, `${garbage.reads()} of 10^6 garbage intervals read, bound 1000`);
  const values = countIndexReads(new Array(10_000).fill('g'));
  const targets = countIndexReads(new Array(100_000).fill({ type: 'GROUP', values: values.buf }));
  const wide = readEvent(one([{ type: 'SIMPLE', values: [1] }], { targets: targets.buf }), undefined, opts()) as ReadEvent;
  assert.equal(wide.targets.length, 1000);
  assert.equal(wide.targets[0]!.values.length, 1000);
  assert.ok(targets.reads() <= 1000, `${targets.reads()} of 10^5 targets read, bound 1000`);
  assert.ok(values.reads() <= 1000 * 1000, `${values.reads()} target values read (1000 targets × at most 1000 values)`);
});

test('openEnd: steps of the cap, at least half a step ahead of now', () => {
  const s = T('2031-06-01T00:00:00Z');
  const cases: [number, number][] = [
    [s - H, s + DAY],
    [s, s + DAY],
    [s + 11 * H, s + DAY],
    [s + 12 * H, s + DAY],
    [s + 12 * H + 1, s + 2 * DAY],
    [s + 36 * H + 1, s + 3 * DAY],
  ];
  for (const [now, want] of cases) assert.equal(openEnd(s, now, DAY), want, `now = start + ${(now - s) / H} h`);
});

test('readNotification: 3.0.1 and 3.1 operation spellings, case table', () => {
  const obj = { id: 'evt-1', objectType: 'EVENT', programID: 'p' };
  const cases: [unknown, string | { poll: boolean }][] = [
    [{ objectType: 'EVENT', operation: 'POST', object: obj }, { poll: true }],
    [{ objectType: 'EVENT', operation: 'PUT', object: obj }, { poll: true }],
    [{ objectType: 'EVENT', operation: 'DELETE', object: obj }, { poll: true }],
    [{ objectType: 'EVENT', operation: 'GET', object: obj }, { poll: false }],
    [{ objectType: 'EVENT', operation: 'CREATE', object: obj }, { poll: true }],
    [{ objectType: 'EVENT', operation: 'UPDATE', object: obj }, { poll: true }],
    [{ objectType: 'EVENT', operation: 'READ', object: obj }, { poll: false }],
    [{ objectType: 'PROGRAM', operation: 'UPDATE', object: { id: 'p' } }, { poll: true }],
    [{ objectType: 'REPORT', operation: 'CREATE', object: {} }, { poll: false }],
    [{ objectType: 'EVENT', operation: 'PATCH', object: obj }, 'operation must be one of'],
    [{ objectType: 'event', operation: 'POST', object: obj }, 'objectType must be one of'],
    [{ objectType: 'EVENT', operation: 'POST', object: [] }, 'object must be a JSON object'],
    [{ objectType: 'EVENT', operation: 'POST' }, 'object must be a JSON object'],
    [[], 'not a JSON object'],
    ['x', 'not a JSON object'],
    [null, 'not a JSON object'],
  ];
  for (const [raw, want] of cases) {
    const n = readNotification(raw);
    if (typeof want === 'string') assert.match(String(n), new RegExp(want), JSON.stringify(raw));
    else {
      assert.notEqual(typeof n, 'string', JSON.stringify(raw));
      assert.equal(notificationWantsPoll(n as Exclude<typeof n, string>), want.poll, JSON.stringify(raw));
    }
  }
  assert.deepEqual(readNotification(fixture('notification-3.0.1.json')), { objectType: 'EVENT', operation: 'PUT', objectId: 'evt-simple-3' });
  assert.deepEqual(readNotification(fixture('notification-3.1.json')), { objectType: 'EVENT', operation: 'CREATE', objectId: 'evt31-new' });
});

/** Reads a fixture pair (programs, events) for regions, as the poller does; the facts by region. */
function factsOf(programsFile: string, eventsFile: string, regions: RegionMatch[]): Map<string, EventFact[]> {
  const names = new Map<string, ProgramInfo>();
  readProgramNames(fixture<unknown[]>(programsFile), names);
  const out = new Map<string, EventFact[]>();
  for (const raw of fixture<Record<string, unknown>[]>(eventsFile)) {
    const program = names.get(raw.programID as string);
    const r = readEvent(raw, program, opts());
    assert.ok(!('error' in r), JSON.stringify(r));
    assert.equal((r as ReadEvent).incomplete, false, `${raw.id as string}: ${(r as ReadEvent).problems.join('; ')}`);
    for (const reg of regions) if (matchesRegion(reg, program?.name, (r as ReadEvent).targets)) out.set(reg.region, [...(out.get(reg.region) ?? []), ...(r as ReadEvent).facts]);
  }
  return out;
}

test('fixtures 3.0.1: the facts for each region', () => {
  const facts = factsOf('programs-3.0.1.json', 'events-3.0.1.json', [
    { region: 'us-va', targets: [{ type: 'RESOURCE_NAME', values: ['site-a'] }], programs: ['dr-program-a'] },
    { region: 'eu-west', targets: [{ type: 'GROUP', values: ['zone-west'] }] },
  ]);
  assert.deepEqual(facts.get('us-va'), [
    { id: 'evt-simple-3/0', ...at('2031-06-01T18:00:00Z', '2031-06-01T20:00:00Z'), type: 'simple', level: 3, priority: 1, program: 'dr-program-a' },
    { id: 'evt-import-limit/0', ...at('2031-06-01T17:00:00Z', '2031-06-01T18:00:00Z'), type: 'import-capacity-limit', limitW: 1_200_000, priority: 5, program: 'dr-program-a' },
    { id: 'evt-import-limit/1', ...at('2031-06-01T18:00:00Z', '2031-06-01T19:00:00Z'), type: 'import-capacity-limit', limitW: 800_500, priority: 5, program: 'dr-program-a' },
  ]);
  assert.deepEqual(facts.get('eu-west'), [{ id: 'evt-emergency/7', ...at('2031-06-01T11:00:00Z', '2031-06-02T11:00:00Z'), type: 'grid-emergency', program: 'grid-alerts' }]);
});

test('fixtures 3.1: the facts for each region', () => {
  const facts = factsOf('programs-3.1.json', 'events-3.1.json', [
    { region: 'ap-tyo', targets: ['site-b'] },
    { region: 'ap-sin', targets: ['zone-east'], programs: ['alerts-east'] },
  ]);
  const simple = (id: number, level: number, s: string, e: string) => ({ id: `evt31-simple/${id}`, ...at(s, e), type: 'simple', level, priority: 2, program: 'flex-east' });
  assert.deepEqual(facts.get('ap-tyo'), [
    simple(10, 1, '2031-06-01T13:00:00Z', '2031-06-01T13:30:00Z'),
    simple(11, 2, '2031-06-01T13:30:00Z', '2031-06-01T14:00:00Z'),
    simple(12, 3, '2031-06-01T14:00:00Z', '2031-06-01T14:30:00Z'),
    { id: 'evt31-dispatch/0', ...at('2031-06-01T12:00:00Z', '2031-06-01T12:15:00Z'), type: 'dispatch-setpoint', limitW: 2_500_000, priority: 0, program: 'flex-east' },
    { id: 'evt31-limit/1', ...at('2031-06-01T13:00:00Z', '2031-06-01T13:45:00Z'), type: 'import-capacity-limit', limitW: 450_000, program: 'flex-east' },
  ]);
  assert.deepEqual(facts.get('ap-sin'), [{ id: 'evt31-emergency/0', ...at('2031-06-01T11:45:00Z', '2031-06-02T11:45:00Z'), type: 'grid-emergency', program: 'alerts-east' }]);
});
