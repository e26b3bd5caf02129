/**
 * The cost of response rate limiting (dns.rateLimit, docs/dns.md) for traffic it does not
 * limit: the whole responder (parse, locate, decide through the cache, the rate-limit check,
 * build the reply) in process on one core, with `mode: off` and `mode: on` (the defaults
 * otherwise), side by side in alternating rounds of one process. Two traffic shapes, each
 * under every limit (time is simulated: each query advances the clock so that no prefix ever
 * goes over 20 answers/s):
 *   - `1000 resolvers`: the source address changes every query (1000 /24s round-robin),
 *     so the source parse cache misses every time and every query probes the table;
 *   - `one resolver`: the same source address every query (the parse is cached).
 * Prints one human line per round and a summary per shape (median ns per query, and on ÷
 * off queries per second), then a JSON line. Bounded: fixed counts.
 *
 * usage: taskset -c 0 node dist/bench/ratelimit.js [--config gridsteer.yaml] [--n 1000000] [--rounds 5]
 */
import { parseArgs } from 'node:util';
import { prepare, servingState } from '../gslb/serve/serving.js';
import { Responder } from '../gslb/dns/respond.js';
import { encodeMessage } from '../gslb/dns/message.js';

const { values } = parseArgs({
  options: { config: { type: 'string', default: 'gridsteer.yaml' }, n: { type: 'string', default: '1000000' }, rounds: { type: 'string', default: '5' } },
});
const N = Number(values.n);
const ROUNDS = Number(values.rounds);
if (!(N >= 1000 && N <= 50_000_000) || !(ROUNDS >= 1 && ROUNDS <= 20)) throw new Error('--n 1000..50000000, --rounds 1..20');

const p = prepare(values.config!);
const name = p.zones.gslb.values().next().value!.decide.name;
const query = encodeMessage({
  id: 1,
  flags: 0,
  questions: [{ name: name + '.', type: 1, class: 1 }],
  answers: [],
  authority: [],
  additional: [],
  edns: { udpSize: 1232, extRcode: 0, version: 0, flags: 0, options: [] },
});

function responder(mode: 'on' | 'off'): Responder {
  const rl = { ...p.state.opts.rateLimit!, mode };
  return new Responder(servingState({ ...p.state, opts: { ...p.state.opts, rateLimit: rl } }, p.zones, null));
}

// Source address strings as a UDP socket hands them over (one string object per datagram
// in reality; here one per prefix, compared by content like a fresh one).
const RESOLVERS = 1000;
const sources = Array.from({ length: RESOLVERS }, (_, i) => `${11 + (i >> 8)}.${(i * 7) & 255}.${i & 255}.53`);

interface Shape {
  label: string;
  client(i: number): string;
  /** Simulated ms per query: each prefix stays under 20 answers/s. */
  msPerQuery: number;
}
const shapes: Shape[] = [
  { label: '1000 resolvers', client: (i) => sources[i % RESOLVERS]!, msPerQuery: 1 },
  { label: 'one resolver', client: () => sources[0]!, msPerQuery: 100 },
];

let sink = 0;
const T0 = 1_800_000_000_000;
function round(r: Responder, s: Shape): number {
  let now = T0;
  for (let i = 0; i < Math.min(N, 100_000); i++) sink += r.answer(query, false, s.client(i), (now += s.msPerQuery))!.length;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) sink += r.answer(query, false, s.client(i), (now += s.msPerQuery))!.length;
  return Number(process.hrtime.bigint() - t0) / N;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const out: Record<string, { offNs: number; onNs: number; onOverOff: number; limited: number }> = {};
for (const s of shapes) {
  const off = responder('off');
  const on = responder('on');
  const offNs: number[] = [];
  const onNs: number[] = [];
  for (let k = 0; k < ROUNDS; k++) {
    // Alternate which goes first, so drift of the host's speed hits both alike.
    if (k % 2 === 0) {
      offNs.push(round(off, s));
      onNs.push(round(on, s));
    } else {
      onNs.push(round(on, s));
      offNs.push(round(off, s));
    }
    console.log(`${s.label.padEnd(16)} round ${k + 1}: off ${offNs[k]!.toFixed(0)} ns, on ${onNs[k]!.toFixed(0)} ns per query`);
  }
  const limited = on.stats.snapshot().rateLimited.reduce((a, x) => a + x.value, 0);
  const mo = median(offNs);
  const mn = median(onNs);
  out[s.label] = { offNs: Math.round(mo), onNs: Math.round(mn), onOverOff: +(mo / mn).toFixed(3), limited };
  console.log(`${s.label.padEnd(16)} median: off ${mo.toFixed(0)} ns, on ${mn.toFixed(0)} ns; queries/s on ÷ off = ${(mo / mn).toFixed(3)}; limited: ${limited}`);
}
// DNS Cookies: the same query with a COOKIE option (client cookie and a valid server cookie:
// one SipHash-2-4 to check it), cookies off (the option ignored) against on; rate limiting
// off in both (a valid cookie is exempt from it anyway).
function cookieResponder(mode: 'on' | 'off'): Responder {
  const opts = { ...p.state.opts, rateLimit: { ...p.state.opts.rateLimit!, mode: 'off' as const }, cookies: { ...p.state.opts.cookies!, mode } };
  return new Responder(servingState({ ...p.state, opts }, p.zones, null));
}
const withClientCookie = (cookie: Buffer) =>
  encodeMessage({
    id: 1,
    flags: 0,
    questions: [{ name: name + '.', type: 1, class: 1 }],
    answers: [],
    authority: [],
    additional: [],
    edns: { udpSize: 1232, extRcode: 0, version: 0, flags: 0, options: [{ code: 10, data: cookie }] },
  });
const cOn = cookieResponder('on');
const cOff = cookieResponder('off');
const learn = cOn.answer(withClientCookie(Buffer.from('0102030405060708', 'hex')), false, sources[0]!, Date.now())!;
const opt = learn.subarray(learn.length - 28);
const cookieQuery = withClientCookie(Buffer.from(opt.subarray(4)));
const cookieRound = (r: Responder): number => {
  const now = Date.now();
  for (let i = 0; i < Math.min(N, 100_000); i++) sink += r.answer(cookieQuery, false, sources[0]!, now)!.length;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) sink += r.answer(cookieQuery, false, sources[0]!, now)!.length;
  return Number(process.hrtime.bigint() - t0) / N;
};
const cOffNs: number[] = [];
const cOnNs: number[] = [];
for (let k = 0; k < ROUNDS; k++) {
  if (k % 2 === 0) {
    cOffNs.push(cookieRound(cOff));
    cOnNs.push(cookieRound(cOn));
  } else {
    cOnNs.push(cookieRound(cOn));
    cOffNs.push(cookieRound(cOff));
  }
}
const valid = cOn.stats.snapshot().cookies.valid ?? 0;
const co = median(cOffNs);
const cn = median(cOnNs);
console.log(`${'valid cookie'.padEnd(16)} median: cookies off ${co.toFixed(0)} ns, on ${cn.toFixed(0)} ns; queries/s on ÷ off = ${(co / cn).toFixed(3)}; valid: ${valid}`);
console.log(
  JSON.stringify({
    date: new Date().toISOString(),
    n: N,
    rounds: ROUNDS,
    node: process.version,
    shapes: out,
    cookies: { offNs: Math.round(co), onNs: Math.round(cn), onOverOff: +(co / cn).toFixed(3), valid },
    sink: sink % 7,
  }),
);
