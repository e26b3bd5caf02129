/**
 * The planner's cron matching (cron.ts) against node-cron's own match() — the library the
 * expressions are validated and parsed with — on every minute of days with DST changes in
 * America/Chicago and Europe/Dublin, for plain and special (L, W, #) expressions; and the
 * occurrences cronMatches gives across those changes (a skipped wall time never, a repeated
 * one once).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import cron from 'node-cron';
import { cronMatches, matchesAt } from './cron.js';

const DAY = 86_400_000;
const SPAN_BEFORE = 7 * 3_600_000;
const SPAN = DAY + 2 * SPAN_BEFORE;
const EXPRESSIONS = ['* * * * *', '0 2 * * sun', '30 1 * * *', '30 2 * * *', '0 15 * 6-9 1-5', '*/7 0-3 * * *', '0 1 L * *', '0 1 LW * *', '0 1 * * 0L', '0 1 * * 0#1', '0 1 L-3 * *', '15 1 1W * *', '0 0-23/5 * 3,10,11 6,0', '59 23 31 12 *'];
/** The two zones of the examples; Kathmandu (UTC+5:45) on one day, for an offset that is not whole hours. */
const ZONES = ['America/Chicago', 'Europe/Dublin', 'Asia/Kathmandu'];
/**
 * Days around DST changes: Chicago 2026-03-08 and 2026-11-01, Dublin 2026-03-29 and 2026-10-25;
 * month ends; and 2026-05-24, a Sunday exactly a week before the month's last day (0L must not match it).
 */
const DAYS = ['2026-03-08', '2026-03-29', '2026-10-25', '2026-11-01', '2026-02-28', '2026-12-31', '2026-05-24'];

test('every minute of days with DST changes: cron.ts matches exactly where node-cron\'s match() does', () => {
  let compared = 0;
  let matched = 0;
  for (const expr of EXPRESSIONS) {
    const f = cron.parse(expr);
    for (const tz of ZONES) {
      const task = cron.createTask(expr, () => undefined, { timezone: tz });
      try {
        for (const d of tz === 'Asia/Kathmandu' ? DAYS.slice(0, 1) : DAYS) {
          // From 7 h before the UTC day to 7 h after: the local day in each zone (UTC−6 … UTC+5:45).
          const from = Date.parse(`${d}T00:00:00Z`) - SPAN_BEFORE;
          for (let t = from; t < from + SPAN; t += 60_000) {
            const want = task.match(new Date(t));
            assert.equal(matchesAt(f, tz, t), want, `${expr} in ${tz} at ${new Date(t).toISOString()}`);
            compared++;
            if (want) matched++;
          }
        }
      } finally {
        void task.destroy();
      }
    }
  }
  assert.equal(compared, EXPRESSIONS.length * (2 * DAYS.length + 1) * (SPAN / 60_000));
  assert.ok(matched > 10_000, `the expressions matched ${matched} minutes: the comparison covers matches, not only misses`);
});

const iso = (t: number) => new Date(t).toISOString().slice(0, 16);

test('occurrences across DST changes: a skipped wall time never starts, a repeated one starts once (at its first instant)', () => {
  const cases: { expr: string; tz: string; from: string; to: string; want: string[] }[] = [
    // Chicago spring forward 2026-03-08 02:00 CST → 03:00 CDT: 02:30 does not exist that day.
    { expr: '30 2 * * *', tz: 'America/Chicago', from: '2026-03-07', to: '2026-03-10', want: ['2026-03-07T08:30', '2026-03-09T07:30'] },
    // Chicago fall back 2026-11-01 02:00 CDT → 01:00 CST: 01:30 happens twice, starts once (CDT).
    { expr: '30 1 * * *', tz: 'America/Chicago', from: '2026-10-31', to: '2026-11-03', want: ['2026-10-31T06:30', '2026-11-01T06:30', '2026-11-02T07:30'] },
    // Dublin spring 2026-03-29 01:00 GMT → 02:00 IST: 02:00 exists (01:00Z); 01:30 does not.
    { expr: '0 2 * * sun', tz: 'Europe/Dublin', from: '2026-03-21', to: '2026-03-30', want: ['2026-03-22T02:00', '2026-03-29T01:00'] },
    { expr: '30 1 * * sun', tz: 'Europe/Dublin', from: '2026-03-21', to: '2026-03-30', want: ['2026-03-22T01:30'] },
    // Dublin fall 2026-10-25 02:00 IST → 01:00 GMT: 02:00 once (02:00Z), 01:30 once (00:30Z, IST).
    { expr: '0 2 * * sun', tz: 'Europe/Dublin', from: '2026-10-17', to: '2026-10-26', want: ['2026-10-18T01:00', '2026-10-25T02:00'] },
    { expr: '30 1 * * sun', tz: 'Europe/Dublin', from: '2026-10-17', to: '2026-10-26', want: ['2026-10-18T00:30', '2026-10-25T00:30'] },
    // ERCOT 4CP: weekdays 15:00 Central in June–September (CDT: 20:00Z); none on the weekend, none in May.
    { expr: '0 15 * 6-9 1-5', tz: 'America/Chicago', from: '2026-05-29', to: '2026-06-09', want: ['2026-06-01T20:00', '2026-06-02T20:00', '2026-06-03T20:00', '2026-06-04T20:00', '2026-06-05T20:00', '2026-06-08T20:00'] },
  ];
  for (const c of cases) {
    const got = cronMatches(cron.parse(c.expr), c.tz, Date.parse(`${c.from}T00:00:00Z`), Date.parse(`${c.to}T00:00:00Z`)).map((m) => iso(m.at));
    assert.deepEqual(got, c.want, `${c.expr} in ${c.tz}`);
  }
});

test('a range that begins between a repeated wall time\'s two instants does not take the second: every range agrees', () => {
  const f = cron.parse('30 1 * * *');
  // 2026-11-01 01:30 CDT = 06:30Z, 01:30 CST = 07:30Z. A range starting at 07:00Z finds neither.
  assert.deepEqual(cronMatches(f, 'America/Chicago', Date.parse('2026-11-01T07:00:00Z'), Date.parse('2026-11-01T12:00:00Z')), []);
});
