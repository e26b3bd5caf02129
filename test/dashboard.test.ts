/**
 * The web dashboard end to end in a real browser (issue 7): Debian's chromium driven by
 * playwright-core against a spawned server. Without a token the page asks for one; a viewer
 * sees the regions on the map and in the table, runs an explain (the answer equals the API's),
 * and is refused when previewing a drain (nothing is written); an operator previews and
 * confirms a drain of us-va; the viewer's page, never reloaded, shows us-va drained (the live
 * stream), and dig's answers stop naming us-va. Fail over and freeze: a viewer's force and
 * freeze are refused (403, nothing written); an operator forces us-va down (preview first),
 * the viewer's page shows it down and dig answers us-tx; the force is cleared and us-va answers
 * again; automation is frozen and unfrozen from the header, and both pages say so live.
 * Screenshots: test-artifacts/dashboard/.
 *
 * geoip is disabled: every client is placed at the default location (Ashburn, VA), whose
 * nearest region is us-va, then us-tx. Every wait is bounded (playwright's timeouts, counted
 * polls); nothing asserts how long anything took.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { askSteered } from './helpers/geo.js';
import { apiCall } from './helpers/api.js';
import { sleep } from './helpers/net.js';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';

const OPERATOR = 'dashboard-operator-token-3f9c1a';
const VIEWER = 'dashboard-viewer-token-b27e44';
const INGEST = 'dashboard-ingest-token-90d2c7';
const MIN = 60_000;

let cfg: TestConfig;
let srv: RunningServer;
let browser: TestBrowser;
const pageErrors: string[] = [];

before(async () => {
  // A recurring window drawn ahead on the timeline; its occurrences fall on blocked dates, so
  // it is shown (skipped) and never acts on what the rest of this suite checks.
  const day = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);
  cfg = writeTestConfig((c) => {
    // A practice run that began two minutes ago on a blocked date: skipped, and recorded so by
    // the practice-runs job at its next minute.
    const ran = new Date(Date.now() - 2 * MIN);
    c.windows = [
      { id: 'tyo-night', regions: ['ap-tyo'], cron: '0 3 * * *', timezone: 'UTC', duration: '1h', reason: 'kernel updates', blockedDates: [day(-1), day(0), day(1), day(2), day(3)] },
      { id: 'sin-drill', kind: 'practice', regions: ['ap-sin'], cron: `${ran.getUTCMinutes()} ${ran.getUTCHours()} * * *`, timezone: 'UTC', duration: '1h', reason: 'weekly drill', blockedDates: [day(-1), day(0), day(1), day(2)] },
    ];
  });
  srv = await spawnServer({ configFile: cfg.file, env: { GRIDSTEER_TOKENS: `operator:olga:${OPERATOR},viewer:victor:${VIEWER},ingest:feeder:${INGEST}` } });
  browser = await launchBrowser('dashboard');
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  cfg?.cleanup();
});

async function open(token: string | null): Promise<Page> {
  const p = await browser.page();
  p.on('pageerror', (e) => pageErrors.push(e.message));
  await p.goto(`${srv.http}/`);
  if (token !== null) {
    await p.fill('#token', token);
    await p.click('#token-form button[type=submit]');
  }
  return p;
}

/** The page's live-stream indicator once the stream has delivered the fleet. */
const LIVE = '#live.live-ok';

const stateOf = (p: Page, region: string) => p.getAttribute(`#map g.region[data-region="${region}"]`, 'data-state');

test('without a token the page asks for one and shows no data', async () => {
  const p = await open(null);
  await p.waitForSelector('#messages .msg-error');
  const msg = await p.textContent('#messages');
  assert.match(msg ?? '', /token/i, msg ?? '');
  assert.equal(await p.locator('#map g.region').count(), 0);
  // One sign-in state in the header: #who says it; the live chip only says the stream is down.
  assert.equal(await p.textContent('#who'), 'not signed in');
  assert.equal(await p.textContent('#live'), 'not connected');
  assert.doesNotMatch((await p.textContent('header')) ?? '', /signed out/);
  await browser.shot(p, '1-signed-out');
  await p.close();
});

