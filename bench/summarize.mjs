#!/usr/bin/env node
// Summarises one bench/dns-qps.sh run directory: prints a table, writes
// summary.json and summary.md (a Markdown table for docs/performance.md).
// usage: node bench/summarize.mjs bench/build/results/latest
//
// Saturation: every run of a server (rounds and redone runs alike) is a sample;
// other load on the machine, visible or not (the VM's host), only ever lowers
// throughput, so the best sample is the estimate of capacity and the median
// shows the spread. Latency: the quietest of the fixed-rate attempts.
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: summarize.mjs RUN_DIR');
  process.exit(2);
}
const settings = JSON.parse(fs.readFileSync(path.join(dir, 'settings.json'), 'utf8'));
const st = settings;
const servers = st.servers.split(/\s+/).filter(Boolean);
const noisyPct = st.noisy_pct ?? 10;
const TITLE = {
  gdnsd: `gdnsd ${st.gdnsd} + geoip plugin (auto_dc_coords)`,
  pdns: `PowerDNS ${st.pdns} + GeoIP backend`,
  'node-null': `Node ${st.node} dgram, no logic (platform ceiling)`,
  gridsteer: `GridSteer${st.gridsteer_commit ? ` ${st.gridsteer_commit}` : ''} (--workers 0)`,
  'gridsteer-rrl': `GridSteer${st.gridsteer_commit ? ` ${st.gridsteer_commit}` : ''} (--workers 0), dns.rateLimit.mode on`,
  reflector: 'C reflector (echo, no answer: cost floor of a UDP server)',
};

function readRun(file) {
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.startsWith('{'));
  const run = JSON.parse(lines[0]);
  run.cpu ??= {};
  run.pre = lines[1] ? JSON.parse(lines[1]) : {};
  run.file = path.basename(file);
  return run;
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const sumRcodes = (runs) => {
  const t = {};
  for (const r of runs) for (const [k, v] of Object.entries(r.rcodes)) t[k] = (t[k] ?? 0) + v;
  return t;
};
const fmtRcodes = (t) =>
  Object.entries(t)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none';
const k = (x) => (x >= 1000 ? `${(x / 1000).toFixed(1)}k` : x.toFixed(0));
const other = (r) => r.cpu.other_processes_pct ?? 0;
// tick-based CPU accounting is statistical: small negative values mean none
const pct = (x) => (x === undefined ? '?' : Math.max(0, x).toFixed(0));
const files = fs.readdirSync(dir).sort();

const result = { settings, servers: {} };
for (const s of servers) {
  const maxRuns = files.filter((f) => f.startsWith(`${s}.max`) && f.endsWith('.json')).map((f) => readRun(path.join(dir, f)));
  if (!maxRuns.length) continue;
  const rateRuns = files.filter((f) => f.startsWith(`${s}.rate`) && f.endsWith('.json')).map((f) => readRun(path.join(dir, f)));
  const rate = rateRuns.length ? rateRuns.reduce((a, b) => (other(b) < other(a) ? b : a)) : null;
  const qps = maxRuns.map((r) => r.qps);
  const best = maxRuns.reduce((a, b) => (b.qps > a.qps ? b : a));
  const sent = maxRuns.reduce((a, r) => a + r.sent, 0);
  const lost = maxRuns.reduce((a, r) => a + r.lost, 0);
  const byRound = {};
  for (const r of maxRuns) {
    const m = /^[^.]+\.max(\d+)\.json$/.exec(r.file.replace(`${s}.`, 'x.'));
    if (m) byRound[m[1]] = r.qps;
  }
  result.servers[s] = {
    title: TITLE[s] ?? s,
    max: {
      qps_by_round: byRound,
      runs: maxRuns.length,
      disturbed_runs: maxRuns.filter((r) => other(r) > noisyPct).length,
      qps_runs: maxRuns.map((r) => Math.round(r.qps)),
      qps_best: Math.round(best.qps),
      qps_median: Math.round(median(qps)),
      best_run: best.file,
      sent,
      lost,
      loss_pct: sent ? (100 * lost) / sent : 0,
      rcodes: sumRcodes(maxRuns),
      noanswer: maxRuns.reduce((a, r) => a + r.noanswer, 0),
      unexpected: maxRuns.reduce((a, r) => a + r.unexpected, 0),
      latency_us_best_run: best.latency_us,
      cpu_best_run: best.cpu,
    },
    rate: rate && {
      file: rate.file,
      attempts: rateRuns.length,
      target: rate.rate_target,
      achieved: rate.qps,
      sent: rate.sent,
      lost: rate.lost,
      loss_pct: rate.loss_pct,
      rcodes: rate.rcodes,
      schedule_slips: rate.schedule_slips,
      latency_us: rate.latency_us,
      cpu: rate.cpu,
    },
  };
}

