/**
 * Scenario files: the bundled ones load; a bad file gives one clear problem naming the file,
 * the line, the path and the fix (case table); durations; --set overrides.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { durationMs, formatDuration, loadScenario, parsePath, ScenarioError, type ScenarioEvent, type ScenarioIssue, type ScenarioOverride } from './scenario.js';
import { tempDir, tinyScenario } from './testing.js';

const BUNDLED = fileURLToPath(new URL('../../../bench/scenarios/', import.meta.url));

function issuesOf(file: string, overrides: ScenarioOverride[] = []): ScenarioIssue[] {
  try {
    loadScenario(file, overrides);
  } catch (e) {
    if (e instanceof ScenarioError) return e.issues;
    throw e;
  }
  return [];
}

test('the bundled scenarios load, with the fleet of regions/ and the facts the brief asks for', () => {
  const cases: [string, string, string, number, string | null][] = [
    ['ercot-eea2.yaml', 'us-tx', 'power-off', 10 * 60_000, 'grid-emergency'],
    ['aeso-load-shed.yaml', 'ca-ab', 'power-off', 2 * 3_600_000, 'load-shed'],
    ['thermal-throttle.yaml', 'us-va', 'throttle', 0, null],
    ['overlapping-neighbours.yaml', 'us-tx', 'power-off', 60 * 60_000, 'grid-emergency'],
    ['tight-fleet.yaml', 'us-tx', 'power-off', 45 * 60_000, 'grid-emergency'],
    ['long-notice.yaml', 'us-va', 'power-off', 75 * 60_000, 'load-shed'],
    ['demand-response.yaml', 'us-va', 'throttle', 2 * 3_600_000, 'simple'],
    ['heat-dome.yaml', 'us-tx', 'power-off', 60 * 60_000, 'grid-emergency'],
    ['one-aggregator.yaml', 'us-tx', 'power-off', 60 * 60_000, 'load-shed'],
    ['practice-run.yaml', 'us-tx', 'power-off', 35 * 60_000, 'load-shed'],
    ['false-claim.yaml', 'us-tx', 'power-off', 45 * 60_000, 'load-shed'],
    ['operator-day.yaml', 'us-tx', 'power-off', 40 * 60_000, 'load-shed'],
  ];
  for (const [file, region, effect, notice, type] of cases) {
    const sc = loadScenario(join(BUNDLED, file));
    assert.equal(sc.regions.length, 7, file);
    assert.deepEqual(sc.regions.map((r) => r.id).sort(), ['ap-sin', 'ap-tyo', 'ca-ab', 'eu-ie', 'sa-sao', 'us-tx', 'us-va'], file);
    assert.equal(sc.regions.find((r) => r.id === 'us-tx')!.capacityUnits, 1024);
    const e = sc.events[0]!;
    assert.equal(e.region, region, file);
    assert.equal(e.effect.kind, effect, file);
    assert.equal(e.noticeMs, notice, file);
    if (type === null) assert.equal(e.facts.length, 0, file);
    else {
      assert.equal(e.facts[0]!.kind, 'grid.event', file);
      assert.equal(e.facts[0]!.value.type, type, file);
      assert.equal(e.facts[0]!.value.start, sc.epoch + e.atMs, `${file}: start comes from at`);
      assert.equal(e.facts[0]!.value.end, sc.epoch + e.atMs + e.durationMs, `${file}: end comes from duration`);
    }
    assert.equal(sc.name, file.replace('.yaml', ''));
    // The trust configuration is explicit: each feed of grid events bound to its events' regions (what the simulator did on its own before), under its own granted token.
    // A grid.alert is no claim of physical loss: its source (the grid-alerts collector) is not bound.
    const want: Record<string, string[]> = {};
    for (const ev of sc.events) for (const f of ev.facts) if (f.kind === 'grid.event') want[f.source] = [...new Set([...(want[f.source] ?? []), ev.region])].sort();
    assert.deepEqual(sc.trust.bindings, want, `${file}: trust.bindings`);
    assert.ok(Object.values(sc.trust.principals).every((p) => p.granted), `${file}: granted`);
    // one-aggregator: one token for both feeds (its point); the others keep one principal per feed, as before principals;
    // operator-day's alerts are written by the grid-alerts collector.
    if (file === 'one-aggregator.yaml') assert.deepEqual(sc.trust.principals, { 'openadr3/': { principal: 'token:aggregator', granted: true } });
    else {
      const alerts = file === 'operator-day.yaml' ? { 'grid-alerts/': 'collector:grid-alerts' } : {};
      assert.deepEqual(Object.keys(sc.trust.principals).sort(), [...Object.keys(want), ...Object.keys(alerts)].sort(), `${file}: trust.principals`);
      for (const [prefix, principal] of Object.entries(alerts)) assert.equal(sc.trust.principals[prefix]!.principal, principal, `${file}: ${prefix}`);
      assert.equal(new Set(Object.values(sc.trust.principals).map((p) => p.principal)).size, Object.keys(sc.trust.principals).length, `${file}: one principal per feed`);
    }
  }
  // Issue 30's heat dome: a power-off and two derates without notice, all three in force together.
  const heat = loadScenario(join(BUNDLED, 'heat-dome.yaml'));
  assert.deepEqual(
    heat.events.map((e) => [e.region, e.effect.kind, e.facts.length]),
    [
      ['us-tx', 'power-off', 1],
      ['us-va', 'throttle', 0],
      ['ca-ab', 'throttle', 0],
    ],
  );
  const inForce = (t: number) => heat.events.filter((e) => t >= e.atMs && t < e.atMs + e.durationMs).length;
  assert.equal(inForce(heat.events[2]!.atMs), 3, 'all three overlap');
  // Practice runs: us-va's drill acting when us-tx's shed is announced, ca-ab's first step after it.
  const drill = loadScenario(join(BUNDLED, 'practice-run.yaml'));
  assert.deepEqual(drill.windows.map((w) => [w.id, w.kind, w.regions]), [['us-va-practice', 'practice', ['us-va']], ['ca-ab-practice', 'practice', ['ca-ab']]]);
  // A false claim retracted while in force, read through wrong capacity units, noisy load readings and distant resolvers without ECS.
  const fc = loadScenario(join(BUNDLED, 'false-claim.yaml'));
  const claim = fc.events[1]!;
  assert.deepEqual([claim.region, claim.effect.kind, claim.changes.map((c) => [c.atMs, c.cancelled])], ['us-va', 'none', [[100 * 60_000, true]]]);
  assert.deepEqual([fc.world.noEcsResolvers, fc.world.noEcsDistant, fc.world.loadNoise], [0.1, 0.5, 0.1]);
  assert.deepEqual(fc.policies.gridsteer.capacityUnits, { 'ca-ab': 192 });
  // An on-call day: a maintenance window, and every operator override at its instant (force-down, force-up, weight, freeze, unfreeze, distrust with its end).
  const day = loadScenario(join(BUNDLED, 'operator-day.yaml'));
  // eu-ie's window at 19:15 for 30 min: 75 min after the start (18:00), so its drain (90 min ahead) begins in the warm-up and it ends before us-tx's alert.
  assert.deepEqual(day.windows.map((w) => [w.id, w.kind, w.regions, w.cron, w.durationMs / 60_000, w.cap]), [['eu-ie-patch', 'maintenance', ['eu-ie'], '15 19 * * *', 30, 0]]);
  assert.deepEqual(
    day.operator.map((a) => [a.action, a.atMs / 60_000, a.untilMs === undefined ? null : a.untilMs / 60_000]),
    [
      ['force-down', 15, null],
      ['force-up', 45, 60],
      ['weight', 60, 120],
      ['freeze', 122, null],
      ['distrust', 150, 235],
      ['unfreeze', 230, null],
    ],
  );
  assert.deepEqual(
    day.events.map((e) => [e.region, e.effect.kind, e.facts[0]!.kind]),
    [
      ['us-tx', 'power-off', 'grid.event'],
      ['us-va', 'none', 'grid.event'],
      ['us-tx', 'none', 'grid.alert'],
    ],
  );
  // Every bundled scenario file is in the table above and in bench/scenarios/README.md.
  const files = readdirSync(BUNDLED).filter((f) => f.endsWith('.yaml')).sort();
  assert.deepEqual(files, cases.map((c) => c[0]).sort());
  const readme = readFileSync(join(BUNDLED, 'README.md'), 'utf8');
  for (const f of files) assert.ok(readme.includes(`(${f})`), `${f} in bench/scenarios/README.md`);
  const aeso = loadScenario(join(BUNDLED, 'aeso-load-shed.yaml'));
  assert.match(aeso.events[0]!.facts[0]!.source, /^openadr3\//);
  // Issue 17's correlated events: us-va dark 20 minutes into us-tx's hour, with 30 minutes' notice; about 1.1 × demand left with both dark.
  const ov = loadScenario(join(BUNDLED, 'overlapping-neighbours.yaml'));
  const [tx, va] = ov.events as [ScenarioEvent, ScenarioEvent];
  assert.deepEqual([va.region, va.noticeMs, va.effect.kind], ['us-va', 30 * 60_000, 'power-off']);
  assert.ok(va.atMs > tx.atMs && va.atMs < tx.atMs + tx.durationMs, 'the windows overlap');
  const units = (sc: typeof ov, without: string[]) => sc.regions.filter((r) => !without.includes(r.id)).reduce((x, r) => x + r.capacityUnits, 0);
  const left = (units(ov, ['us-tx', 'us-va']) / units(ov, [])) * ov.world.fleetHeadroom;
  assert.ok(left > 1.05 && left < 1.15, `the fleet holds ${left} × demand with both dark`);
  const tight = loadScenario(join(BUNDLED, 'tight-fleet.yaml'));
  assert.ok((units(tight, ['us-tx']) / units(tight, [])) * tight.world.fleetHeadroom < 1, 'a tight fleet: short of room with us-tx dark');
});

test('durations: numbers are seconds, strings carry units; formatDuration reads back', () => {
  const cases: [number | string, number, string][] = [
    [90, 90_000, '1m30s'],
    ['90s', 90_000, '1m30s'],
    ['10m', 600_000, '10m'],
    ['2h', 7_200_000, '2h'],
    ['1h30m', 5_400_000, '1h30m'],
    ['250ms', 250, '250ms'],
    [0, 0, '0s'],
    ['1.5h', 5_400_000, '1h30m'],
  ];
  for (const [input, ms, text] of cases) {
    assert.equal(durationMs(input), ms, String(input));
    assert.equal(formatDuration(ms), text, String(input));
  }
});

test('setting paths: dotted and indexed forms; malformed ones are refused', () => {
  const cases: [string, (string | number)[] | null][] = [
    ['hours', ['hours']],
    ['events[0].notice', ['events', 0, 'notice']],
    ['events.0.notice', ['events', 0, 'notice']],
    ['policies.gridsteer.planner.drain.sessionAllowanceMs', ['policies', 'gridsteer', 'planner', 'drain', 'sessionAllowanceMs']],
    ['', null],
    ['a..b', null],
    ['[0]', null],
  ];
  for (const [p, want] of cases) assert.deepEqual(parsePath(p), want, p);
});

interface BadCase {
  what: string;
  /** The scenario text (or a transform of the tiny one). */
  text: string;
  files?: Record<string, string>;
  overrides?: ScenarioOverride[];
  /** Expected: the file (relative to the temp folder; default scenario.yaml), the path, a piece of the message, the line. */
  file?: string;
  path: string;
  message: RegExp;
  line?: number;
}

