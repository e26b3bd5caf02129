/**
 * npm run demo (scripts/demo.mjs, issue 18) on a test clock (GRIDSTEER_TEST_CLOCK, 10×): the
 * demo serves the example fleet with its DEMO banner and demo drain policy; its synthetic feed
 * is accepted through POST /v1/signals (power, load and probes on every region, from demo/
 * sources); the first grid event (a load shed on us-va, announced 5 demo minutes after start
 * for 5 minutes later) drains us-va in dig — clients placed at the default location move to
 * us-tx — and us-va comes back after it; the next event is announced on the schedule.
 * The real CLI (bin/gridsteer.js, a subprocess) is run at each moment as a newcomer would:
 * `gridsteer status` says us-va up before, draining step by step (the next step counted down)
 * while dig's TTLs shrink, drained or refusing during, up after; `gridsteer events` lists the
 * load shed announced, then as history once over.
 * Screenshots of the dashboard before, during and after the event in test-artifacts/demo/.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
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
  // The real CLI (bin/gridsteer.js, as `npx gridsteer` runs it) against the demo, with its token.
  const cli = (args: string[]) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      execFile(
        process.execPath,
        [join(repoRoot, 'bin', 'gridsteer.js'), ...args],
        { env: { ...process.env, GRIDSTEER_SERVER: http, GRIDSTEER_TOKEN: token }, timeout: 20_000, killSignal: 'SIGKILL' },
        (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, out: `${stdout}${stderr}` }),
      );
    });
  /** `gridsteer status`'s row for a region, split on its column gaps: REGION SHARE STATE TTL-CAP NEXT REASON. */
  const statusRow = async (region: string) => {
    const r = await cli(['status']);
    assert.equal(r.code, 0, r.out);
    const line = r.out.split('\n').find((l) => l.startsWith(`${region} `));
    assert.ok(line, `gridsteer status has a row for ${region}:\n${r.out}`);
    return { cells: line.split(/ {2,}/).map((c) => c.trim()), out: r.out };
  };
  /** `gridsteer events`' row for an event key (in the current table, or indented under "history"). */
  const eventRow = async (key: string) => {
    const r = await cli(['events']);
    assert.equal(r.code, 0, r.out);
    const lines = r.out.split('\n');
    const at = lines.findIndex((l) => l.trim().split(/ {2,}/)[1] === key);
    assert.ok(at >= 0, `gridsteer events lists ${key}:\n${r.out}`);
    const historyAt = lines.findIndex((l) => l.startsWith('history'));
    return { cells: lines[at]!.trim().split(/ {2,}/), history: historyAt >= 0 && at > historyAt, out: r.out };
  };
  /** The addresses (sorted, comma-joined) and TTL dig gets for api.gslb.example.com A. */
  const ask = async () => {
    const r = await dig({ host: '127.0.0.1', port: dnsPort }, ['api.gslb.example.com', 'A', '+norec']);
    const a = r.msg.answer.filter((x) => x.type === 'A');
    return { addrs: a.map((x) => x.data).sort().join(','), ttl: a[0]?.ttl ?? -1 };
  };
  const answer = async () => (await ask()).addrs;

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
  // The CLI says the same: us-va up and taking all its clients; the load shed announced.
  const before = await statusRow('us-va');
  t.diagnostic(`before: ${before.cells.join(' | ')}`);
  assert.deepEqual(before.cells.slice(1, 3), ['100%', 'up'], before.out);
  const announced = await eventRow('demo-shed-1');
  t.diagnostic(`before: ${announced.cells.join(' | ')}`);
  assert.deepEqual([announced.cells[0], announced.cells[2], announced.cells[3], announced.history], ['us-va', 'load-shed', 'announced', false], announced.out);
  assert.match(announced.cells[4]!, /^in (\d+m )?(\d+s )?\(/, `starts ahead: ${announced.out}`);

  // During: the load shed drains us-va; its clients go to us-tx. Meanwhile `gridsteer status`
  // is sampled (bounded: at most 200 runs) to see the TTL cap and the ramp as a user would.
  const sampled: string[][] = [];
  let sampling = true;
  const sampler = (async () => {
    for (let i = 0; sampling && i < 200; i++) sampled.push((await statusRow('us-va').catch(() => ({ cells: [] as string[] }))).cells);
  })();
  const digs: { addrs: string; ttl: number }[] = [];
  await until('us-va drained in dig', async () => {
    const a = await ask();
    digs.push(a);
    return a.addrs === US_TX ? true : undefined;
  }, 120_000);
  // (The ramp moves this client first; then the region drains fully by the event's start.)
  await until('us-va drained by the event', async () => {
    const r = await api<Regions>('/v1/regions');
    return ['drained', 'refusing'].includes(r.regions.find((x) => x.id === 'us-va')!.state) ? true : undefined;
  }, 90_000);
  assert.equal(await answer(), US_TX);
  sampling = false;
  await sampler;
  // dig: TTLs shrink ahead of the event (bounded by the next step) while us-va still answers.
  const shrunk = digs.filter((d) => d.addrs === US_VA && d.ttl < 30);
  assert.ok(shrunk.length > 0, `a us-va answer with a TTL below 30 before the move: ${JSON.stringify(digs)}`);
  // The CLI through the ramp: up, then draining step by step with the next step counted down,
  // never "restoring" before the event (drained ahead of it, its way back is only its next change).
  const states = sampled.map((c) => c[2]);
  const ramp = sampled.filter((c) => c[2] === 'draining');
  assert.ok(ramp.length > 0, `gridsteer status showed us-va draining: ${sampled.map((c) => c.slice(0, 5).join(' ')).join('\n')}`);
  for (const c of ramp) {
    assert.match(c[1]!, /^(67|33)%$/, `a ramp step's share: ${c.join(' | ')}`);
    assert.match(c[4]!, /^(in \d+s|now) → (33|0)%$/, `the next step counted down: ${c.join(' | ')}`);
    assert.match(c[5]!, /grid event demo-shed-1 from demo\/utility by token:demo-feed: load-shed.*ramp step [12]\/3/, `why: ${c.join(' | ')}`);
  }
  assert.deepEqual([...new Set(states)].filter((x) => x !== undefined && !['up', 'draining', 'drained', 'refusing'].includes(x)), [], `states through the drain: ${states.join(', ')}`);
  // During: us-va takes none of its clients (refused new streams from S before the event), us-tx all of its own.
  const during = await statusRow('us-va');
  assert.deepEqual(during.cells.slice(1, 3), ['0%', during.cells[2] === 'refusing' ? 'refusing' : 'drained'], during.out);
  assert.match(during.cells[4]!, /^in (\d+m )?(\d+s )?→ 50%$/, `its way back is its next change: ${during.out}`);
  const tx = await statusRow('us-tx');
  assert.deepEqual(tx.cells.slice(1, 3), ['100%', 'up'], tx.out);
  const inForce = await eventRow('demo-shed-1');
  assert.ok(['announced', 'in-force'].includes(inForce.cells[3]!) && !inForce.history, inForce.out);
  await page.waitForSelector('#map g.region[data-region="us-va"]:is([data-state="drained"], [data-state="refusing"])');
  assert.doesNotMatch((await page.textContent('#detail-info')) ?? '', /\[object /, 'the detail shows no unrendered object');
  await browser.shot(page, 'during');

  // After: the event over, hold and restore, us-va answers again.
  await until('us-va back in dig', async () => ((await answer()) === US_VA ? true : undefined), 150_000);
  await page.waitForSelector('#map g.region[data-region="us-va"][data-state="up"]', { timeout: 60_000 });
  await browser.shot(page, 'after');
  // The CLI: us-va up again; the load shed is history (over, learned ahead: not a replay).
  const afterRow = await statusRow('us-va');
  assert.deepEqual(afterRow.cells.slice(1, 3), ['100%', 'up'], afterRow.out);
  const over = await eventRow('demo-shed-1');
  assert.deepEqual([over.cells[3], over.history], ['over', true], over.out);
  assert.match(over.cells[5]!, / ago \(/, over.out);

  // The next event on the schedule (10 demo minutes after the first, with --every 10m).
  await until('the second event announced', async () => (/grid event demo-shed-2: load-shed on us-tx/.test(out) ? true : undefined), 120_000);
  const events = await api<{ events: { key: string; source: string }[] }>('/v1/grid-events');
  assert.ok(events.events.some((e) => e.key === 'demo-shed-2' && e.source === 'demo/utility'), JSON.stringify(events.events));

  // Ctrl-C stops the server and the feed: the demo exits.
  demo.kill('SIGINT');
  const code = await Promise.race([exited, sleep(15_000).then(() => 'still running')]);
  assert.equal(code, 0, out.slice(-2000));
});
