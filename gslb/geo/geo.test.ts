/**
 * ECS scopes through the responder with a synthetic geo table
 * (docs/design.md "Choosing a region", step 4): the widest aligned prefix inside the client's
 * cell range; exactly /24 or /56 when admission is in play; 0 for source prefix 0; an unusable
 * ECS address falls back to the packet's source and keeps its source prefix as scope. Also:
 * lookups and ranges of GeoTable, save/load of a small table.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Responder } from '../dns/respond.js';
import { compileZones } from '../dns/zone.js';
import { decodeMessage, ipString } from '../dns/message.js';
import { QTYPE } from '../dns/constants.js';
import { EDNS, OPTS, query } from '../dns/testing.js';
import { defaultTable, GeoTable } from './table.js';
import { parseAddr } from './addr.js';
import { planWith, regionOfAddress, snapshotABC, syntheticTable } from '../../test/helpers/policy.js';
import type { Plan } from '../model/types.js';

/** Two cells: ranking 0 (home a) and ranking 1 (home b), over several ranges each. */
const TWO_CELLS = syntheticTable(
  [
    ['a', 'b', 'c'],
    ['b', 'c', 'a'],
  ],
  [
    ['0.0.0.0', 0],
    ['20.0.0.0', 1], // 20.0.0.0/8
    ['21.0.0.0', 0],
    ['40.0.0.0', 1], // 40.0.0.0/9
    ['40.128.0.0', 0],
    ['50.0.1.0', 1], // exactly one /24
    ['50.0.2.0', 0],
    ['60.0.1.0', 1], // 60.0.1.0 – 60.0.254.255, unaligned
    ['60.0.255.0', 0],
  ],
  [
    [0, 0, 0],
    [0x24000000, 0x00001200, 1], // exactly one /56: 2400:0:0:1200::/56
    [0x24000000, 0x00001300, 0],
    [0x2a000000, 0, 1], // 2a00::/12
    [0x2a100000, 0, 0],
  ],
);

function ecsOption(family: 4 | 6, address: string, source: number): { code: number; data: Buffer } {
  const a = parseAddr(address)!;
  const full = Buffer.alloc(family === 4 ? 4 : 16);
  if (family === 4) full.writeUInt32BE(a.hi);
  else {
    full.writeUInt32BE(a.hi, 0);
    full.writeUInt32BE(a.lo, 4);
  }
  const n = Math.ceil(source / 8);
  return { code: 8, data: Buffer.concat([Buffer.from([0, family === 4 ? 1 : 2, source, 0]), full.subarray(0, n)]) };
}

interface Reply {
  region: string | null;
  scope: number;
  source: number;
  ttl: number;
}

function ask(r: Responder, o: { ecs?: [4 | 6, string, number]; client: string; qtype?: number; now?: number }): Reply {
  const opts = o.ecs ? [ecsOption(...o.ecs)] : [];
  const m = decodeMessage(r.answer(query('api.gslb.example.com.', o.qtype ?? QTYPE.A, { edns: { ...EDNS, options: opts } }), false, o.client, o.now ?? 1_800_000_000_000)!);
  assert.equal(m.flags & 0xf, 0, 'NOERROR');
  const rr = m.answers[0];
  const region = rr ? (regionOfAddress(ipString((rr.data as { bytes: Buffer }).bytes)) ?? '?') : null;
  const opt = m.edns!.options.find((x) => x.code === 8);
  if (o.ecs) assert.ok(opt, 'ECS echoed');
  return { region, scope: opt ? opt.data[3]! : -1, source: opt ? opt.data[2]! : -1, ttl: rr?.ttl ?? -1 };
}

function responder(plan: Plan = planWith({}), geo: GeoTable = TWO_CELLS): Responder {
  return new Responder({ zones: compileZones(snapshotABC()), plan, geo, opts: OPTS, version: 't' });
}