const gs = result.servers.gridsteer;
for (const [s, r] of Object.entries(result.servers)) {
  if (!gs || s === 'gridsteer' || s === 'reflector') continue;
  // per round: GridSteer's run against this server's run of the same round
  // (minutes apart at most), which cancels slow drifts of the machine's speed
  const perRound = Object.keys(r.max.qps_by_round)
    .filter((n) => gs.max.qps_by_round[n])
    .map((n) => gs.max.qps_by_round[n] / r.max.qps_by_round[n]);
  r.gridsteer_ratio = {
    qps_best: gs.max.qps_best / r.max.qps_best,
    qps_median: gs.max.qps_median / r.max.qps_median,
    qps_per_round: perRound,
    qps_per_round_median: perRound.length ? median(perRound) : null,
    p50_at_rate: gs.rate && r.rate ? gs.rate.latency_us.p50 / r.rate.latency_us.p50 : null,
    p99_at_rate: gs.rate && r.rate ? gs.rate.latency_us.p99 / r.rate.latency_us.p99 : null,
  };
}
fs.writeFileSync(path.join(dir, 'summary.json'), JSON.stringify(result, null, 2) + '\n');

// ---- text table
const out = [];
out.push(
  `GridSteer DNS benchmark ${st.date}: ${st.ncpu} x ${st.cpu_model}, kernel ${st.kernel}, Node ${st.node}; ` +
    `servers on cpu${st.server_cpu}, loadgen on cpu${st.loadgen_cpu}; ECS /24 from ${st.subnets} subnets; ` +
    `saturation: window ${st.window}, ${st.rounds} round(s) of ${st.duration_s}s (+${st.warmup_s}s warm-up); ` +
    `latency: ${st.rate} q/s for ${st.rate_duration_s}s`,
);
out.push('');
const hdr = ['server', 'q/s best', 'q/s median', 'runs (q/s)', 'srv idle', 'lost/sent (saturation)', 'rcodes (saturation)',
  `p50 @${k(st.rate)}`, `p99 @${k(st.rate)}`, `p99.9 @${k(st.rate)}`, 'lost @rate', 'GridSteer / this (q/s)'];
