/**
 * npm run demo (scripts/demo.mjs, issue 18) on a test clock (GRIDSTEER_TEST_CLOCK, 10×): the
 * demo serves the example fleet with its DEMO banner and demo drain policy; its synthetic feed
 * is accepted through POST /v1/signals (power, load and probes on every region, from demo/
 * sources); the first grid event (a load shed on us-va, announced 5 demo minutes after start
 * for 5 minutes later) drains us-va in dig — clients placed at the default location move to
 * us-tx — and us-va comes back after it; the next event is announced on the schedule.
 * Screenshots of the dashboard before, during and after the event in test-artifacts/demo/.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchBrowser } from './helpers/browser.js';
import { dig } from './helpers/dig.js';
import { sleep } from './helpers/net.js';
import { repoRoot } from './helpers/paths.js';
import { freePort } from './helpers/ports.js';

// 10×, with the first event announced 5 demo minutes in (its drain begins about 8 demo minutes
// in, 48 s of real time: room for a start on a loaded machine) and the next 10 minutes later.
const RATE = 10;
const US_VA = '192.0.2.10,192.0.2.11';
const US_TX = '192.0.2.20,192.0.2.21';

test('npm run demo: banner, feed accepted, the announced load shed drains us-va in dig and it comes back', { timeout: 300_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-demo-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const dnsPort = await freePort();
  const httpPort = await freePort();
  const now = Date.now();
  const demo = spawn(process.execPath, [join(repoRoot, 'scripts', 'demo.mjs'), '--dns-listen', `127.0.0.1:${dnsPort}`, '--http-listen', `127.0.0.1:${httpPort}`, '--workers', '0', '--dir', dir, '--first-event', '5m', '--every', '10m'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, GRIDSTEER_TEST_CLOCK: `${now}@${RATE}@${now}` },
  });
  let out = '';
  demo.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  demo.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
  t.after(async () => {
    demo.kill('SIGTERM');
    const bound = setTimeout(() => demo.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(bound);
  });
  const until = async <T>(what: string, f: () => Promise<T | undefined>, ms: number): Promise<T> => {
    const deadline = Date.now() + ms;
    for (let i = 0; Date.now() < deadline && i < ms / 200; i++) {
      const v = await f().catch(() => undefined);
      if (v !== undefined) return v;
      await sleep(200);
    }
    throw new Error(`demo: ${what} within ${ms} ms\n${out.split('\n').filter((l) => !l.startsWith('{')).slice(-20).join('\n')}`);
  };

  const token = await until('the token line', async () => /token \(operator\): ([0-9a-f]{32})/.exec(out)?.[1], 60_000);
  const http = `http://127.0.0.1:${httpPort}`;
  const api = async <T>(path: string): Promise<T> => {
    const r = await fetch(`${http}${path}`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5000) });
    assert.equal(r.status, 200, path);
    return (await r.json()) as T;
  };
  const answer = async () => {
    const r = await dig({ host: '127.0.0.1', port: dnsPort }, ['api.gslb.example.com', 'A', '+norec']);
    return r.msg.answer.filter((x) => x.type === 'A').map((x) => x.data).sort().join(',');
  };

  // The demo says it is one: the banner (and the dashboard shows it), the demo drain policy.
  const cfg = await api<{ banner?: string }>('/v1/config');
  assert.match(cfg.banner ?? '', /^DEMO: synthetic feed .* demo drain policy \(60 s allowance and ramp, 30 s hold, 60 s restore\)$/);
  assert.match(out, /^DEMO: /m);

  // The feed is accepted: every region has power headroom, probes and load, from demo/ sources.
  type Regions = { regions: { id: string; state: string; power: { headroomW?: number }; health?: { up: number; total: number }; signals: { kind: string; source: string }[] }[] };
  const fed = await until('the feed in every region', async () => {
    const r = await api<Regions>('/v1/regions');
    return r.regions.every((x) => x.power.headroomW !== undefined && x.health && x.health.total > 0 && x.signals.some((s) => s.kind === 'load.metrics')) ? r : undefined;
  }, 30_000);
  for (const r of fed.regions) {
    assert.deepEqual([...new Set(r.signals.map((s) => s.source))].sort(), ['demo/model-server', 'demo/prober', 'demo/site-meter'], r.id);
  }

  const browser = await launchBrowser('demo');
  t.after(() => browser.close());
  const page = await browser.page();
  await page.goto(`${http}/`);
  await page.fill('#token', token);
  await page.click('#token-form button[type=submit]');
  await page.waitForSelector('#live.live-ok');
  await page.waitForSelector('#site-banner:not([hidden])');
  assert.match((await page.textContent('#site-banner')) ?? '', /^DEMO/);

  // Before: us-va answers the default location.
  assert.equal(await answer(), US_VA);
  await page.waitForSelector('#timeline rect.event-grid-event[data-event="demo-shed-1"]', { timeout: 60_000 });
  await page.click('#map g.region[data-region="us-va"]');
  await browser.shot(page, 'before');

  // During: the load shed drains us-va; its clients go to us-tx.
  await until('us-va drained in dig', async () => ((await answer()) === US_TX ? true : undefined), 120_000);
  // (The ramp moves this client first; then the region drains fully by the event's start.)
  await until('us-va drained by the event', async () => {
    const r = await api<Regions>('/v1/regions');
    return ['drained', 'refusing'].includes(r.regions.find((x) => x.id === 'us-va')!.state) ? true : undefined;
  }, 90_000);
  assert.equal(await answer(), US_TX);
  await page.waitForSelector('#map g.region[data-region="us-va"]:is([data-state="drained"], [data-state="refusing"])');
  assert.doesNotMatch((await page.textContent('#detail-info')) ?? '', /\[object /, 'the detail shows no unrendered object');
  await browser.shot(page, 'during');

  // After: the event over, hold and restore, us-va answers again.
  await until('us-va back in dig', async () => ((await answer()) === US_VA ? true : undefined), 150_000);
  await page.waitForSelector('#map g.region[data-region="us-va"][data-state="up"]', { timeout: 60_000 });
  await browser.shot(page, 'after');

  // The next event on the schedule (10 demo minutes after the first, with --every 10m).
  await until('the second event announced', async () => (/grid event demo-shed-2: load-shed on us-tx/.test(out) ? true : undefined), 120_000);
  const events = await api<{ events: { key: string; source: string }[] }>('/v1/grid-events');
  assert.ok(events.events.some((e) => e.key === 'demo-shed-2' && e.source === 'demo/utility'), JSON.stringify(events.events));

  // Ctrl-C stops the server and the feed: the demo exits.
  demo.kill('SIGINT');
  const code = await Promise.race([exited, sleep(15_000).then(() => 'still running')]);
  assert.equal(code, 0, out.slice(-2000));
});