test('a viewer sees every region, its signals, the grid events, runs an explain, and is refused a drain', async () => {
  // Facts far from the default location's ranking (us-va, us-tx, ca-ab): an announced load shed
  // in São Paulo, an alert in Ireland, a power budget in Alberta (4.5 MW headroom).
  const now = Date.now();
  const pushed = await apiCall(srv.http, 'POST', '/v1/signals', INGEST, {
    signals: [
      { region: 'sa-sao', kind: 'grid.event', source: 'openadr/vtn-br', key: 'shed-1', observedAt: now, expiresAt: now + 500 * MIN, value: { id: 'shed-1', type: 'load-shed', start: now + 300 * MIN, end: now + 360 * MIN, program: 'ONS load shed' } },
      { region: 'eu-ie', kind: 'grid.alert', source: 'iso/eirgrid', key: 'alert', observedAt: now, expiresAt: now + 60 * MIN, value: { level: 1, type: 'watch', zone: 'IE' } },
      { region: 'ca-ab', kind: 'power.budget', source: 'btm/site-a', key: 'meter-1', observedAt: now, expiresAt: now + 10 * MIN, value: { importLimitW: 12e6, generationW: 8e6, drawW: 15.5e6 } },
      // A SIMPLE level 0 (normal operation: it changes nothing) that ends 2 s from now: then history.
      { region: 'ap-sin', kind: 'grid.event', source: 'openadr/vtn-sg', key: 'short-1', observedAt: now, expiresAt: now + 60 * MIN, value: { id: 'short-1', type: 'simple', level: 0, start: now - MIN, end: now + 2000 } },
    ],
  });
  assert.equal(pushed.status, 200, JSON.stringify(pushed.body));
  const p = await open(VIEWER);
  await p.waitForSelector('#map g.region');
  await p.waitForSelector(LIVE);
  const regions = await p.$$eval('#map g.region', (els) => els.map((e) => e.getAttribute('data-region')).sort());
  assert.deepEqual(regions, ['ap-sin', 'ap-tyo', 'ca-ab', 'eu-ie', 'sa-sao', 'us-tx', 'us-va']);
  assert.equal(await stateOf(p, 'us-va'), 'up');
  assert.equal(await p.locator('#regions tbody tr').count(), 7);
  assert.match((await p.textContent('#who')) ?? '', /victor · viewer/);
  // Power headroom in the table; the grid event on the timeline and in the list.
  assert.match((await p.textContent('#regions tbody tr[data-region="ca-ab"]')) ?? '', /4\.50 MW/);
  await p.waitForSelector('#timeline rect.event-grid-event[data-event="shed-1"]');
  await p.waitForSelector('#timeline rect.event-grid-alert[data-event="alert"]');
  assert.match((await p.textContent('#timeline ul.events')) ?? '', /sa-sao: event load-shed, .* from openadr\/vtn-br by token:feeder \(ONS load shed\); learned .* — announced/);
  // Once its end has passed, an event is history: greyed on the timeline, listed apart, never as current.
  await p.waitForSelector('#timeline ul.events.history li[data-event="short-1"]', { timeout: 30_000 });
  assert.match((await p.textContent('#timeline ul.events.history li[data-event="short-1"]')) ?? '', /^ap-sin: event simple level 0, .* — over$/);
  assert.equal(await p.locator('#timeline ul.events:not(.history) li[data-event="short-1"]').count(), 0, 'not listed as current');
  await p.waitForSelector('#timeline rect.event.history[data-event="short-1"]');
  // ca-ab's power budget goes stale unless reported again: from that step its share line is
  // dashed ("if stale"), not drawn as a scheduled drop; us-va depends on no such fact.
  await p.waitForSelector('#timeline path.share-line.if-stale[data-region="ca-ab"]');
  assert.equal(await p.locator('#timeline path.share-line.if-stale[data-region="us-va"]').count(), 0);
  assert.match((await p.textContent('#timeline circle.step.if-stale')) ?? '', /^only if not reported again: .*ca-ab: power budget from btm\/site-a is stale \(policy: degraded\)/);
  // The housekeeping jobs (GET /v1/jobs): each with its schedule and this node's next slot.
  await p.waitForSelector('#jobs table.jobs tr[data-job="gc-signals"]');
  const jobNames = await p.$$eval('#jobs tr[data-job]', (els) => els.map((e) => e.getAttribute('data-job')).sort());
  const apiJobs = ((await apiCall(srv.http, 'GET', '/v1/jobs', VIEWER)).body.jobs as { name: string }[]).map((j) => j.name).sort();
  assert.deepEqual(jobNames, apiJobs, 'the panel lists the jobs the API lists');
  assert.match((await p.textContent('#jobs tr[data-job="gc-signals"]')) ?? '', /17 \* \* \* \*.*\(in \d+ min\)/);
  // The recurring window, drawn ahead on its region's row and listed (skipped: a blocked date).
  await p.waitForSelector('#timeline rect.window.window-maintenance.skipped[data-window="tyo-night"]');
  assert.match((await p.textContent('#timeline ul.windows')) ?? '', /ap-tyo: maintenance window tyo-night \(kernel updates\), .* drained — skipped: blocked date \d{4}-\d\d-\d\d \(UTC\)/);
  // The practice run, recorded skipped by the job (every minute) and listed under the jobs.
  await p.waitForSelector('#practice tr[data-window="sin-drill"][data-outcome="skipped"]', { timeout: 150_000 });
  assert.match((await p.textContent('#practice tr[data-window="sin-drill"]')) ?? '', /^sin-drillap-sin\d\d:\d\d – \d\d:\d\dskippedblocked date \d{4}-\d\d-\d\d/);
  // A region's detail: its signals with source, and the reasons of its step.
  await p.click('#regions tbody tr[data-region="ca-ab"]');
  await p.waitForSelector('#detail-info table.signals');
  const signal = (await p.textContent('#detail-info table.signals tbody')) ?? '';
  assert.match(signal, /power\.budget\s*btm\/site-a\s*token:feeder \(no grant\)\s*meter-1\s*import limit 12 MW, generation 8 MW, draw 15\.5 MW/);
  await p.click('#map g.region[data-region="eu-ie"]');
  await p.waitForSelector('#detail-info ul.reasons li');
  assert.match((await p.textContent('#detail-info ul.reasons')) ?? '', /grid alert watch level 1/);
  // A grid event's signal shows its times readable (the exact instant on hover), not raw ISO with milliseconds.
  await p.click('#map g.region[data-region="sa-sao"]');
  await p.waitForSelector('#detail-info table.signals tbody tr');
  const eventSignal = (await p.textContent('#detail-info table.signals tbody')) ?? '';
  assert.match(eventSignal, /grid\.event\s*openadr\/vtn-br\s*token:feeder \(no grant\)\s*shed-1\s*load-shed, /);
  assert.doesNotMatch(eventSignal, /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/, eventSignal);
  assert.ok((await p.locator('#detail-info table.signals tbody time[title]').count()) >= 2, 'start and end as <time> with the instant on hover');

  // The map's labels hide no other label and no other region's dot (us-tx beside us-va).
  // (Evaluated in the page, as text: this file is compiled without the DOM's types.)
  const clashes = (await p.evaluate(`(() => {
    const gs = [...document.querySelectorAll('#map g.region')];
    const box = (id, el) => { const b = el.getBBox(); return { id, x0: b.x, y0: b.y, x1: b.x + b.width, y1: b.y + b.height }; };
    const labels = gs.map((g) => box(g.getAttribute('data-region'), g.querySelector('text.label')));
    const dots = gs.map((g) => box(g.getAttribute('data-region'), g.querySelector('circle.dot')));
    const hit = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
    const out = [];
    for (const l of labels) {
      for (const o of labels) if (o.id < l.id && hit(l, o)) out.push('label ' + l.id + ' over label ' + o.id);
      for (const d of dots) if (d.id !== l.id && hit(l, d)) out.push('label ' + l.id + ' over the dot of ' + d.id);
    }
    return out;
  })()`)) as string[];
  assert.deepEqual(clashes, []);
  // The same with the dots of a busy us-va (most demand at the default location): the page's
  // own placement (ui/js/labels.js) drawn in the page's map font, measured by the browser.
  const busy = (await p.evaluate(`(async () => {
    const { placeLabels } = await import('/ui/js/labels.js');
    const fleet = { 'us-va': [-77.49, 39.04, 0.8], 'us-tx': [-99.73, 32.45, 0.1], 'ca-ab': [-114.07, 51.05, 0.05], 'eu-ie': [-6.26, 53.35, 0.02], 'ap-tyo': [139.69, 35.68, 0.01], 'ap-sin': [103.82, 1.35, 0.01], 'sa-sao': [-46.63, -23.55, 0.01] };
    const dots = Object.entries(fleet).sort(([a], [b]) => (a < b ? -1 : 1)).map(([id, [lon, lat, t]]) => ({ id, x: lon + 180, y: 90 - lat, r: 1.6 + 5 * Math.sqrt(t) + 1.2, text: id + ' 100 %' }));
    const at = placeLabels(dots);
    const NS = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('viewBox', '0 6 360 146');
    svg.setAttribute('class', 'map');
    document.getElementById('map').append(svg);
    const boxes = dots.map((d) => {
      const g = document.createElementNS(NS, 'g');
      g.setAttribute('class', 'region');
      const text = document.createElementNS(NS, 'text');
      text.setAttribute('class', 'label');
      const p = at.get(d.id);
      text.setAttribute('x', p.x); text.setAttribute('y', p.y); text.setAttribute('text-anchor', p.anchor);
      text.textContent = d.text;
      g.append(text); svg.append(g);
      const b = text.getBBox();
      return { id: d.id, x0: b.x, y0: b.y, x1: b.x + b.width, y1: b.y + b.height };
    });
    svg.remove();
    const hit = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
    const out = [];
    for (const l of boxes) {
      for (const o of boxes) if (o.id < l.id && hit(l, o)) out.push('label ' + l.id + ' over label ' + o.id);
      for (const d of dots) if (d.id !== l.id && hit(l, { x0: d.x - d.r, y0: d.y - d.r, x1: d.x + d.r, y1: d.y + d.r })) out.push('label ' + l.id + ' over the dot of ' + d.id);
    }
    return out;
  })()`)) as string[];
  assert.deepEqual(busy, []);
  // Numeric columns: the header aligned as its numbers are.
  const aligns = (await p.evaluate(`(() => {
    const t = document.querySelector('#regions table.grid');
    const ths = [...t.querySelectorAll('thead th')];
    const tds = [...t.querySelectorAll('tbody tr:first-child td')];
    return ths.map((th, i) => [th.textContent, getComputedStyle(th).textAlign, getComputedStyle(tds[i]).textAlign]);
  })()`)) as [string, string, string][];
  for (const [name, th, td] of aligns) assert.equal(th === 'right', td === 'right', `column ${name}: header ${th}, numbers ${td}`);
  assert.ok(aligns.filter(([, th]) => th === 'right').length >= 4, JSON.stringify(aligns));
  // Times for people, the exact instant on hover: sa-sao's next change (the shed's drain).
  const next = await p.$eval('#regions tbody tr[data-region="sa-sao"] time', (e) => [e.textContent, e.getAttribute('title')]);
  assert.match(next[0] ?? '', /^→ \d+ % in \d+ (min|h)/, JSON.stringify(next));
  assert.match(next[1] ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, JSON.stringify(next));
  assert.doesNotMatch(await p.innerText('main'), /\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?(\.\d+)?Z/, 'no raw ISO instant in the page text');

  // Explain: the page shows the API's answer for the same query.
  await p.waitForSelector('#explain-name option', { state: 'attached' });
  await p.fill('#explain-client', '192.0.2.77');
  await p.click('#explain-go');
  await p.waitForSelector('#explain-result [data-answer-region]');
  const shown = await p.getAttribute('#explain-result [data-answer-region]', 'data-answer-region');
  const name = await p.inputValue('#explain-name');
  const api = await apiCall(srv.http, 'GET', `/v1/explain?client=192.0.2.77&name=${encodeURIComponent(name)}`, VIEWER);
  assert.equal(api.status, 200);
  assert.equal(shown, (api.body.answer as { region: string }).region);
  assert.equal(shown, 'us-va', 'the default location is nearest us-va');
  await browser.shot(p, '2-viewer-explain');

  // A viewer's preview is refused by the server; the confirm button stays off; nothing is written.
  await p.click('#map g.region[data-region="us-va"]');
  await p.fill('#drain-reason', 'viewer tries');
  await p.click('#drain-preview');
  await p.waitForSelector('#messages .msg-error');
  assert.match((await p.textContent('#messages')) ?? '', /403 GSLB_ERR_FORBIDDEN/);
  assert.equal(await p.isDisabled('#drain-confirm'), true);
  const overrides = await apiCall(srv.http, 'GET', '/v1/overrides', VIEWER);
  assert.deepEqual(overrides.body.overrides, []);
  await browser.shot(p, '3-viewer-refused');
  await p.close();
});

