/**
 * The simulator's randomness: deterministic streams, and distributions that are what they
 * claim (checked on fixed seeds, with tolerances of several standard errors).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Alias, Rng } from './rng.js';

test('Rng: the same (seed, stream) gives the same sequence; another seed or stream another', () => {
  const draw = (seed: number, stream: number) => {
    const r = new Rng(seed, stream);
    return Array.from({ length: 8 }, () => r.u32());
  };
  assert.deepEqual(draw(1, 0), draw(1, 0));
  assert.notDeepEqual(draw(1, 0), draw(2, 0));
  assert.notDeepEqual(draw(1, 0), draw(1, 1));
  // Seed 0 is a valid seed (the state is never all zeros).
  assert.ok(draw(0, 0).some((x) => x !== 0));
});

test('Rng: next() in [0, 1) with a uniform mean; int(n) covers 0..n-1; exp and normal have their moments', () => {
  const r = new Rng(7, 3);
  const N = 200_000;
  let sum = 0;
  let min = 1;
  let max = 0;
  for (let i = 0; i < N; i++) {
    const u = r.next();
    sum += u;
    min = Math.min(min, u);
    max = Math.max(max, u);
  }
  assert.ok(min >= 0 && max < 1);
  assert.ok(Math.abs(sum / N - 0.5) < 5 * Math.sqrt(1 / 12 / N), `uniform mean ${sum / N}`);
  const seen = new Set<number>();
  for (let i = 0; i < 1000; i++) seen.add(r.int(7));
  assert.deepEqual([...seen].sort(), [0, 1, 2, 3, 4, 5, 6]);
  let e = 0;
  for (let i = 0; i < N; i++) e += r.exp(3);
  assert.ok(Math.abs(e / N - 3) < 5 * (3 / Math.sqrt(N)), `exp mean ${e / N}`);
  let m = 0;
  let v = 0;
  for (let i = 0; i < N; i++) {
    const z = r.normal();
    m += z;
    v += z * z;
  }
  assert.ok(Math.abs(m / N) < 5 / Math.sqrt(N), `normal mean ${m / N}`);
  assert.ok(Math.abs(v / N - 1) < 5 * Math.sqrt(2 / N), `normal variance ${v / N}`);
});

test('Alias: samples each index in proportion to its weight; zero weights never come out', () => {
  const cases: number[][] = [
    [1, 1],
    [1, 2, 3, 4],
    [0, 5, 0, 1],
    [0.001, 1000],
  ];
  for (const w of cases) {
    const a = new Alias(w);
    const r = new Rng(11, 0);
    const N = 100_000;
    const counts = new Array<number>(w.length).fill(0);
    for (let i = 0; i < N; i++) counts[a.sample(r)]!++;
    const total = w.reduce((s, x) => s + x, 0);
    w.forEach((x, i) => {
      const p = x / total;
      if (p === 0) assert.equal(counts[i], 0, `weight 0 sampled in ${JSON.stringify(w)}`);
      else assert.ok(Math.abs(counts[i]! / N - p) < 5 * Math.sqrt((p * (1 - p)) / N) + 1e-9, `${JSON.stringify(w)}[${i}]: ${counts[i]! / N} vs ${p}`);
    });
  }
});

test('Alias: refuses weights it cannot sample', () => {
  for (const w of [[], [0, 0], [1, -1], [1, Number.NaN], [Infinity]]) assert.throws(() => new Alias(w), /alias table/, JSON.stringify(w));
});
