/**
 * Geo engine benchmark: compiles the GeoLite2 City database against the example fleet
 * (build time, peak memory, table size), then measures lookups and decisions per second on
 * one core, in process, for clients from 100k distinct /24s:
 *   - table lookup only (binary search),
 *   - decide() with every weight 1 (what the hot path caches per cell),
 *   - decide() with admission in play (w[home][home] = 0.9: a hash per query),
 *   - the whole responder (parse, locate, decide through the cache, build the reply).
 * Prints one human line per figure and a JSON line at the end. Bounded: fixed counts.
 *
 * usage: node dist/bench/decide.js [--config gridsteer.yaml] [--n 2000000]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { prepare, servingState, stateVersion } from '../gslb/serve/serving.js';
import { compileGeo } from '../gslb/geo/compile.js';
import { defaultCacheDir, unpackEmbedded } from '../gslb/geo/service.js';
import { decide, planFromConfig } from '../gslb/policy/decide.js';
import type { Cell, SubnetKey } from '../gslb/model/cell.js';
import { Responder } from '../gslb/dns/respond.js';
import { encodeMessage } from '../gslb/dns/message.js';
import { xorshift32 as rng } from '../test/helpers/policy.js';

const { values } = parseArgs({ options: { config: { type: 'string', default: 'gridsteer.yaml' }, n: { type: 'string', default: '2000000' } } });
const N = Number(values.n);

function time(label: string, n: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(n, 200_000); i++) fn(i); // warm-up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(i);
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const rate = n / s;
  console.log(`${label.padEnd(44)} ${(rate / 1e6).toFixed(2).padStart(7)} M/s  (${((s / n) * 1e9).toFixed(0)} ns each)`);
  return rate;
}

const p = prepare(values.config!);
const dbFile = await unpackEmbedded(defaultCacheDir());
const db = readFileSync(dbFile);
// maxRSS is the kernel's high-water mark of this process (KiB).
const rssBefore = process.memoryUsage().rss;
const t0 = Date.now();
const table = compileGeo(db, p.geometry);
const buildMs = Date.now() - t0;
const peak = process.resourceUsage().maxRSS * 1024;
const tableBytes = table.v4Start.byteLength + table.v4Rank.byteLength + table.v6Hi.byteLength + table.v6Lo.byteLength + table.v6Rank.byteLength;
console.log(`database: ${dbFile} (${table.meta.databaseType}, built ${table.meta.databaseBuilt})`);
console.log(
  `compile: ${(buildMs / 1000).toFixed(1)} s, ${table.meta.networks4} IPv4 + ${table.meta.networks6} IPv6 networks visited, ` +
    `${table.rankings.length} rankings, ${table.v4Start.length} + ${table.v6Hi.length} ranges (${(tableBytes / 1e6).toFixed(1)} MB), ` +
    `peak RSS ${(peak / 1e6).toFixed(0)} MB (${((peak - rssBefore) / 1e6).toFixed(0)} MB above the RSS before the compile, database buffer included)`,
);

const r = rng(20261130);
const SUBNETS = 100_000;
const addrs = new Uint32Array(SUBNETS);
for (let i = 0; i < SUBNETS; i++) addrs[i] = (r() & 0xffffff00) >>> 0;

let sink = 0;
const lookup = time('table lookup (/16 slot + binary search)', N, (i) => {
  sink += table.v4Rank[table.index4(addrs[i % SUBNETS]!)]!;
});

const name = p.zones.gslb.values().next().value!.decide;
const cells: Cell[] = table.rankings.map((e) => ({ ranking: e.regions, origin: e.origin }));
const key: SubnetKey = { family: 4, hi: 0, lo: 0, prefix: 24 };
const plan1 = p.state.plan;
const decide1 = time('decide(), every weight 1', N, (i) => {
  const a = addrs[i % SUBNETS]!;
  key.hi = a;
  sink += decide(plan1, cells[table.v4Rank[table.index4(a)]!]!, key, name, 'A', 0, { minTtl: 5 }).ttl;
});
const homes = Object.fromEntries(p.geometry.regions.map((g) => [g.id, { [g.id]: 0.9 }]));
const plan9 = planFromConfig('bench', homes);
const decide9 = time('decide(), w[home][home] = 0.9 (hash per query)', N, (i) => {
  const a = addrs[i % SUBNETS]!;
  key.hi = a;
  sink += decide(plan9, cells[table.v4Rank[table.index4(a)]!]!, key, name, 'A', 0, { minTtl: 5, ecsSource: 24 }).ttl;
});

const geo = { ...p.state.geo, file: 'bench', version: table.version };
const responder = new Responder(servingState({ ...p.state, geo, version: stateVersion(p.state.plan, geo) }, p.zones, table));
const queries = Array.from({ length: 4096 }, (_, i) =>
  encodeMessage({
    id: i,
    flags: 0,
    questions: [{ name: name.name + '.', type: 1, class: 1 }],
    answers: [],
    authority: [],
    additional: [],
    edns: { udpSize: 1232, extRcode: 0, version: 0, flags: 0, options: [{ code: 8, data: Buffer.from([0, 1, 24, 0, addrs[i]! >>> 24, (addrs[i]! >>> 16) & 255, (addrs[i]! >>> 8) & 255]) }] },
  }),
);
const whole = time('responder: ECS query → reply bytes', N, (i) => {
  sink += responder.answer(queries[i & 4095]!, false, '127.0.0.1', 0)!.length;
});

console.log(
  JSON.stringify({
    date: new Date().toISOString(),
    buildMs,
    peakRssDeltaMB: Math.round((peak - rssBefore) / 1e6),
    rankings: table.rankings.length,
    ranges4: table.v4Start.length,
    ranges6: table.v6Hi.length,
    tableMB: +(tableBytes / 1e6).toFixed(1),
    lookupsPerS: Math.round(lookup),
    decidePerS: Math.round(decide1),
    decideAdmissionPerS: Math.round(decide9),
    responderPerS: Math.round(whole),
    sink: sink % 7,
  }),
);