/** Bounded polls of dig until `want(region)` holds; returns the last answer. */
async function digUntil(want: (region: string | null) => boolean) {
  let r = await askSteered(srv.udp, 'A', '198.51.100.0/24');
  for (let i = 0; i < 50 && !want(r.region); i++) {
    await sleep(100);
    r = await askSteered(srv.udp, 'A', '198.51.100.0/24');
  }
  return r;
}

const overridesNow = async () => (await apiCall(srv.http, 'GET', '/v1/overrides', VIEWER)).body.overrides as { id: string; region: string; action: string; actor: string; end?: number }[];
const auditNow = async () => (await apiCall(srv.http, 'GET', '/v1/audit?limit=10000', VIEWER)).body.entries as { seq: number; actor: string; action: string; target: string }[];

test('fail over and freeze: a viewer is refused; an operator forces us-va down, clears it, freezes and unfreezes; the viewer page follows live', async () => {
  const viewer = await open(VIEWER);
  await viewer.waitForSelector(LIVE);
  await viewer.evaluate(() => {
    (globalThis as { notReloaded?: boolean }).notReloaded = true;
  });
  await viewer.waitForSelector('#automation[data-frozen="false"]');
  assert.equal(await viewer.textContent('#automation'), 'automation running');
  assert.equal(await viewer.isVisible('#frozen-banner'), false);
  const overridesBefore = await overridesNow();
  const auditBefore = await auditNow();

  // A viewer's force: the preview is refused (403) and Confirm stays off; Clear force is refused
  // too; so is the route itself. Nothing is written.
  await viewer.click('#regions tbody tr[data-region="us-va"]');
  assert.match((await viewer.textContent('#detail-actions')) ?? '', /not an operator.*Sign in with an operator token to drain/);
  assert.match((await viewer.textContent('#detail-actions')) ?? '', /not an operator.*Sign in with an operator token to fail over/);
  await viewer.fill('#force-reason', 'viewer tries to force');
  await viewer.click('#force-preview');
  await viewer.waitForSelector('#messages .msg-error >> text=/Preview refused/');
  assert.match((await viewer.textContent('#messages')) ?? '', /Preview refused: 403 GSLB_ERR_FORBIDDEN/);
  assert.equal(await viewer.isDisabled('#force-confirm'), true);
  await viewer.click('#force-clear');
  await viewer.waitForSelector('#messages .msg-error >> text=/Clear force refused/');
  assert.match((await viewer.textContent('#messages')) ?? '', /Clear force refused: 403 GSLB_ERR_FORBIDDEN/);
  const direct = await apiCall(srv.http, 'POST', '/v1/regions/us-va/force', VIEWER, { state: 'down', reason: 'viewer tries the route' });
  assert.equal(direct.status, 403, JSON.stringify(direct.body));
  // A viewer's freeze: the preview is refused too.
  await viewer.click('#freeze-toggle');
  await viewer.fill('#freeze-reason', 'viewer tries to freeze');
  await viewer.click('#freeze-preview');
  await viewer.waitForSelector('#messages .msg-error >> text=/Preview refused/');
  assert.match((await viewer.textContent('#messages')) ?? '', /Preview refused: 403 GSLB_ERR_FORBIDDEN/);
  assert.equal(await viewer.isDisabled('#freeze-confirm'), true);
  await browser.shot(viewer, '7-viewer-force-freeze-refused');
  await viewer.click('#freeze-toggle');
  assert.deepEqual(await overridesNow(), overridesBefore, 'a refused force or freeze writes no override');
  assert.deepEqual(await auditNow(), auditBefore, 'a refused force or freeze writes no audit entry');

  const before = await askSteered(srv.udp, 'A', '198.51.100.0/24');
  assert.equal(before.region, 'us-va', before.summary);

  // The operator previews a force down of us-va: us-va takes nothing; nothing is written.
  const op = await open(OPERATOR);
  await op.waitForSelector(LIVE);
  await op.click('#regions tbody tr[data-region="us-va"]');
  assert.notEqual(await op.textContent('#regions tbody tr[data-region="us-va"] td.traffic'), '0 %', 'us-va takes traffic before the force');
  // A force up without an end is not previewed (the API refuses it).
  await op.selectOption('#force-state', 'up');
  await op.fill('#force-reason', 'dashboard test: force us-va down');
  await op.click('#force-preview');
  await op.waitForSelector('#messages .msg-error >> text=/force up needs "until"/');
  assert.equal(await op.isDisabled('#force-confirm'), true);
  await op.selectOption('#force-state', 'down');
  await op.fill('#force-until', '');
  await op.click('#force-preview');
  await op.waitForSelector('#force-preview-summary');
  assert.match((await op.textContent('#force-preview-summary')) ?? '', /Forcing us-va down until cleared changes the schedule of .*us-va/);
  const forcedCell = await op.textContent('#force-preview-result table tbody tr:first-child td[data-region="us-va"]');
  assert.equal(forcedCell, '0 %', 'the preview shows us-va taking nothing');
  assert.deepEqual(await overridesNow(), overridesBefore, 'a preview writes nothing');
  // Confirm holds only for exactly the previewed settings.
  assert.equal(await op.isDisabled('#force-confirm'), false);
  await op.fill('#force-until', '30');
  assert.equal(await op.isDisabled('#force-confirm'), true, 'changed settings need a new preview');
  await op.fill('#force-until', '');
  assert.equal(await op.isDisabled('#force-confirm'), false);
  await browser.shot(op, '8-operator-force-preview');
  await op.click('#force-confirm');
  await op.waitForSelector('#messages .msg-ok >> text=/Force down of us-va/');
  const forces = (await overridesNow()).filter((o) => o.action.startsWith('force'));
  assert.deepEqual(
    forces.map((o) => [o.region, o.action, o.actor, o.end]),
    [['us-va', 'force-down', 'olga', undefined]],
  );

  // The viewer's page follows without a reload; DNS answers another region.
  await viewer.waitForSelector('#map g.region[data-region="us-va"][data-state="down"]');
  await viewer.waitForSelector('#regions tbody tr[data-region="us-va"][data-state="down"]');
  await viewer.waitForSelector('#detail-info .chip-down');
  const down = await digUntil((r) => r !== 'us-va');
  assert.equal(down.status, 'NOERROR', down.summary);
  assert.equal(down.region, 'us-tx', `with us-va forced down the default location's next region answers: ${down.summary}`);
  await browser.shot(viewer, '9-viewer-live-forced-down');

  // Clear the force: us-va serves again; a second clear is refused with the server's words.
  await op.fill('#force-reason', 'dashboard test: clear the force');
  await op.click('#force-clear');
  await op.waitForSelector('#messages .msg-ok >> text=/Force of us-va cleared/');
  assert.deepEqual((await overridesNow()).filter((o) => o.action.startsWith('force')), []);
  await op.click('#force-clear');
  await op.waitForSelector('#messages .msg-error >> text=/Clear force refused/');
  assert.match((await op.textContent('#messages')) ?? '', /Clear force refused: 400 \S+: .+/);
  await viewer.waitForSelector('#map g.region[data-region="us-va"][data-state="up"]');
  const back = await digUntil((r) => r === 'us-va');
  assert.equal(back.region, 'us-va', `after the force is cleared us-va answers again: ${back.summary}`);

  // Freeze automation from the header (preview, then confirm); both pages say who froze it.
  await op.click('#freeze-toggle');
  await op.fill('#freeze-until', '30');
  await op.fill('#freeze-reason', 'dashboard test: freeze');
  assert.equal(await op.isDisabled('#freeze-confirm'), true, 'no confirm before a preview');
  await op.click('#freeze-preview');
  await op.waitForSelector('#freeze-preview-summary');
  assert.match((await op.textContent('#freeze-preview-summary')) ?? '', /Freezing automation now until \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
  assert.deepEqual(await overridesNow(), overridesBefore, 'a freeze preview writes nothing');
  await browser.shot(op, '10-operator-freeze-preview');
  await op.click('#freeze-confirm');
  await op.waitForSelector('#messages .msg-ok >> text=/Automation frozen/');
  const frozen = (await apiCall(srv.http, 'GET', '/v1/status', VIEWER)).body.frozen as { actor: string; reason: string; end?: number } | null;
  assert.equal(frozen?.actor, 'olga');
  assert.equal(typeof frozen?.end, 'number', 'the freeze has the end given');
  const frozenText = /^automation frozen by olga \(dashboard test: freeze\) until \d{4}-\d\d-\d\d \d\d:\d\d UTC$/;
  for (const p of [op, viewer]) {
    await p.waitForSelector('#automation[data-frozen="true"]');
    assert.equal(await p.textContent('#automation'), 'automation frozen');
    await p.waitForSelector('#frozen-banner:not([hidden]) #frozen-words');
    assert.match((await p.textContent('#frozen-words')) ?? '', frozenText);
  }
  assert.equal(await viewer.textContent('#freeze-toggle'), 'Unfreeze\u2026');
  await browser.shot(viewer, '11-viewer-live-frozen');
  await browser.shot(op, '12-operator-frozen');

  // Unfreeze: both pages say automation runs.
  await op.click('#freeze-toggle');
  await op.fill('#freeze-reason', 'dashboard test: unfreeze');
  await op.click('#unfreeze');
  await op.waitForSelector('#messages .msg-ok >> text=/Automation unfrozen/');
  assert.equal((await apiCall(srv.http, 'GET', '/v1/status', VIEWER)).body.frozen, null);
  await op.waitForSelector('#automation[data-frozen="false"]');
  await viewer.waitForSelector('#automation[data-frozen="false"]');
  for (const p of [op, viewer]) {
    assert.equal(await p.textContent('#automation'), 'automation running');
    assert.equal(await p.isVisible('#frozen-banner'), false, 'no frozen strip once unfrozen');
  }
  assert.equal(await viewer.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded), true, 'the viewer page was not reloaded');

  // Every change was audited under the operator's token name.
  const added = (await auditNow()).filter((e) => !auditBefore.some((b) => b.seq === e.seq));
  assert.ok(added.length >= 4, JSON.stringify(added));
  assert.ok(added.every((e) => e.actor === 'olga'), JSON.stringify(added));
  await viewer.close();
  await op.close();
});