test('ECS scope through the responder: the widest aligned prefix inside the client\'s cell range', () => {
  const r = responder();
  const cases: [string, [4 | 6, string, number], string, number][] = [
    ['a /8 cell', [4, '20.1.2.0', 24], 'b', 8],
    ['a /8 cell, source /16', [4, '20.1.0.0', 16], 'b', 8],
    ['a /8 cell, source /32', [4, '20.1.2.3', 32], 'b', 8],
    ['a /9 cell', [4, '40.5.6.0', 24], 'b', 9],
    ['the range after the /9 (other cell)', [4, '40.200.0.0', 24], 'a', 9],
    ['exactly one /24', [4, '50.0.1.0', 24], 'b', 24],
    ['the /24 after it', [4, '50.0.2.0', 24], 'a', 23],
    ['unaligned range, in the middle', [4, '60.0.128.0', 24], 'b', 18],
    ['unaligned range, at its start', [4, '60.0.1.0', 24], 'b', 24],
    ['unaligned range, at its end', [4, '60.0.254.0', 24], 'b', 24],
    ['unaligned range, source /20 in the middle', [4, '60.0.16.0', 20], 'b', 20],
    ['the first range, 0.0.0.0 – 19.255.255.255', [4, '8.8.8.0', 24], 'a', 4],
    ['the last range, up to 255.255.255.255', [4, '128.1.2.0', 24], 'a', 1],
    ['IPv6: a /12 cell', [6, '2a00:1450:4000::', 48], 'b', 12],
    ['IPv6: a /12 cell, source /56', [6, '2a00:1450:4000:1200::', 56], 'b', 12],
    ['IPv6: exactly one /56', [6, '2400:0:0:1200::', 56], 'b', 56],
    ['IPv6: the /56 after it', [6, '2400:0:0:1300::', 56], 'a', 56],
    ['IPv6: source /64 in the one-/56 cell', [6, '2400:0:0:12ab::', 64], 'b', 56],
  ];
  for (const [what, ecs, region, scope] of cases) {
    for (const qtype of [QTYPE.A, QTYPE.AAAA]) {
      const got = ask(r, { ecs, client: '192.0.2.1', qtype });
      assert.deepEqual([got.region, got.scope, got.source], [region, scope, ecs[2]], `${what} (${qtype === QTYPE.A ? 'A' : 'AAAA'})`);
    }
  }
  // The per-cell decision cache does not reuse one subnet's scope for another in the same cell.
  assert.equal(ask(r, { ecs: [4, '60.0.128.0', 24], client: '192.0.2.1' }).scope, 18);
  assert.equal(ask(r, { ecs: [4, '60.0.1.0', 24], client: '192.0.2.1' }).scope, 24);
  assert.equal(ask(r, { ecs: [4, '60.0.128.0', 24], client: '192.0.2.1' }).scope, 18);
});

test('ECS scope through the responder: admission in play → exactly /24 or /56, only in the affected cell', () => {
  // Home b keeps half of its clients: answers in b's cells depend on the subnet hash.
  const r = responder(planWith({ b: { b: 0.5 } }));
  for (const [ecs, scope] of [
    [[4, '20.1.2.0', 24], 24],
    [[4, '20.1.0.0', 16], 24],
    [[4, '60.0.128.0', 24], 24],
    [[4, '50.0.1.0', 24], 24],
    [[6, '2a00:1450:4000::', 48], 56],
    [[6, '2400:0:0:1200::', 56], 56],
    // Home a's cells are unaffected (weights of home b only).
    [[4, '8.8.8.0', 24], 4],
    [[4, '40.200.0.0', 24], 9],
  ] as [[4 | 6, string, number], number][]) {
    assert.equal(ask(r, { ecs, client: '192.0.2.1' }).scope, scope, `${ecs.join(' ')}`);
  }
  // Both answers occur in b's /8 (the scope must be narrow for that reason).
  const seen = new Set<string | null>();
  for (let i = 0; i < 64; i++) seen.add(ask(r, { ecs: [4, `20.${i}.${i * 3}.0`, 24], client: '192.0.2.1' }).region);
  assert.deepEqual([...seen].sort(), ['b', 'c']);
});

