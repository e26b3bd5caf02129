/**
 * Properties of hashed admission (docs/design.md "Choosing a region", ADR 0003) over 100k random
 * public /24 subnet keys, checked through decide directly and through the responder (ECS
 * queries, a synthetic geo table whose cells have different homes):
 *   - the same subnet gets the same answer while the plan is unchanged;
 *   - lowering w[h][r] from 1 to w moves (1 − w) of the clients of home h that r admitted,
 *     exactly those whose draw for r is ≥ w, and no client of any other home;
 *   - weights give canary splits.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, type DecideName } from './decide.js';
import type { Cell, SubnetKey } from '../model/cell.js';
import { admissionDraw } from './admission.js';
import { planWith, prng, randomPublic24, randomPublic56, REGION_ADDR, regionOfAddress, snapshotABC, syntheticTable } from '../../test/helpers/policy.js';
import { Responder } from '../dns/respond.js';
import { compileZones } from '../dns/zone.js';
import { decodeMessage, ipString } from '../dns/message.js';
import { QTYPE } from '../dns/constants.js';
import { EDNS, OPTS, query } from '../dns/testing.js';
import type { GeoTable } from '../geo/table.js';
import type { Plan } from '../model/types.js';

const N = 100_000;
const REGIONS = ['a', 'b', 'c'];
/** Ranking 0 is the default; 1..3 give homes a, b and c with different spill orders. */
const RANKINGS = [
  ['a', 'b', 'c'],
  ['a', 'b', 'c'],
  ['b', 'c', 'a'],
  ['c', 'a', 'b'],
];
/** Each /8 (and inside 100/8 each /16, to have narrower cells) belongs to home a, b or c. */
function makeTable(): GeoTable {
  const v4: [string, number][] = [];
  for (let o = 0; o < 256; o++) {
    if (o === 100) for (let p = 0; p < 256; p++) v4.push([`100.${p}.0.0`, 1 + ((o + p) % 3)]);
    else v4.push([`${o}.0.0.0`, 1 + (o % 3)]);
  }
  // IPv6: 2000::/3 split into /12s, homes by rotation.
  const v6: [number, number, number][] = [[0, 0, 0]];
  for (let i = 0; i < 512; i++) v6.push([(0x20000000 + i * 0x00100000) >>> 0, 0, 1 + (i % 3)]);
  v6.push([0x40000000, 0, 0]);
  // Drop neighbours with the same ranking (a compiled table never has them).
  const dedup4 = v4.filter((e, i) => i === 0 || v4[i - 1]![1] !== e[1]);
  const dedup6 = v6.filter((e, i) => i === 0 || v6[i - 1]![2] !== e[2]);
  return syntheticTable(RANKINGS, dedup4, dedup6);
}
const TABLE = makeTable();
const NOW = 1_800_000_000_000;
const NAME: DecideName = {
  name: 'api.gslb.example.com.',
  ttl: 30,
  regions: new Map(REGIONS.map((id) => [id, { v4: [REGION_ADDR[id]!.v4], v6: [REGION_ADDR[id]!.v6] }])),
  whenAllDown: 'nearest',
};

interface Population {
  keys: SubnetKey[];
  cells: Cell[];
  homes: string[];
}

function population(seed: number, n = N, family: 4 | 6 = 4): Population {
  const next = prng(seed);
  const seen = new Set<string>();
  const keys: SubnetKey[] = [];
  while (keys.length < n) {
    const key: SubnetKey =
      family === 4
        ? { family: 4, hi: randomPublic24(next), lo: 0, prefix: 24 }
        : (() => {
            const a = randomPublic56(next);
            return { family: 6, hi: a.hi, lo: a.lo, prefix: 56 } as SubnetKey;
          })();
    const id = `${key.hi}:${key.lo}`;
    if (seen.has(id)) continue;
    seen.add(id);
    keys.push(key);
  }
  const cells = keys.map((k) => ({ ranking: TABLE.rankings[TABLE.rankOf({ family: k.family, hi: k.hi, lo: k.lo })]!.regions, origin: 'synthetic' }));
  return { keys, cells, homes: cells.map((c) => c.ranking[0]!) };
}

