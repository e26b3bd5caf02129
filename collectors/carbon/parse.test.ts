/**
 * Case tables for the pure readers: the fixtures, valid variants, missing fields, wrong types,
 * negative or absurd values, hostile bodies. A refusal must carry its CARBON_ERR_* code and
 * name the field; nothing is coerced.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CARBON_ERRORS, CarbonError, MAX_POINTS, parseJson, readElectricityMaps, readWattTimeIndex, readWattTimeLogin, timeOf, type CarbonErrorCode } from './parse.js';

// dist/collectors/carbon → the source fixtures three levels up.
const FIXTURES = fileURLToPath(new URL('../../../collectors/carbon/fixtures/', import.meta.url));
const fixture = (name: string): Record<string, unknown> => JSON.parse(readFileSync(FIXTURES + name, 'utf8')) as Record<string, unknown>;

const NOW = Date.parse('2026-03-04T21:20:00Z');
const MAX_AGE = 3 * 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** Runs `fn` and returns the CarbonError it throws (fails if it returns or throws anything else). */
function refusal(fn: () => unknown): CarbonError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CarbonError, `a CarbonError, not ${String(e)}`);
    return e;
  }
  assert.fail('was accepted');
}

test('parseJson: JSON or CARBON_ERR_BAD_JSON', () => {
  assert.deepEqual(parseJson('{"a":1}'), { a: 1 });
  for (const text of ['', '{"carbonIntensity": 30', '<html>502 Bad Gateway</html>', 'NaN', '\u0000\u0001', '{"a":1}{"b":2}']) {
    assert.equal(refusal(() => parseJson(text)).code, 'CARBON_ERR_BAD_JSON', JSON.stringify(text));
  }
  // Deep nesting must not crash the process (V8's parser is iterative; if it throws, it is a BAD_JSON).
  const deep = '['.repeat(200_000) + ']'.repeat(200_000);
  try {
    parseJson(deep);
  } catch (e) {
    assert.equal((e as CarbonError).code, 'CARBON_ERR_BAD_JSON');
  }
});

test('every error code is described', () => {
  for (const [code, text] of Object.entries(CARBON_ERRORS)) {
    assert.match(code, /^CARBON_ERR_[A-Z_]+$/);
    assert.ok(text.length > 10, code);
  }
});

test('timeOf: the data time when sane, now when ahead, refused when garbage or stale', () => {
  const cases: [string, unknown, { observedAt: number; clamped: boolean } | CarbonErrorCode][] = [
    ['Z with millis', '2026-03-04T21:00:00.000Z', { observedAt: Date.parse('2026-03-04T21:00:00Z'), clamped: false }],
    ['+00:00 offset', '2026-03-04T21:10:00+00:00', { observedAt: Date.parse('2026-03-04T21:10:00Z'), clamped: false }],
    ['other offset', '2026-03-04T22:10:00+01:00', { observedAt: Date.parse('2026-03-04T21:10:00Z'), clamped: false }],
    ['microseconds', '2026-03-04T21:10:00.123456+00:00', { observedAt: Date.parse('2026-03-04T21:10:00.123Z'), clamped: false }],
    ['4 s ahead: kept', iso(NOW + 4000), { observedAt: NOW + 4000, clamped: false }],
    ['6 s ahead: now', iso(NOW + 6000), { observedAt: NOW, clamped: true }],
    ['a day ahead: now', iso(NOW + 86400_000), { observedAt: NOW, clamped: true }],
    ['just inside maxAge', iso(NOW - MAX_AGE), { observedAt: NOW - MAX_AGE, clamped: false }],
    ['older than maxAge', iso(NOW - MAX_AGE - 1), 'CARBON_ERR_STALE'],
    ['1970', '1970-01-01T00:00:00Z', 'CARBON_ERR_STALE'],
    ['no zone (local time is ambiguous)', '2026-03-04T21:10:00', 'CARBON_ERR_PAYLOAD'],
    ['a date only', '2026-03-04', 'CARBON_ERR_PAYLOAD'],
    ['free text', 'yesterday', 'CARBON_ERR_PAYLOAD'],
    ['not a date', '2026-02-30T00:00:00Z', 'CARBON_ERR_PAYLOAD'],
    ['hour 24', '2026-03-04T24:00:00Z', 'CARBON_ERR_PAYLOAD'],
    ['month 13', '2026-13-04T21:00:00Z', 'CARBON_ERR_PAYLOAD'],
    ['29 February of a leap year is a date (old: stale)', '2024-02-29T00:00:00Z', 'CARBON_ERR_STALE'],
    ['29 February of another year is not', '2025-02-29T00:00:00Z', 'CARBON_ERR_PAYLOAD'],
    ['a huge string', 'x'.repeat(1_000_000), 'CARBON_ERR_PAYLOAD'],
    ['a number', NOW, 'CARBON_ERR_PAYLOAD'],
    ['null', null, 'CARBON_ERR_PAYLOAD'],
    ['missing', undefined, 'CARBON_ERR_PAYLOAD'],
  ];
  for (const [what, raw, want] of cases) {
    if (typeof want === 'string') assert.equal(refusal(() => timeOf(raw, 'datetime', NOW, MAX_AGE)).code, want, what);
    else assert.deepEqual(timeOf(raw, 'datetime', NOW, MAX_AGE), want, what);
  }
});