test('ECS: source prefix 0 → scope 0, answered from the packet source', () => {
  const r = responder();
  for (const [client, region] of [
    ['20.9.9.9', 'b'],
    ['8.8.8.8', 'a'],
    ['2a00:1450::1', 'b'],
  ] as const) {
    for (const fam of [4, 6] as const) {
      const got = ask(r, { ecs: [fam, fam === 4 ? '0.0.0.0' : '::', 0], client });
      assert.deepEqual([got.region, got.scope, got.source], [region, 0, 0], `${client}, ECS family ${fam} /0`);
    }
  }
  const weighted = responder(planWith({ b: { b: 0.5 } }));
  assert.equal(ask(weighted, { ecs: [4, '0.0.0.0', 0], client: '20.9.9.9' }).scope, 0, '/0 with admission in play: still 0');
});

test('ECS: a private, documentation or reserved address falls back to the source and keeps its source prefix as scope', () => {
  for (const plan of [planWith({}), planWith({ b: { b: 0.5 }, a: { a: 0.5 } })]) {
    const r = responder(plan);
    const cases: [[4 | 6, string, number], string, number][] = [
      [[4, '198.51.100.0', 24], '20.9.9.9', 24],
      [[4, '198.51.100.0', 22], '20.9.9.9', 22],
      [[4, '192.0.2.0', 24], '8.8.8.8', 24],
      [[4, '10.1.0.0', 16], '20.9.9.9', 16],
      [[4, '192.168.1.0', 24], '8.8.8.8', 24],
      [[4, '127.0.0.1', 32], '8.8.8.8', 24],
      [[6, '2001:db8::', 56], '20.9.9.9', 56],
      [[6, '2001:db8::', 48], '8.8.8.8', 48],
      [[6, 'fd00:1234::', 64], '20.9.9.9', 56],
    ];
    for (const [ecs, client, scope] of cases) {
      const got = ask(r, { ecs, client });
      const home = client.startsWith('20.') ? 'b' : 'a';
      // With all weights 1 the answer is the source's home; with weights it is the source's
      // home or the next region in its ranking — never decided by the ECS address.
      if (Object.keys(plan.regions).length === 0) assert.equal(got.region, home, `${ecs.join(' ')} from ${client}`);
      else assert.ok(got.region === home || got.region === (home === 'b' ? 'c' : 'b'), `${ecs.join(' ')} from ${client}: ${got.region}`);
      assert.equal(got.scope, scope, `${ecs.join(' ')} from ${client}: scope`);
      assert.notEqual(got.scope, 0);
    }
  }
  // The same special ECS from two sources in different cells: each source's cell answers.
  const r = responder();
  assert.equal(ask(r, { ecs: [4, '198.51.100.0', 24], client: '20.9.9.9' }).region, 'b');
  assert.equal(ask(r, { ecs: [4, '198.51.100.0', 24], client: '8.8.8.8' }).region, 'a');
});

test('ECS with a one-cell table: scope 0 (the answer holds for everyone)', () => {
  const r = responder(planWith({}), defaultTable(['c', 'a', 'b'], 'test'));
  for (const ecs of [[4, '20.1.2.0', 24], [6, '2a00:1450::', 48], [4, '198.51.100.0', 24]] as [4 | 6, string, number][]) {
    const got = ask(r, { ecs, client: '8.8.8.8' });
    assert.deepEqual([got.region, got.scope], ['c', 0], ecs.join(' '));
  }
});