test('an operator previews and drains us-va; a viewer page sees it live and dig stops answering us-va', async () => {
  const viewer = await open(VIEWER);
  await viewer.waitForSelector(LIVE);
  await viewer.evaluate(() => {
    (globalThis as { notReloaded?: boolean }).notReloaded = true;
  });
  const before = await askSteered(srv.udp, 'A', '198.51.100.0/24');
  assert.equal(before.region, 'us-va', before.summary);

  const op = await open(OPERATOR);
  await op.waitForSelector(LIVE);
  assert.match((await op.textContent('#who')) ?? '', /olga · operator/);
  await op.click('#regions tbody tr[data-region="us-va"]');
  await op.fill('#drain-cap', '0');
  await op.fill('#drain-ramp', '0');
  await op.fill('#drain-reason', 'dashboard test: drain us-va');
  await op.click('#drain-preview');
  await op.waitForSelector('#preview-summary');
  const summary = (await op.textContent('#preview-summary')) ?? '';
  assert.match(summary, /Draining us-va to 0 %/);
  assert.match(summary, /us-va/);
  // The preview's first row: us-va takes nothing at once.
  const firstRow = await op.$$eval('#preview-result table tbody tr:first-child td', (tds) => tds.map((t) => t.textContent));
  assert.equal(firstRow[1], '0 %', `preview row: ${firstRow.join(' | ')}`);
  assert.deepEqual((await apiCall(srv.http, 'GET', '/v1/overrides', VIEWER)).body.overrides, [], 'a preview writes nothing');
  await browser.shot(op, '4-operator-preview');
  await op.click('#drain-confirm');
  await op.waitForSelector('#messages .msg-ok');
  assert.match((await op.textContent('#messages')) ?? '', /Drain of us-va started/);
  const live = (await apiCall(srv.http, 'GET', '/v1/overrides', VIEWER)).body.overrides as { region: string; action: string; actor: string }[];
  assert.deepEqual(
    live.map((o) => [o.region, o.action, o.actor]),
    [['us-va', 'drain', 'olga']],
  );

  // The viewer's page follows without a reload.
  await viewer.waitForSelector('#map g.region[data-region="us-va"][data-state="drained"]');
  await viewer.waitForSelector('#regions tbody tr[data-region="us-va"][data-state="drained"]');
  assert.equal(await viewer.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded), true, 'the page was not reloaded');
  // The operator's open region follows too; its form keeps what was typed.
  await op.waitForSelector('#detail-info .chip-drained');
  assert.match((await op.textContent('#detail-info')) ?? '', /drain to 0 by olga/);
  assert.equal(await op.inputValue('#drain-reason'), 'dashboard test: drain us-va');
  assert.equal(await op.isDisabled('#drain-confirm'), true, 'a confirmed drain needs a new preview');
  await browser.shot(viewer, '5-viewer-live-drained');
  await browser.shot(op, '6-operator-after-drain');

  // DNS follows: bounded polls until the answer leaves us-va (the plan reaches the responder).
  let after = await askSteered(srv.udp, 'A', '198.51.100.0/24');
  for (let i = 0; i < 50 && after.region === 'us-va'; i++) {
    await sleep(100);
    after = await askSteered(srv.udp, 'A', '198.51.100.0/24');
  }
  assert.equal(after.status, 'NOERROR', after.summary);
  assert.equal(after.region, 'us-tx', `after the drain the default location's next region answers: ${after.summary}`);

  // Undrain from the page: the region comes back (ramping), the override ends.
  await op.fill('#drain-reason', 'dashboard test: undrain');
  await op.click('#undrain');
  await op.waitForSelector('#messages .msg-ok >> text=/Undrain of us-va/');
  const drains = ((await apiCall(srv.http, 'GET', '/v1/overrides', VIEWER)).body.overrides as { action: string }[]).filter((o) => o.action === 'drain');
  assert.deepEqual(drains, []);
  await viewer.close();
  await op.close();
  assert.deepEqual(pageErrors, [], 'no script errors on the page');
});