test('readElectricityMaps: a case table', () => {
  const base = fixture('electricitymaps-latest.json');
  const r = readElectricityMaps(base, 'DE', NOW, MAX_AGE);
  assert.deepEqual(r, { value: 302, observedAt: Date.parse('2026-03-04T21:00:00Z'), dataTime: '2026-03-04T21:00:00.000Z', clamped: false, estimated: true });

  const without = (k: string) => {
    const o = { ...base };
    delete o[k];
    return o;
  };
  const ok: [string, unknown, number][] = [
    ['zero is a value', { ...base, carbonIntensity: 0 }, 0],
    ['a fraction', { ...base, carbonIntensity: 12.5 }, 12.5],
    ['the dirtiest grids', { ...base, carbonIntensity: 1300 }, 1300],
    ['at the cap', { ...base, carbonIntensity: 5000 }, 5000],
    ['no zone echoed', without('zone'), 302],
    ['no isEstimated', without('isEstimated'), 302],
    ['no updatedAt', without('updatedAt'), 302],
    ['unknown extra fields', { ...base, carbonIntensityFossilOnly: 410, foo: { bar: [1] } }, 302],
    ['isEstimated of a wrong type is ignored (not used)', { ...base, isEstimated: 'yes' }, 302],
  ];
  for (const [what, body, want] of ok) assert.equal(readElectricityMaps(body, 'DE', NOW, MAX_AGE).value, want, what);

  const refused: [string, unknown, CarbonErrorCode, RegExp][] = [
    ['carbonIntensity missing', without('carbonIntensity'), 'CARBON_ERR_PAYLOAD', /carbonIntensity is nothing/],
    ['carbonIntensity null (no data for the zone)', { ...base, carbonIntensity: null }, 'CARBON_ERR_PAYLOAD', /carbonIntensity is null/],
    ['carbonIntensity a numeric string', { ...base, carbonIntensity: '302' }, 'CARBON_ERR_PAYLOAD', /must be a number; got "302" \(a string\)/],
    ['carbonIntensity a boolean', { ...base, carbonIntensity: true }, 'CARBON_ERR_PAYLOAD', /must be a number/],
    ['carbonIntensity an object', { ...base, carbonIntensity: { value: 302 } }, 'CARBON_ERR_PAYLOAD', /got an object/],
    ['carbonIntensity an array', { ...base, carbonIntensity: [302] }, 'CARBON_ERR_PAYLOAD', /got an array/],
    ['carbonIntensity negative', { ...base, carbonIntensity: -1 }, 'CARBON_ERR_PAYLOAD', /outside 0 … 5000/],
    ['carbonIntensity absurd', { ...base, carbonIntensity: 123456 }, 'CARBON_ERR_PAYLOAD', /outside/],
    ['carbonIntensity Infinity (1e999)', parseJson('{"zone":"DE","carbonIntensity":1e999,"datetime":"2026-03-04T21:00:00Z"}'), 'CARBON_ERR_PAYLOAD', /must be a number; got Infinity/],
    ['datetime missing', without('datetime'), 'CARBON_ERR_PAYLOAD', /datetime must be an ISO 8601 time/],
    ['datetime a number', { ...base, datetime: NOW }, 'CARBON_ERR_PAYLOAD', /datetime/],
    ['datetime garbage', { ...base, datetime: 'soon' }, 'CARBON_ERR_PAYLOAD', /datetime/],
    ['datetime stale', { ...base, datetime: '2026-03-04T10:00:00Z' }, 'CARBON_ERR_STALE', /older|more than maxAgeMs/],
    ['another zone answered', { ...base, zone: 'FR' }, 'CARBON_ERR_PAYLOAD', /zone is "FR" \(a string\), not the zone asked for \(DE\)/],
    ['zone of a wrong type', { ...base, zone: 7 }, 'CARBON_ERR_PAYLOAD', /zone is 7/],
    ['an array', [base], 'CARBON_ERR_PAYLOAD', /a JSON object; got an array/],
    ['null', null, 'CARBON_ERR_PAYLOAD', /got null/],
    ['a string', 'hello', 'CARBON_ERR_PAYLOAD', /got "hello"/],
    ['a number', 302, 'CARBON_ERR_PAYLOAD', /got 302/],
    ['an error body', { status: 'error', message: 'Zone not found' }, 'CARBON_ERR_PAYLOAD', /carbonIntensity is nothing/],
  ];
  for (const [what, body, code, msg] of refused) {
    const e = refusal(() => readElectricityMaps(body, 'DE', NOW, MAX_AGE));
    assert.equal(e.code, code, what);
    assert.match(e.message, msg, what);
  }

  // A datetime ahead of our clock: the value is kept, observedAt is now.
  const ahead = readElectricityMaps({ ...base, datetime: iso(NOW + 3600_000) }, 'DE', NOW, MAX_AGE);
  assert.equal(ahead.observedAt, NOW);
  assert.equal(ahead.clamped, true);
});