/** Answers through decide. */
function viaDecide(pop: Population, plan: Plan, now = NOW): string[] {
  return pop.keys.map((k, i) => decide(plan, pop.cells[i]!, k, NAME, k.family === 4 ? 'A' : 'AAAA', now, { minTtl: 5 }).region!);
}

/** Answers through the responder: one ECS query per key (source /24 or /56, or other forms). */
function viaResponder(pop: Population, plan: Plan, form: 'ecs' | 'ecs-host' | 'source' = 'ecs', now = NOW): { regions: string[]; scopes: number[] } {
  const r = new Responder({ zones: compileZones(snapshotABC()), plan, geo: TABLE, opts: OPTS, version: 't' });
  const regions: string[] = [];
  const scopes: number[] = [];
  const v6 = pop.keys[0]!.family === 6;
  // ECS address bytes are the last bytes of the query (OPT is the last record, ECS its only option).
  const ecsLen = form === 'ecs' ? (v6 ? 7 : 3) : v6 ? 16 : 4;
  const ecsData = Buffer.alloc(4 + ecsLen);
  ecsData.writeUInt16BE(v6 ? 2 : 1, 0);
  ecsData[2] = form === 'ecs' ? (v6 ? 56 : 24) : v6 ? 128 : 32;
  const q = query('api.gslb.example.com.', v6 ? QTYPE.AAAA : QTYPE.A, form === 'source' ? {} : { edns: { ...EDNS, options: [{ code: 8, data: ecsData }] } });
  const at = q.length - ecsLen;
  const qEnd = 12 + 'api.gslb.example.com.'.length + 1 + 4;
  for (let i = 0; i < pop.keys.length; i++) {
    const k = pop.keys[i]!;
    const hostByte = (i * 37 + 1) & 0xff;
    let client = '';
    if (form === 'source') {
      client = v6
        ? `${(k.hi >>> 16).toString(16)}:${(k.hi & 0xffff).toString(16)}:${(k.lo >>> 16).toString(16)}:${((k.lo & 0xffff) | hostByte).toString(16)}::1`
        : `${k.hi >>> 24}.${(k.hi >>> 16) & 255}.${(k.hi >>> 8) & 255}.${hostByte}`;
    } else {
      const full = Buffer.alloc(8);
      full.writeUInt32BE(k.hi, 0);
      full.writeUInt32BE(k.lo, 4);
      full.copy(q, at, 0, Math.min(ecsLen, v6 ? 8 : 4));
      if (form === 'ecs-host') {
        if (v6) q[at + 7] = hostByte; // bits 56..63: inside the /64, outside the /56 key
        else q[at + 3] = hostByte;
      }
    }
    const reply = r.answer(q, false, client || '192.0.2.1', now)!;
    // Fast read of the one A/AAAA record (right after the question, its owner a pointer) and
    // of the ECS scope (the option ends the reply); checked against the full decoder now and then.
    assert.equal(reply.readUInt16BE(6), 1, 'one address per region');
    assert.equal(reply[qEnd]! & 0xc0, 0xc0);
    const rdlen = reply.readUInt16BE(qEnd + 10);
    const addr = ipString(reply.subarray(qEnd + 12, qEnd + 12 + rdlen));
    const region = regionOfAddress(addr) ?? `?${addr}`;
    const scope = form === 'source' ? -1 : reply[reply.length - ecsLen - 1]!;
    if (i % 997 === 0) {
      const m = decodeMessage(reply);
      assert.equal(m.answers.length, 1);
      assert.equal(ipString((m.answers[0]!.data as { bytes: Buffer }).bytes), addr);
      assert.equal(m.edns?.options[0]?.data[3] ?? -1, scope);
    }
    regions.push(region);
    scopes.push(scope);
  }
  return { regions, scopes };
}

