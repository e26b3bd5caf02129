// How long `npm start` takes to answer DNS: the time from spawning `npm start` to the first
// answer to `dig @127.0.0.1 -p PORT api.gslb.example.com A` (the example fleet's steered name,
// gridsteer.yaml). Loopback only; every wait is bounded (a start that does not answer within
// 300 s fails the bench); each server is stopped (SIGTERM to its process group) before the next.
//
//   node bench/start.mjs [--runs N] [--dns-port P] [--http-port P]
//       in this tree: one start to warm up (it builds what changed), then N (default 3)
//       "second" starts, each timed
//   node bench/start.mjs --fresh [--runs N] …
//       in a fresh clone of this repository's HEAD in a temp dir: times `npm ci` (which
//       builds, via prepare), the first `npm start`, then N second starts; removes the clone
//
// The ports default to 5353 and 8053 (what `npm start` serves); pass others when those are
// taken (the bench checks first). The GeoIP table cache (~/.cache/gridsteer) is shared with
// other trees: DNS answers before that table is ready, so it does not change these figures.
import { spawn, spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { openSync, closeSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    'dns-port': { type: 'string', default: '5353' },
    'http-port': { type: 'string', default: '8053' },
    fresh: { type: 'boolean', default: false },
  },
});
const runs = Number(opts.runs);
const dnsPort = Number(opts['dns-port']);
const httpPort = Number(opts['http-port']);
const NAME = 'api.gslb.example.com';
const START_LIMIT_MS = 300_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const logs = mkdtempSync(join(tmpdir(), 'gridsteer-bench-start-logs-'));

/** Is 127.0.0.1:port free for UDP (DNS) and TCP (DNS and HTTP)? */
async function free(port, udp) {
  const tcp = await new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
  if (!tcp || !udp) return tcp;
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    s.once('error', () => resolve(false));
    s.bind(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** One `dig` (1 s, one try): does it return an address for NAME? */
function answers() {
  const r = spawnSync('dig', [`@127.0.0.1`, '-p', String(dnsPort), NAME, 'A', '+short', '+time=1', '+tries=1'], { encoding: 'utf8', timeout: 5_000 });
  return r.status === 0 && /^\d+\.\d+\.\d+\.\d+$/m.test(r.stdout);
}

/** `npm start` in dir until the first DNS answer; returns the seconds it took and stops it. */
async function timedStart(dir, label) {
  for (const [port, udp] of [[dnsPort, true], [httpPort, false]]) {
    if (!(await free(port, udp))) throw new Error(`127.0.0.1:${port} is taken: pass --dns-port/--http-port`);
  }
  const log = join(logs, `${label.replace(/\W+/g, '-')}.log`);
  const fd = openSync(log, 'w');
  const t0 = performance.now();
  const child = spawn('npm', ['start', '--', '--dns-listen', `127.0.0.1:${dnsPort}`, '--http-listen', `127.0.0.1:${httpPort}`], {
    cwd: dir,
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  let exited = null;
  child.on('exit', (code, signal) => (exited = { code, signal }));
  try {
    while (true) {
      if (exited) throw new Error(`npm start exited (${exited.code ?? exited.signal}) before answering: see ${log}`);
      if (performance.now() - t0 > START_LIMIT_MS) throw new Error(`no DNS answer within ${START_LIMIT_MS / 1000} s: see ${log}`);
      if (answers()) break;
      await sleep(100);
    }
    const s = (performance.now() - t0) / 1000;
    console.log(`${label}: first DNS answer after ${s.toFixed(1)} s`);
    return s;
  } finally {
    if (!exited) {
      process.kill(-child.pid, 'SIGTERM');
      for (let i = 0; i < 100 && !exited; i++) await sleep(100);
      if (!exited) process.kill(-child.pid, 'SIGKILL');
    }
    // The workers go with the primary; give the ports a moment to be released.
    for (let i = 0; i < 50 && !((await free(dnsPort, true)) && (await free(httpPort, false))); i++) await sleep(100);
  }
}

const here = join(dirname(fileURLToPath(import.meta.url)), '..');
let dir = here;
if (opts.fresh) {
  dir = mkdtempSync(join(tmpdir(), 'gridsteer-bench-start-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const c = spawnSync('git', ['clone', '-q', here, dir], { stdio: 'inherit', timeout: 120_000 });
  if (c.status !== 0) throw new Error('git clone failed');
  const t0 = performance.now();
  const ci = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'], timeout: 900_000 });
  if (ci.status !== 0) throw new Error('npm ci failed');
  console.log(`npm ci (installs and builds): ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  await timedStart(dir, 'first npm start');
} else {
  await timedStart(dir, 'warm-up npm start');
}
const times = [];
for (let i = 1; i <= runs; i++) times.push(await timedStart(dir, `second npm start, run ${i}`));
times.sort((a, b) => a - b);
console.log(`second npm start → first DNS answer: median ${times[Math.floor(times.length / 2)].toFixed(1)} s (min ${times[0].toFixed(1)}, max ${times.at(-1).toFixed(1)}, ${runs} runs)`);
