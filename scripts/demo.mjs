// npm run demo: the example fleet with a synthetic feed, to watch power-aware steering happen.
//
// Serves gridsteer.yaml's fleet (the same zone, names, regions and ports as npm start) with a
// DEMO configuration written to var/demo/gridsteer.demo.yaml: the dashboard's header says
// "DEMO" (http.banner), and the drain policy has short demo steps (60 s session allowance,
// 60 s ramp, 30 s hold, 60 s restore instead of the shipped ~8 min lead, 2 min hold, 5 min
// restore). A synthetic feed then drives the real input path, POST /v1/signals with an ingest
// token (nothing reaches the planner any other way), every 5 s:
//   - power.budget per region from source demo/site-meter (import limit, draw, battery),
//   - load.metrics per region from demo/model-server (queue, KV-cache use),
//   - health.probe per endpoint from demo/prober,
//   - a grid.event load-shed from demo/utility announced 3 min after start for 5 min later
//     (first us-va, where clients without a client subnet are placed), then another every
//     15 min on the next region of DEMO_EVENT_REGIONS.
// Times come from the server's clock (GET /v1/status), so the feed follows a test clock too.
// Nothing of this runs unless asked: npm start never starts it.
//
//   node scripts/demo.mjs [--dns-listen HOST:PORT] [--http-listen HOST:PORT] [--first-event 3m]
//                         [--every 15m] [--workers N|auto] [--dir DIR (default var/demo: its config and state)]
// Stop with Ctrl-C (the server and the feed stop together).
/* global fetch, AbortSignal */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parse, stringify } from 'yaml';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    'dns-listen': { type: 'string', default: '127.0.0.1:5353' },
    'http-listen': { type: 'string', default: '127.0.0.1:8053' },
    'first-event': { type: 'string', default: '3m' },
    every: { type: 'string', default: '15m' },
    workers: { type: 'string', default: 'auto' },
    dir: { type: 'string', default: join(root, 'var', 'demo') },
  },
});

const MIN = 60_000;
function duration(s) {
  const m = /^(\d+)(s|m|h)$/.exec(s);
  if (!m) throw new Error(`demo: "${s}" is not a duration like 90s, 3m or 1h`);
  return Number(m[1]) * { s: 1000, m: MIN, h: 60 * MIN }[m[2]];
}
const firstEventMs = duration(opts['first-event']);
const everyMs = duration(opts.every);
/** Notice before each event, its length. */
const NOTICE_MS = 5 * MIN;
const EVENT_MS = 4 * MIN;
const FEED_EVERY_MS = 5000;
export const DEMO_EVENT_REGIONS = ['us-va', 'us-tx', 'eu-ie', 'ap-tyo'];

export const DEMO_BANNER = 'DEMO: synthetic feed (npm run demo) and a demo drain policy (60 s allowance and ramp, 30 s hold, 60 s restore)';
/** The demo drain policy: the shipped policy with shorter steps (gslb/model/policy.ts has the defaults). */
export const DEMO_DRAIN = { sessionAllowanceMs: 60_000, sessionAllowanceMaxMs: 60_000, rampMs: 60_000, holdMs: 30_000, restoreMs: 60_000, minDrainIntervalMs: 0 };

// ---- the demo configuration: gridsteer.yaml with the banner and the demo drain policy
const dir = opts.dir;
mkdirSync(dir, { recursive: true });
const cfg = parse(readFileSync(join(root, 'gridsteer.yaml'), 'utf8'));
cfg.http = { ...(cfg.http ?? {}), banner: DEMO_BANNER };
cfg.regionsDir = relative(dir, join(root, cfg.regionsDir ?? 'regions'));
cfg.policy = { ...(cfg.policy ?? {}), drain: { ...(cfg.policy?.drain ?? {}), ...DEMO_DRAIN } };
cfg.state = { ...(cfg.state ?? {}), file: 'demo-state.jsonl' };

const regions = readdirSync(join(root, 'regions'))
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => parse(readFileSync(join(root, 'regions', f), 'utf8')))
  .sort((a, b) => (a.id < b.id ? -1 : 1));
// The demo's utility is bound to every region: its load-shed orders are trusted physical losses
// (docs/adr/0014-physical-loss.md), within policy.grid.loss.maxTrustedLossShare.
cfg.policy.grid = { ...(cfg.policy.grid ?? {}), loss: { ...(cfg.policy.grid?.loss ?? {}), bindings: { 'demo/utility': regions.map((r) => r.id) } } };
const configFile = join(dir, 'gridsteer.demo.yaml');
writeFileSync(configFile, `# Written by scripts/demo.mjs (npm run demo) from gridsteer.yaml: a DEMO, not a configuration to deploy.\n${stringify(cfg)}`);