const tiny = tinyScenario();
const sub = (from: string, to: string) => {
  assert.ok(tiny.includes(from), `tiny scenario lacks ${from}`);
  return tiny.replace(from, to);
};
const lineOf = (text: string, needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;

const REGION = (id: string, extra = '') => `id: ${id}
name: ${id}
location: { lat: 40, lon: -75, country: US }
endpoints:
  - address: 192.0.2.1
capacity: { units: 10 }
${extra}`;

const BAD: BadCase[] = [
  { what: 'YAML syntax', text: 'title: [unclosed\nhours: 1\n', path: '', message: /YAML syntax: .*check the indentation/ },
  { what: 'a list at the top', text: '- a\n- b\n', path: '', message: /expected a scenario as key: value lines/ },
  { what: 'a misspelt key', text: sub('events:', 'evnts:'), path: 'evnts', message: /unknown key "evnts": did you mean "events"\?/, line: lineOf(tiny, 'events:') },
  { what: 'a number in quotes', text: sub('hours: 1', 'hours: "1"'), path: 'hours', message: /must be a number .*write the number without quotes/, line: lineOf(tiny, 'hours: 1') },
  { what: 'a missing key', text: sub('title: tiny test fleet\n', ''), path: 'title', message: /missing key "title": add it/ },
  { what: 'a bad duration', text: sub('at: 30m', 'at: 30 minutes'), path: 'events[0].at', message: /must be a duration: a number of seconds, or a string such as 90s/, line: lineOf(tiny, 'at: 30m') },
  { what: 'an unknown effect', text: sub('kind: power-off', 'kind: blackout'), path: 'events[0].effect.kind', message: /must be one of "power-off", "throttle"/ },
  { what: 'an unknown region', text: sub('region: east', 'region: north'), path: 'events[0].region', message: /"north" is not a region of the fleet: use one of east, south, west/, line: lineOf(tiny, 'region: east') },
  { what: 'an event after the end', text: sub('at: 30m', 'at: 2h'), path: 'events[0].at', message: /after the simulation ends .*start it earlier or raise hours/ },
  { what: 'an event ending after the end', text: sub('duration: 15m', 'duration: 45m'), path: 'events[0].duration', message: /raise hours to at least 1\.25/ },
  { what: 'a throttle without share', text: sub('effect: { kind: power-off }', 'effect: { kind: throttle }'), path: 'events[0].effect', message: /a throttle needs share/ },
  { what: 'a power-off with share', text: sub('effect: { kind: power-off }', 'effect: { kind: power-off, share: 0.5 }'), path: 'events[0].effect.share', message: /only a throttle has a share: remove it/ },
  {
    what: 'a fact the state layer refuses (simple without level)',
    text: sub('value: { type: load-shed }', 'value: { type: simple }'),
    path: 'events[0].facts[0].value.level',
    message: /is required when value\.type is simple/,
  },
  {
    what: 'a fact with a level out of range',
    text: sub('kind: grid.event\n        source: openadr3/vtn.test\n        value: { type: load-shed }', 'kind: grid.alert\n        source: grid-alerts/ercot\n        value: { type: eea, level: 5 }'),
    path: 'events[0].facts[0].value.level',
    message: /must be an integer from 0 to 3/,
  },
  { what: 'a fact with a bad source', text: sub('source: openadr3/vtn.test', 'source: "has spaces"'), path: 'events[0].facts[0].source', message: /must be a string .*matching/ },
  { what: 'an unknown planner setting', text: tinyScenario('policies:\n  gridsteer:\n    planner: { drian: {} }\n'), path: 'policies.gridsteer.planner.drian', message: /unknown planner setting "drian": did you mean "drain"\?/ },
  { what: 'a planner setting of the wrong type', text: tinyScenario('policies:\n  gridsteer:\n    planner: { degradedShare: "half" }\n'), path: 'policies.gridsteer.planner.degradedShare', message: /must be a number like the default/ },
  {
    what: 'a misspelt key inside a planner mapping',
    text: tinyScenario('policies:\n  gridsteer:\n    planner: { drain: { sessionAllowanceMS: 60000 } }\n'),
    path: 'policies.gridsteer.planner.drain.sessionAllowanceMS',
    message: /unknown key "sessionAllowanceMS" of drain: did you mean "sessionAllowanceMs"\?/,
  },
  { what: 'both dir and list', text: sub('regions:\n  list:', 'regions:\n  dir: regions\n  list:'), path: 'regions', message: /give exactly one of dir .* or list/ },
  { what: 'a missing regions folder', text: 'title: t\nhours: 1\nregions: { dir: nowhere }\nevents:\n  - { id: e, region: a, at: 1m, duration: 1m, effect: { kind: power-off } }\n', path: 'regions.dir', message: /cannot read the regions folder .*nowhere \(it does not exist\)/, line: 3 },
  {
    what: 'a bad region file names that file',
    text: 'title: t\nhours: 1\nregions: { dir: regions }\nevents:\n  - { id: e, region: a, at: 1m, duration: 1m, effect: { kind: power-off } }\n',
    files: { 'regions/a.yaml': REGION('a'), 'regions/b.yaml': REGION('b').replace('192.0.2.1', 'not-an-ip') },
    file: 'regions/b.yaml',
    path: 'endpoints[0].address',
    message: /must be an IPv4 or IPv6 address/,
    line: 5,
  },
  {
    what: 'a region file without capacity',
    text: 'title: t\nhours: 1\nregions: { dir: regions }\nevents:\n  - { id: e, region: a, at: 1m, duration: 1m, effect: { kind: power-off } }\n',
    files: { 'regions/a.yaml': REGION('a'), 'regions/b.yaml': REGION('b').replace('capacity: { units: 10 }\n', '') },
    file: 'regions/b.yaml',
    path: 'capacity',
    message: /the simulator needs the region's capacity: add capacity: \{ units: N \}/,
  },
  { what: 'a share of resolvers without ECS above 1', text: sub('  warmup: 5m', '  warmup: 5m\n  noEcsResolvers: 1.5'), path: 'world.noEcsResolvers', message: /must be a number from 0 to 1/ },
  { what: 'a cut-retry share above 1', text: sub('  warmup: 5m', '  warmup: 5m\n  cutRetry: { share: 2 }'), path: 'world.cutRetry.share', message: /must be a number from 0 to 1/ },
  { what: 'a misspelt cut-retry key', text: sub('  warmup: 5m', '  warmup: 5m\n  cutRetry: { delya: 2s }'), path: 'world.cutRetry.delya', message: /unknown key "delya": did you mean "delay"\?/ },
  { what: 'a daily cycle of amplitude 1 (demand would reach 0)', text: sub('  warmup: 5m', '  warmup: 5m\n  dailyCycle: { amplitude: 1 }'), path: 'world.dailyCycle.amplitude', message: /must be a number from 0 to 0\.95/ },
  { what: 'a daily cycle peaking at 24 h', text: sub('  warmup: 5m', '  warmup: 5m\n  dailyCycle: { peakHour: 24 }'), path: 'world.dailyCycle.peakHour', message: /must be a number/ },
  { what: 'a hook that always fails', text: tinyScenario('policies:\n  gridsteer:\n    hook: { failureRate: 1 }\n'), path: 'policies.gridsteer.hook.failureRate', message: /must be below 1: .*use enabled: false/ },
  { what: 'a hook retry base below 10 ms', text: tinyScenario('policies:\n  gridsteer:\n    hook: { retryBase: 5ms }\n'), path: 'policies.gridsteer.hook.retryBase', message: /must be at least 10ms/ },
  { what: 'a misspelt hook key', text: tinyScenario('policies:\n  gridsteer:\n    hook: { dealy: 2s }\n'), path: 'policies.gridsteer.hook.dealy', message: /unknown key "dealy": did you mean "delay"\?/ },
  { what: 'an unknown reactive check', text: tinyScenario('policies:\n  reactive: { check: latency }\n'), path: 'policies.reactive.check', message: /must be one of "load", "event"/ },
  { what: 'a trust binding to a region not in the fleet', text: tinyScenario('', 'trust:\n  bindings: { openadr3/vtn.test: [north] }\n'), path: 'trust.bindings.openadr3/vtn.test[0]', message: /"north" is not a region of the fleet: use one of east, south, west/ },
  { what: 'a principal that is neither a token nor a collector', text: tinyScenario('', "trust:\n  principals: { openadr3/: { principal: 'ercot' } }\n"), path: 'trust.principals.openadr3/.principal', message: /token:<name> or collector:<name>/ },
  { what: 'bindings among the planner settings', text: tinyScenario('policies:\n  gridsteer:\n    planner: { gridLoss: { bindings: {} } }\n'), path: 'policies.gridsteer.planner.gridLoss.bindings', message: /set the bindings under trust\.bindings/ },
  { what: 'a bad --set path', text: tiny, overrides: [{ path: 'events..x', value: '1' }], path: 'events..x', message: /not a setting path/ },
  { what: 'a --set value the schema refuses says where it came from', text: tiny, overrides: [{ path: 'events[0].notice', value: 'soon' }], path: 'events[0].notice', message: /must be a duration.*\(the value comes from --set events\[0\]\.notice=soon\)/ },
  { what: 'a --set into a missing list item', text: tiny, overrides: [{ path: 'events[3].notice', value: '1m' }], path: 'events[3].notice', message: /a list item can only be changed, not added/ },
];

test('a bad scenario gives one problem naming the file, the line, the path and the fix', (t) => {
  for (const c of BAD) {
    const dir = tempDir(t, { 'scenario.yaml': c.text, ...(c.files ?? {}) });
    const issues = issuesOf(join(dir, 'scenario.yaml'), c.overrides);
    assert.equal(issues.length, 1, `${c.what}: ${JSON.stringify(issues, null, 1)}`);
    const i = issues[0]!;
    assert.ok(i.file.startsWith(join(dir, c.file ?? 'scenario.yaml')), `${c.what}: file ${i.file}`);
    assert.equal(i.path, c.path, `${c.what}: path`);
    assert.match(i.message, c.message, `${c.what}: message`);
    if (c.line !== undefined) assert.equal(i.line, c.line, `${c.what}: line`);
  }
});

test('a missing scenario file is a ScenarioError, not a crash', (t) => {
  const dir = tempDir(t);
  const issues = issuesOf(join(dir, 'nope.yaml'));
  assert.equal(issues.length, 1);
  assert.match(issues[0]!.message, /cannot read the file \(it does not exist\): check the path/);
  assert.match(new ScenarioError(issues).message, /nope\.yaml: \(top level\): cannot read the file/);
});

test('overrides apply before validation; defaults fill in the rest', (t) => {
  const dir = tempDir(t, { 'tiny.yaml': tinyScenario() });
  const sc = loadScenario(join(dir, 'tiny.yaml'), [
    { path: 'events[0].notice', value: '5m' },
    { path: 'policies.gridsteer.planner.drain', value: '{ sessionAllowanceMs: 60000 }' },
    { path: 'world.fleetHeadroom', value: '3' },
  ]);
  assert.equal(sc.events[0]!.noticeMs, 300_000);
  assert.deepEqual(sc.policies.gridsteer.planner, { drain: { sessionAllowanceMs: 60000 } });
  assert.equal(sc.world.fleetHeadroom, 3);
  assert.equal(sc.world.ttlIgnoringClients, 0.02, 'a default');
  assert.equal(sc.policies.reactive.ttl, 60, 'a default');
  assert.equal(sc.name, 'tiny');
  // The options of issue 17, off by default: a scenario without them runs as it always did.
  assert.equal(sc.world.noEcsResolvers, 0);
  assert.deepEqual(sc.world.cutRetry, { share: 0, delayMs: 1000 });
  assert.deepEqual(sc.world.dailyCycle, { amplitude: 0, peakHour: 14 });
  assert.deepEqual(sc.policies.gridsteer.hook, { enabled: true, delayMs: 0, failureRate: 0, retries: 3, retryBaseMs: 500, progressiveGoaway: true, refuse: true });
  assert.equal(sc.policies.reactive.check, 'load');
});

test('the options of issue 17 parse: resolvers without ECS, cut retries, a daily cycle, the hook, reactive checks', (t) => {
  const dir = tempDir(t, {
    'o.yaml': tinyScenario('policies:\n  reactive: { check: event }\n  gridsteer:\n    hook: { enabled: true, delay: 2s, failureRate: 0.2, retries: 5, retryBase: 250ms, progressiveGoaway: false, refuse: false }\n').replace(
      '  warmup: 5m',
      '  warmup: 5m\n  noEcsResolvers: 0.3\n  cutRetry: { share: 0.5, delay: 3s }\n  dailyCycle: { amplitude: 0.4, peakHour: 20.5 }',
    ),
  });
  const sc = loadScenario(join(dir, 'o.yaml'));
  assert.equal(sc.world.noEcsResolvers, 0.3);
  assert.deepEqual(sc.world.cutRetry, { share: 0.5, delayMs: 3000 });
  assert.deepEqual(sc.world.dailyCycle, { amplitude: 0.4, peakHour: 20.5 });
  assert.deepEqual(sc.policies.gridsteer.hook, { enabled: true, delayMs: 2000, failureRate: 0.2, retries: 5, retryBaseMs: 250, progressiveGoaway: false, refuse: false });
  assert.equal(sc.policies.reactive.check, 'event');
});

test('the options of issue 30 parse: a claim with no physical effect, wrong capacity units, noisy readings, distant resolvers without ECS; bad ones name their path', (t) => {
  const dir = tempDir(t, {
    'o.yaml': tinyScenario('policies:\n  gridsteer:\n    capacityUnits: { east: 250 }\n')
      .replace('effect: { kind: power-off }', 'effect: { kind: none }')
      .replace('  warmup: 5m', '  warmup: 5m\n  noEcsResolvers: 0.3\n  noEcsDistant: 0.5\n  loadNoise: 0.1'),
    'bad.yaml': tinyScenario('policies:\n  gridsteer:\n    capacityUnits: { nowhere: 250 }\n')
      .replace('effect: { kind: power-off }', 'effect: { kind: none, share: 0.5 }')
      .replace('  warmup: 5m', '  warmup: 5m\n  loadNoise: 2'),
  });
  const sc = loadScenario(join(dir, 'o.yaml'));
  assert.deepEqual(sc.events[0]!.effect, { kind: 'none' });
  assert.equal(sc.events[0]!.facts.length, 1, 'GridSteer is told all the same');
  assert.deepEqual(sc.policies.gridsteer.capacityUnits, { east: 250 });
  assert.deepEqual([sc.world.noEcsDistant, sc.world.loadNoise], [0.5, 0.1]);
  const bad = issuesOf(join(dir, 'bad.yaml'));
  assert.deepEqual(bad.map((i) => i.path).sort(), ['world.loadNoise']);
  // The schema is read first; with it fixed, the rest is found.
  writeFileSync(join(dir, 'bad.yaml'), readFileSync(join(dir, 'bad.yaml'), 'utf8').replace('loadNoise: 2', 'loadNoise: 0.2'));
  const rest = issuesOf(join(dir, 'bad.yaml'));
  assert.deepEqual(
    rest.map((i) => i.path),
    ['events[0].effect.share', 'policies.gridsteer.capacityUnits.nowhere'],
  );
  assert.match(rest[0]!.message, /only a throttle has a share: remove it \(none changes nothing on the region\)/);
  assert.match(rest[1]!.message, /"nowhere" is not a region of the fleet: use one of east, south, west/);
});