test('readWattTimeIndex: a case table', () => {
  const base = fixture('watttime-signal-index.json');
  const data0 = (base.data as Record<string, unknown>[])[0]!;
  const meta = base.meta as Record<string, unknown>;
  assert.deepEqual(readWattTimeIndex(base, 'CAISO_NORTH', NOW, MAX_AGE), {
    value: 63,
    observedAt: Date.parse('2026-03-04T21:10:00Z'),
    dataTime: '2026-03-04T21:10:00+00:00',
    clamped: false,
  });

  const point = (p: Record<string, unknown>) => ({ ...base, data: [{ ...data0, ...p }] });
  const ok: [string, unknown, number, number?][] = [
    ['0 is a percentile', point({ value: 0 }), 0],
    ['100 is a percentile', point({ value: 100 }), 100],
    ['a fraction', point({ value: 37.5 }), 37.5],
    ['no meta', { data: base.data }, 63],
    ['meta without region', { ...base, meta: { signal_type: 'co2_moer' } }, 63],
    [
      'several points: the newest not in the future',
      {
        ...base,
        data: [
          { point_time: '2026-03-04T21:05:00Z', value: 10 },
          { point_time: '2026-03-04T21:15:00Z', value: 20 },
          { point_time: '2026-03-04T21:30:00Z', value: 30 },
        ],
      },
      20,
      Date.parse('2026-03-04T21:15:00Z'),
    ],
    ['every point ahead of our clock: the first, at now', { ...base, data: [{ point_time: '2026-03-04T23:00:00Z', value: 44 }] }, 44, NOW],
    ['extra fields in a point', point({ version: '2023-03-01', extra: true }), 63],
  ];
  for (const [what, body, want, at] of ok) {
    const r = readWattTimeIndex(body, 'CAISO_NORTH', NOW, MAX_AGE);
    assert.equal(r.value, want, what);
    if (at !== undefined) assert.equal(r.observedAt, at, what);
  }

  const refused: [string, unknown, CarbonErrorCode, RegExp][] = [
    ['data missing', { meta }, 'CARBON_ERR_PAYLOAD', /data must be an array; got nothing/],
    ['data empty', { ...base, data: [] }, 'CARBON_ERR_PAYLOAD', /data is empty/],
    ['data an object', { ...base, data: data0 }, 'CARBON_ERR_PAYLOAD', /data must be an array; got an object/],
    ['a point null', { ...base, data: [null] }, 'CARBON_ERR_PAYLOAD', /data\[0\] must be an object/],
    ['value missing', { ...base, data: [{ point_time: data0.point_time }] }, 'CARBON_ERR_PAYLOAD', /data\[0\]\.value is nothing/],
    ['value null', point({ value: null }), 'CARBON_ERR_PAYLOAD', /value is null/],
    ['value a string', point({ value: '63' }), 'CARBON_ERR_PAYLOAD', /must be a number; got "63"/],
    ['value negative', point({ value: -0.5 }), 'CARBON_ERR_PAYLOAD', /outside the percentile range/],
    ['value above 100', point({ value: 100.01 }), 'CARBON_ERR_PAYLOAD', /outside the percentile range/],
    ['value in lbs/MWh (absurd as a percentile)', point({ value: 850 }), 'CARBON_ERR_PAYLOAD', /outside the percentile range/],
    ['point_time missing', { ...base, data: [{ value: 63 }] }, 'CARBON_ERR_PAYLOAD', /point_time must be an ISO 8601 time/],
    ['point_time garbage', point({ point_time: 'now' }), 'CARBON_ERR_PAYLOAD', /point_time/],
    ['point_time stale', point({ point_time: '2026-03-03T21:10:00Z' }), 'CARBON_ERR_STALE', /more than maxAgeMs/],
    ['a bad point among good ones', { ...base, data: [data0, { point_time: data0.point_time, value: 'x' }] }, 'CARBON_ERR_PAYLOAD', /data\[1\]\.value/],
    ['another region answered', { ...base, meta: { ...meta, region: 'PJM_DC' } }, 'CARBON_ERR_PAYLOAD', /meta\.region is "PJM_DC"/],
    ['another signal', { ...base, meta: { ...meta, signal_type: 'health_damage' } }, 'CARBON_ERR_PAYLOAD', /meta\.signal_type/],
    ['absolute units, not a percentile', { ...base, meta: { ...meta, units: 'lbs_co2_per_mwh' } }, 'CARBON_ERR_PAYLOAD', /meta\.units is "lbs_co2_per_mwh"/],
    ['meta an array', { ...base, meta: [] }, 'CARBON_ERR_PAYLOAD', /meta must be an object/],
    ['too many points', { ...base, data: Array.from({ length: MAX_POINTS + 1 }, () => data0) }, 'CARBON_ERR_PAYLOAD', /more than 10000/],
    ['an array', [base], 'CARBON_ERR_PAYLOAD', /a JSON object/],
    ['an error body', { error: 'Unauthorized' }, 'CARBON_ERR_PAYLOAD', /data must be an array/],
  ];
  for (const [what, body, code, msg] of refused) {
    const e = refusal(() => readWattTimeIndex(body, 'CAISO_NORTH', NOW, MAX_AGE));
    assert.equal(e.code, code, what);
    assert.match(e.message, msg, what);
  }
});

test('readWattTimeLogin: a case table; the token never appears in a message', () => {
  const base = fixture('watttime-login.json');
  assert.equal(readWattTimeLogin(base), base.token);
  const refused: [string, unknown, RegExp][] = [
    ['no token', {}, /has no token \(got nothing\)/],
    ['empty token', { token: '' }, /an empty string/],
    ['token a number', { token: 42 }, /got 42/],
    ['token null', { token: null }, /got null/],
    ['token with a line break (header injection)', { token: 'abc\r\nx-evil: 1' }, /characters a header cannot carry/],
    ['token with a space', { token: 'abc def' }, /characters a header cannot carry/],
    ['token huge', { token: 'a'.repeat(16 * 1024 + 1) }, /more than 16384/],
    ['an array', [base], /must be a JSON object/],
    ['null', null, /must be a JSON object/],
  ];
  for (const [what, body, msg] of refused) {
    const e = refusal(() => readWattTimeLogin(body));
    assert.equal(e.code, 'CARBON_ERR_PAYLOAD', what);
    assert.match(e.message, msg, what);
    assert.doesNotMatch(e.message, /abc/, `${what}: the token is not shown`);
  }
});