test("the plan's alerts under the header: a loss the safety limits hold waits for an operator, with when it starts and until when to act", async () => {
  // Load-shed orders for us-va and then us-tx (55.8 % of the fleet together) from a source not
  // bound to them (policy.grid.loss.bindings is empty here): untrusted claims, and the second
  // is held by the safety limit (maxAutoShare 0.5). Far enough ahead to change nothing now
  // (a grid drain's S grows to 4 h at most: their ramps begin in about 3 hours, well after sa-sao's
  // from the first test, so the one-drain-per-interval limit holds neither).
  const now = Date.now();
  const ev = (region: string, id: string, start: number) => ({ region, kind: 'grid.event', source: 'openadr/vtn-us', key: id, observedAt: now, expiresAt: start + 120 * MIN, value: { id, type: 'load-shed', start, end: start + 60 * MIN } });
  const pushed = await apiCall(srv.http, 'POST', '/v1/signals', INGEST, { signals: [ev('us-va', 'shed-va', now + 400 * MIN), ev('us-tx', 'shed-tx', now + 430 * MIN)] });
  assert.equal(pushed.status, 200, JSON.stringify(pushed.body));
  const p = await open(VIEWER);
  await p.waitForSelector(LIVE);
  await p.waitForSelector('#plan-alerts:not([hidden]) .plan-alert-critical[data-kind="held-by-safety"][data-regions="us-tx"]');
  const critical = (await p.textContent('#plan-alerts .plan-alert-critical')) ?? '';
  assert.match(critical, /CRITICAL · held-by-safety · us-tx/);
  assert.match(critical, /shed-tx .* is held by the safety limits .* waits for an operator/);
  assert.match(critical, /starts .* \(in 7 h\)/, 'in 7 h 10 min, said in hours');
  assert.match(critical, /act by .* for a full proactive drain/);
  // Critical first, then the warnings that the claims are not trusted.
  const kinds = await p.$$eval('#plan-alerts .plan-alert', (els) => els.map((e) => `${e.getAttribute('data-kind')}:${e.getAttribute('data-regions')}`));
  assert.equal(kinds[0], 'held-by-safety:us-tx');
  const untrusted = kinds.slice(1).filter((k) => k.startsWith('loss-untrusted'));
  assert.ok(untrusted.includes('loss-untrusted:us-tx') && untrusted.includes('loss-untrusted:us-va'), kinds.join(' '));
  await browser.shot(p, '9-plan-alerts');
  // Cancelled: their alerts go, live (sa-sao's, from the first test, stays).
  const cancel = await apiCall(srv.http, 'POST', '/v1/signals', INGEST, {
    signals: [ev('us-va', 'shed-va', now + 400 * MIN), ev('us-tx', 'shed-tx', now + 430 * MIN)].map((s) => ({ ...s, observedAt: Date.now(), value: { ...s.value, cancelled: true } })),
  });
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
  await p.waitForSelector('#plan-alerts .plan-alert[data-regions="us-tx"]', { state: 'detached' });
  assert.equal(await p.locator('#plan-alerts .plan-alert[data-regions="us-va"]').count(), 0);
  assert.equal(await p.locator('#plan-alerts .plan-alert[data-regions="sa-sao"]').count(), 1);
  await p.close();
  assert.deepEqual(pageErrors, [], 'no script errors on the page');
});