/** Counts by home → region. */
function split(pop: Population, answers: string[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  answers.forEach((r, i) => {
    const h = pop.homes[i]!;
    out[h] ??= {};
    out[h][r] = (out[h][r] ?? 0) + 1;
  });
  return out;
}

const POP = population(0x5eed0001);

test('the population: 100k distinct public /24 keys spread over homes a, b and c', () => {
  assert.equal(POP.keys.length, N);
  for (const h of REGIONS) {
    const n = POP.homes.filter((x) => x === h).length;
    assert.ok(n > N / 5, `home ${h}: ${n} keys`);
  }
});

/**
 * Lowering w[h][r] from 1 to w, from a base plan. Asserts, for answers `before` and `after`:
 * every moved key has home h and was at r; the moved keys are exactly those of home h at r
 * with draw(key, r) ≥ w; their share of home h's clients at r is (1 − w) ± 2 %.
 */
function checkLowering(pop: Population, before: string[], after: string[], h: string, r: string, w: number, via: string): void {
  let atR = 0;
  let moved = 0;
  for (let i = 0; i < pop.keys.length; i++) {
    const changed = before[i] !== after[i];
    const mine = pop.homes[i] === h && before[i] === r;
    if (!mine) {
      assert.equal(changed, false, `${via}: key ${i} (home ${pop.homes[i]}, at ${before[i]}) moved to ${after[i]} when w[${h}][${r}] was lowered to ${w}`);
      continue;
    }
    atR++;
    const turnedAway = admissionDraw(pop.keys[i]!, r) >= w;
    assert.equal(changed, turnedAway, `${via}: key ${i} of home ${h} at ${r}: moved=${changed}, draw ≥ w=${turnedAway}`);
    if (changed) {
      moved++;
      assert.notEqual(after[i], r);
    }
  }
  assert.ok(atR > 10_000, `${via}: ${atR} clients of home ${h} at ${r}`);
  const share = moved / atR;
  assert.ok(Math.abs(share - (1 - w)) <= 0.02, `${via}: w[${h}][${r}] 1 → ${w} moved ${(share * 100).toFixed(2)} % of home ${h}'s clients at ${r}, expected ${((1 - w) * 100).toFixed(0)} % ± 2 %`);
}

for (const [via, run] of [
  ['decide', (p: Plan) => viaDecide(POP, p)],
  ['responder', (p: Plan) => viaResponder(POP, p).regions],
] as const) {
  test(`${via}: same subnet, same answer while the plan is unchanged`, () => {
    const plan = planWith({ a: { a: 0.5, b: 0.7 }, b: { b: 0.6 }, c: { c: 0.8, a: 0.5 } });
    const first = run(plan);
    assert.deepEqual(run(plan), first, 'asked again');
    if (via === 'decide') {
      assert.deepEqual(viaDecide(POP, plan, NOW + 3_600_000), first, 'an hour later, same step');
      assert.deepEqual(viaDecide(POP, structuredClone(plan)), first, 'a copy of the plan');
    } else {
      const r = viaResponder(POP, plan);
      assert.deepEqual(r.regions, first);
      assert.deepEqual(viaResponder(POP, plan, 'ecs', NOW + 3_600_000).regions, first, 'an hour later, same step');
      assert.deepEqual(viaResponder(POP, plan, 'ecs-host').regions, first, 'ECS /32 with another host in the /24');
      assert.deepEqual(viaResponder(POP, plan, 'source').regions, first, 'no ECS: the packet source in the /24');
      // Every home's own weight is below 1: admission is in play for every answer.
      for (const s of r.scopes) assert.equal(s, 24, 'admission in play: scope /24');
    }
    // Not trivial: the plan splits every home.
    const s = split(POP, first);
    for (const h of REGIONS) assert.ok(Object.keys(s[h]!).length >= 2, `home ${h} split: ${JSON.stringify(s[h])}`);
  });

  test(`${via}: all weights 1 → everyone at home; lowering w[h][h] moves (1 − w) of home h only`, () => {
    const base = run(planWith({}));
    base.forEach((r, i) => assert.equal(r, POP.homes[i]));
    for (const w of [0.5, 0.9, 0.1]) {
      for (const h of via === 'decide' ? REGIONS : ['a']) {
        const after = run(planWith({ [h]: { [h]: w } }));
        checkLowering(POP, base, after, h, h, w, `${via} w[${h}][${h}]=${w}`);
      }
    }
  });

  test(`${via}: lowering w[h][r] for a spill target r moves (1 − w) of home h's clients r admitted, no one else`, () => {
    // Home a keeps half of its clients; the other half spills to b (w[a][b] = 1). Home b's
    // own clients are at b too; lowering w[a][b] must not touch them.
    const basePlan = { a: { a: 0.5 } };
    const before = run(planWith(basePlan));
    const s = split(POP, before);
    assert.ok(s.a!.a! > 0 && s.a!.b! > 0 && s.b!.b! > 0, JSON.stringify(s));
    for (const w of [0.5, 0.9, 0.1]) {
      const after = run(planWith({ a: { a: 0.5, b: w } }));
      checkLowering(POP, before, after, 'a', 'b', w, `${via} w[a][b]=${w}`);
      // The turned-away go on to c (next in a's ranking, weight 1).
      after.forEach((r, i) => {
        if (r !== before[i]) assert.equal(r, 'c');
      });
    }
    // Raising it back re-admits the same clients.
    assert.deepEqual(run(planWith({ a: { a: 0.5, b: 1 } })), before);
  });

  test(`${via}: canary split — w[h][h] = 0.9 keeps 90 % at h and spills 10 % to the next region`, () => {
    for (const [h, next] of [['a', 'b'], ['b', 'c'], ['c', 'a']] as const) {
      const answers = run(planWith({ [h]: { [h]: 0.9 } }));
      const s = split(POP, answers)[h]!;
      const total = Object.values(s).reduce((x, y) => x + y, 0);
      assert.deepEqual(Object.keys(s).sort(), [h, next].sort(), `home ${h}: ${JSON.stringify(s)}`);
      assert.ok(Math.abs(s[h]! / total - 0.9) <= 0.02, `home ${h}: ${((s[h]! / total) * 100).toFixed(2)} % stay`);
      assert.ok(Math.abs(s[next]! / total - 0.1) <= 0.02, `home ${h}: ${((s[next]! / total) * 100).toFixed(2)} % spill to ${next}`);
      if (via === 'decide') break; // responder: one home is enough (decide covers all three)
    }
    // A three-way split: w[a][a] = 0.6, w[a][b] = 0.5 → a 60 %, b 20 %, c 20 %.
    const three = split(POP, run(planWith({ a: { a: 0.6, b: 0.5 } }))).a!;
    const total = Object.values(three).reduce((x, y) => x + y, 0);
    for (const [r, want] of [['a', 0.6], ['b', 0.2], ['c', 0.2]] as const) {
      assert.ok(Math.abs(three[r]! / total - want) <= 0.02, `a → ${r}: ${((three[r]! / total) * 100).toFixed(2)} %, expected ${want * 100} %`);
    }
  });
}

test('IPv6 /56 keys: lowering w[h][h] moves (1 − w) of home h only (decide and responder)', () => {
  const pop = population(0x5eed0006, 50_000, 6);
  const base = viaDecide(pop, planWith({}));
  base.forEach((r, i) => assert.equal(r, pop.homes[i]));
  assert.deepEqual(viaResponder(pop, planWith({})).regions, base);
  for (const w of [0.5, 0.9]) {
    const plan = planWith({ b: { b: w } });
    const d = viaDecide(pop, plan);
    checkLowering(pop, base, d, 'b', 'b', w, `decide IPv6 w[b][b]=${w}`);
    const r = viaResponder(pop, plan);
    assert.deepEqual(r.regions, d, 'responder agrees with decide');
    r.scopes.forEach((s, i) => assert.equal(s, pop.homes[i] === 'b' ? 56 : 12, 'admission in play for home b only; other cells are /12s'));
    assert.deepEqual(viaResponder(pop, plan, 'ecs-host').regions, d, 'another /64 inside the /56');
  }
});