const rows = [];
for (const s of servers) {
  const r = result.servers[s];
  if (!r) continue;
  rows.push([
    s,
    r.max.qps_best.toLocaleString('en-US'),
    r.max.qps_median.toLocaleString('en-US'),
    r.max.qps_runs.map(k).join(' '),
    `${r.max.cpu_best_run?.server_core?.idle_pct ?? '?'}%`,
    `${r.max.lost}/${r.max.sent} (${r.max.loss_pct.toFixed(3)}%)`,
    fmtRcodes(r.max.rcodes) + (r.max.noanswer ? `; ${r.max.noanswer} without answer` : ''),
    r.rate ? `${r.rate.latency_us.p50.toFixed(0)} us` : '-',
    r.rate ? `${r.rate.latency_us.p99.toFixed(0)} us` : '-',
    r.rate ? `${r.rate.latency_us.p999.toFixed(0)} us` : '-',
    r.rate ? `${r.rate.lost}/${r.rate.sent}` : '-',
    r.gridsteer_ratio
      ? `${r.gridsteer_ratio.qps_best.toFixed(2)} (rounds ${r.gridsteer_ratio.qps_per_round_median?.toFixed(2) ?? '-'})`
      : s === 'gridsteer' ? '1' : s === 'reflector' ? '(floor)' : 'n/a',
  ]);
}
if (!gs) rows.push(['gridsteer', 'not yet measured', '', '', '', '', st.gridsteer_note || '', '', '', '', '', '']);
const widths = hdr.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join('  ').trimEnd();
out.push(line(hdr));
out.push(widths.map((w) => '-'.repeat(w)).join('  '));
for (const r of rows) out.push(line(r));
out.push('');
for (const s of servers) {
  const r = result.servers[s];
  if (!r) continue;
  const c = r.max.cpu_best_run ?? {};
  out.push(
    `${s}: best run: server ${c.server_pct ?? '?'}% of a CPU, its core ${c.server_core?.idle_pct ?? '?'}% idle ` +
      `(softirq ${c.server_core?.softirq_pct ?? '?'}%), other processes ${pct(c.other_processes_pct)}% of a CPU; ` +
      `${r.max.disturbed_runs} of ${r.max.runs} saturation runs disturbed (other processes > ${noisyPct}% of a CPU)` +
      (r.rate
        ? `; at ${k(st.rate)} q/s: ${r.rate.achieved.toFixed(0)} q/s answered, rcodes ${fmtRcodes(r.rate.rcodes)}, ` +
          `other processes ${pct(r.rate.cpu.other_processes_pct)}% of a CPU (quietest of ${r.rate.attempts})`
        : ''),
  );
}
out.push(
  'q/s best = the best of all saturation runs (interference only lowers throughput); median shows the spread. ' +
    'srv idle = idle share of the server core in the best run: ~0 means the server, not the load generator, was the bottleneck. ' +
    'GridSteer / this = best / best (rounds: median over rounds of the two runs of the same round). ' +
    'Latency = the quietest fixed-rate attempt.',
);
console.log(out.join('\n'));

// ---- markdown
const md = [];
md.push(`| Server | q/s at saturation (best) | median | runs | server core idle | lost at saturation | rcodes | p50 @ ${k(st.rate)} q/s | p99 @ ${k(st.rate)} q/s | GridSteer ÷ this, q/s: best ÷ best (median per round) |`);
md.push('|---|---:|---:|---:|---:|---:|---|---:|---:|---:|');
for (const s of servers) {
  const r = result.servers[s];
  if (!r) continue;
  md.push(
    `| ${r.title} | ${r.max.qps_best.toLocaleString('en-US')} | ${r.max.qps_median.toLocaleString('en-US')} | ${r.max.runs} | ` +
      `${r.max.cpu_best_run?.server_core?.idle_pct ?? '?'} % | ` +
      `${r.max.loss_pct.toFixed(3)} % | ${fmtRcodes(r.max.rcodes)}${r.max.noanswer ? ' (no answer record)' : ''} | ` +
      `${r.rate ? r.rate.latency_us.p50.toFixed(0) + ' µs' : '–'} | ${r.rate ? r.rate.latency_us.p99.toFixed(0) + ' µs' : '–'} | ` +
      `${r.gridsteer_ratio ? `${r.gridsteer_ratio.qps_best.toFixed(2)} (${r.gridsteer_ratio.qps_per_round_median?.toFixed(2) ?? '–'})` : s === 'gridsteer' ? '1.00' : '–'} |`,
  );
}
if (!gs) md.push(`| GridSteer (--workers 0) | **not yet measured** | | | | | ${st.gridsteer_note || ''} | | | |`);
fs.writeFileSync(path.join(dir, 'summary.md'), md.join('\n') + '\n');
