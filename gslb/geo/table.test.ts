import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GeoTable } from './table.js';
import { xorshift32 as rng } from '../../test/helpers/policy.js';

/** A plain binary search over the whole table: what the /16 slot index must agree with. */
function plain4(t: GeoTable, a: number): number {
  let lo = 0;
  let hi = t.v4Start.length - 1;
  while (lo < hi) {
    const m = (lo + hi + 1) >>> 1;
    if (t.v4Start[m]! <= a) lo = m;
    else hi = m - 1;
  }
  return lo;
}
function plain6(t: GeoTable, h: number, l: number): number {
  let lo = 0;
  let hi = t.v6Hi.length - 1;
  while (lo < hi) {
    const m = (lo + hi + 1) >>> 1;
    if (t.v6Hi[m]! < h || (t.v6Hi[m] === h && t.v6Lo[m]! <= l)) lo = m;
    else hi = m - 1;
  }
  return lo;
}

function synthetic(seed: number, n: number): GeoTable {
  const r = rng(seed);
  const v4 = new Set<number>([0]);
  while (v4.size < n) v4.add((r() & 0xffffff00) >>> 0);
  // Some entries inside one /16 and at the very top, to exercise slot edges.
  for (const a of [0x0a000100, 0x0a000200, 0x0a00ff00, 0xffff0000, 0xffffff00]) v4.add(a >>> 0);
  const starts4 = Uint32Array.from([...v4].sort((a, b) => a - b));
  const v6: [number, number][] = [[0, 0]];
  for (let i = 0; i < n; i++) v6.push([r(), (r() & 0xffffff00) >>> 0]);
  v6.push([0xffffffff, 0xffffff00], [0x20010db8, 0], [0x20010db8, 0x100]);
  v6.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const uniq = v6.filter((x, i) => i === 0 || x[0] !== v6[i - 1]![0] || x[1] !== v6[i - 1]![1]);
  return new GeoTable(
    { dbHash: 't', geometryHash: 't', databaseType: 't', databaseBuilt: '', builtAt: 0, buildMs: 0, networks4: 0, networks6: 0 },
    [{ regions: ['a'], origin: 'default' }, { regions: ['b'], origin: 'geoip' }],
    starts4,
    Uint16Array.from(starts4, (_, i) => i % 2),
    Uint32Array.from(uniq, (x) => x[0]),
    Uint32Array.from(uniq, (x) => x[1]),
    Uint16Array.from(uniq, (_, i) => i % 2),
  );
}

test('the /16 slot index finds the same entry as a plain binary search (200k random addresses, edges)', () => {
  for (const [seed, n] of [
    [1, 10],
    [2, 5000],
    [3, 300_000],
  ] as const) {
    const t = synthetic(seed, n);
    const r = rng(seed * 7919);
    const edges = [0, 1, 0xffff, 0x10000, 0x0a000100, 0x0a0001ff, 0x0a00ffff, 0xfffeffff, 0xffff0000, 0xffffffff];
    for (let i = 0; i < 200_000 + edges.length; i++) {
      const a = i < edges.length ? edges[i]! : r();
      const l = i < edges.length ? edges[(i + 3) % edges.length]! : r();
      assert.equal(t.index4(a), plain4(t, a), `IPv4 ${a.toString(16)} (table of ${n})`);
      assert.equal(t.index6(a, l), plain6(t, a, l), `IPv6 ${a.toString(16)}:${l.toString(16)} (table of ${n})`);
    }
  }
});

test('save and load round-trip: same meta, rankings and lookups', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-geo-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const a = synthetic(9, 20_000);
  a.save(join(dir, 'g.bin'));
  const b = GeoTable.load(join(dir, 'g.bin'));
  assert.deepEqual(b.meta, a.meta);
  assert.deepEqual(b.rankings, a.rankings);
  assert.deepEqual([...b.v4Start], [...a.v4Start]);
  assert.deepEqual([...b.v6Lo], [...a.v6Lo]);
  const r = rng(99);
  for (let i = 0; i < 10_000; i++) {
    const x = r();
    assert.equal(b.index4(x), a.index4(x));
    assert.equal(b.index6(x, x), a.index6(x, x));
  }
});