test('GeoTable: binary search, ranges, save/load round trip, corrupt files rejected', () => {
  const t = TWO_CELLS;
  const at4 = (s: string) => t.rankOf(parseAddr(s)!);
  assert.equal(at4('0.0.0.0'), 0);
  assert.equal(at4('19.255.255.255'), 0);
  assert.equal(at4('20.0.0.0'), 1);
  assert.equal(at4('20.255.255.255'), 1);
  assert.equal(at4('21.0.0.0'), 0);
  assert.equal(at4('50.0.0.255'), 0);
  assert.equal(at4('50.0.1.0'), 1);
  assert.equal(at4('50.0.1.255'), 1);
  assert.equal(at4('50.0.2.0'), 0);
  assert.equal(at4('255.255.255.255'), 0);
  assert.equal(t.rankOf(parseAddr('2400:0:0:11ff::')!), 0);
  assert.equal(t.rankOf(parseAddr('2400:0:0:1200::')!), 1);
  assert.equal(t.rankOf(parseAddr('2400:0:0:12ff:ffff::')!), 1);
  assert.equal(t.rankOf(parseAddr('2400:0:0:1300::')!), 0);
  assert.equal(t.rankOf(parseAddr('2a0f:ffff::')!), 1);
  assert.equal(t.rankOf(parseAddr('ffff::')!), 0);
  assert.deepEqual(t.range4(t.index4(parseAddr('50.0.1.77')!.hi)), [parseAddr('50.0.1.0')!.hi, parseAddr('50.0.1.255')!.hi]);
  assert.deepEqual(t.range4(t.v4Start.length - 1), [parseAddr('60.0.255.0')!.hi, 0xffffffff]);
  assert.deepEqual(t.range6(1), [0x24000000, 0x1200, 0x24000000, 0x12ff]);
  assert.deepEqual(t.range6(2), [0x24000000, 0x1300, 0x29ffffff, 0xffffffff]);
  assert.deepEqual(t.range6(4), [0x2a100000, 0, 0xffffffff, 0xffffffff]);

  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-geo-'));
  try {
    const file = join(dir, 'geo.bin');
    t.save(file);
    const u = GeoTable.load(file);
    assert.deepEqual(u.meta, t.meta);
    assert.deepEqual(u.rankings, t.rankings);
    assert.deepEqual([...u.v4Start], [...t.v4Start]);
    assert.deepEqual([...u.v4Rank], [...t.v4Rank]);
    assert.deepEqual([...u.v6Hi], [...t.v6Hi]);
    assert.deepEqual([...u.v6Lo], [...t.v6Lo]);
    assert.deepEqual([...u.v6Rank], [...t.v6Rank]);
    // Odd lengths of the 16-bit arrays (padding) round-trip too.
    const odd = syntheticTable([['a'], ['b']], [['0.0.0.0', 0], ['1.0.0.0', 1], ['2.0.0.0', 0]], [[0, 0, 0]]);
    odd.save(file);
    assert.deepEqual([...GeoTable.load(file).v4Rank], [0, 1, 0]);
    const bytes = readFileSync(file);
    writeFileSync(file, bytes.subarray(0, bytes.length - 2));
    assert.throws(() => GeoTable.load(file), /wrong length/);
    writeFileSync(file, Buffer.concat([bytes, Buffer.alloc(4)]));
    assert.throws(() => GeoTable.load(file), /wrong length/);
    writeFileSync(file, Buffer.from('not a table at all'));
    assert.throws(() => GeoTable.load(file), /is not a GridSteer geo table/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('GeoTable: IPv6 entries starting inside a /16-aligned /32 (hi = t << 16, lo ≠ 0) are found by the slot index', () => {
  // Regression: the /16 slot index once took the last entry whose hi ≤ t << 16, ignoring lo, so
  // an address in (t << 16, lo below that entry's lo) was placed in the later entry.
  const v6: [number, number, number][] = [
    [0, 0, 0],
    [0x24000000, 0x00001200, 1],
    [0x24000000, 0x00001300, 0],
    [0x24010000, 0, 1],
    [0x24020000, 0x00000100, 0],
    [0x24020000, 0x00000200, 1],
    [0x24020000, 0xffffff00, 0],
    [0x24030000, 0x80000000, 1],
  ];
  const t = syntheticTable([['a'], ['b']], [['0.0.0.0', 0]], v6);
  const plain = (h: number, l: number) => {
    let i = 0;
    while (i + 1 < v6.length && (v6[i + 1]![0] < h || (v6[i + 1]![0] === h && v6[i + 1]![1] <= l))) i++;
    return i;
  };
  const his = [0x23ffffff, 0x24000000, 0x24000001, 0x2400ffff, 0x24010000, 0x24020000, 0x24030000, 0x24030001, 0x24040000];
  const los = [0, 0xff, 0x100, 0x1ff, 0x11ff, 0x1200, 0x12ff, 0x1300, 0x7fffffff, 0x80000000, 0xfffffeff, 0xffffff00, 0xffffffff];
  for (const h of his) for (const l of los) assert.equal(t.index6(h, l), plain(h, l), `${h.toString(16)}:${l.toString(16)}`);
});