// ---- the server, with an ingest token for the feed and an operator token for people
const ingest = randomBytes(16).toString('hex');
const operator = randomBytes(16).toString('hex');
const args = [join(root, 'dist', 'gslb', 'cli', 'main.js'), 'serve', '--config', configFile, '--dns-listen', opts['dns-listen'], '--http-listen', opts['http-listen'], '--workers', opts.workers];
const server = spawn(process.execPath, args, {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, GRIDSTEER_TOKENS: `ingest:demo-feed[demo/]:${ingest},operator:demo:${operator}` },
});
let http = null;
let buf = '';
const ready = new Promise((resolve, reject) => {
  server.once('exit', (code) => reject(new Error(`demo: the server exited (${code}) before it was ready`)));
  server.stdout.setEncoding('utf8');
  server.stdout.on('data', (d) => {
    process.stdout.write(d);
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.includes('"ready"')) continue;
      try {
        const j = JSON.parse(line);
        if (j.msg === 'ready') resolve(j);
      } catch {
        // not JSON
      }
    }
  });
});

async function api(method, path, token, body) {
  const res = await fetch(`${http}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`demo feed: ${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** The feed's signals at server time `now` (t: seconds since the demo started, for the waves). */
function feed(now, t) {
  const signals = [];
  const ttl = 10 * MIN;
  regions.forEach((r, i) => {
    const wave = Math.sin(t / 120 + i);
    const limitW = 20e6;
    const drawW = Math.round(limitW * (0.62 + 0.12 * wave));
    signals.push({ region: r.id, kind: 'power.budget', source: 'demo/site-meter', key: 'meter-1', observedAt: now, expiresAt: now + ttl, value: { importLimitW: limitW, drawW, storageWh: 8e6, storageMaxW: 4e6 } });
    signals.push({
      region: r.id,
      kind: 'load.metrics',
      source: 'demo/model-server',
      key: 'vllm-0',
      observedAt: now,
      expiresAt: now + ttl,
      value: { queueDepth: Math.max(0, Math.round(2 + 2 * wave)), runningRequests: Math.round(40 + 20 * wave), kvCacheUse: Math.round((0.45 + 0.2 * wave) * 100) / 100 },
    });
    for (const e of r.endpoints ?? []) {
      signals.push({ region: r.id, kind: 'health.probe', source: 'demo/prober', key: e.address, observedAt: now, expiresAt: now + ttl, value: { up: true, latencyMs: 20 + i * 7 } });
    }
  });
  return signals;
}

let stopping = false;
let timer = null;
async function main() {
  const r = await ready;
  http = r.http.replace(/\/$/, '');
  const startServer = (await api('GET', '/v1/status', operator)).now;
  let announced = 0;
  console.log(`\n${DEMO_BANNER}`);
  console.log(`dashboard: ${http}/  token (operator): ${operator}`);
  console.log(`first grid event (load-shed on ${DEMO_EVENT_REGIONS[0]}) announced ${opts['first-event']} after start for ${NOTICE_MS / MIN} min later; then one every ${opts.every}`);
  console.log(`watch: dig @${opts['dns-listen'].replace(/:(\d+)$/, ' -p $1')} api.gslb.example.com A  ·  GRIDSTEER_TOKEN=${operator} npx gridsteer status --server ${http}\n`);
  const tick = async () => {
    if (stopping) return;
    try {
      const now = (await api('GET', '/v1/status', operator)).now;
      const since = now - startServer;
      const signals = feed(now, since / 1000);
      // Grid events on the schedule: the k-th is announced at firstEvent + k × every.
      while (since >= firstEventMs + announced * everyMs) {
        const region = DEMO_EVENT_REGIONS[announced % DEMO_EVENT_REGIONS.length];
        const start = startServer + firstEventMs + announced * everyMs + NOTICE_MS;
        const id = `demo-shed-${announced + 1}`;
        signals.push({ region, kind: 'grid.event', source: 'demo/utility', key: id, observedAt: now, expiresAt: start + EVENT_MS + 60 * MIN, value: { id, type: 'load-shed', start, end: start + EVENT_MS, program: 'DEMO: synthetic load shed' } });
        console.log(`demo feed: grid event ${id}: load-shed on ${region} from ${new Date(start).toISOString()} for ${EVENT_MS / MIN} min (announced now)`);
        announced++;
      }
      const res = await api('POST', '/v1/signals', ingest, { signals });
      const refused = res.results.filter((x) => !x.stored && x.reason !== 'stale').length;
      if (refused) console.log(`demo feed: ${refused} signal(s) not stored`);
    } catch (e) {
      console.error(e.message);
    }
    if (!stopping) timer = setTimeout(() => void tick(), FEED_EVERY_MS);
  };
  await tick();
}

function stop(signal) {
  if (stopping) return;
  stopping = true;
  clearTimeout(timer);
  server.kill(signal);
}
process.once('SIGINT', () => stop('SIGINT'));
process.once('SIGTERM', () => stop('SIGTERM'));
server.once('exit', (code) => {
  stopping = true;
  clearTimeout(timer);
  process.exitCode = code ?? 0;
});
main().catch((e) => {
  console.error(e.message);
  stop('SIGTERM');
  process.exitCode = 1;
});
