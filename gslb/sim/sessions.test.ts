/**
 * Session lengths: the documented shape (median ≈ 5 s, 1 % over 10 minutes, nothing over the
 * cut) holds for the analytic functions and for samples.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Rng } from './rng.js';
import { DEFAULT_SESSION_LENGTH as P, erfc, meanLengthS, paretoTruncated, sampleLengthMs, sampleTailMs, survival, tailMeanS } from './sessions.js';

test('paretoTruncated maps [0, 1) onto [m, u) monotonically', () => {
  const cases: [number, number][] = [
    [0, 600],
    [0.5, 600 / (1 - 0.5 * (1 - (600 / 14400) ** 1.5)) ** (1 / 1.5)],
  ];
  for (const [v, want] of cases) assert.ok(Math.abs(paretoTruncated(600, 14400, 1.5, v) - want) < 1e-9, `v=${v}`);
  assert.ok(paretoTruncated(600, 14400, 1.5, 0.999999) < 14400);
  let prev = 0;
  for (let v = 0; v < 1; v += 0.01) {
    const x = paretoTruncated(600, 14400, 1.5, v);
    assert.ok(x > prev);
    prev = x;
  }
});

test('erfc against known values', () => {
  const cases: [number, number][] = [
    [0, 1],
    [0.5, 0.4795001222],
    [1, 0.1572992071],
    [2, 0.004677734981],
    [-1, 1.8427007929],
  ];
  for (const [x, want] of cases) assert.ok(Math.abs(erfc(x) - want) < 2e-7, `erfc(${x}) = ${erfc(x)}`);
});

test('the documented shape: median ≈ 5 s, P(> 10 min) ≈ 1 %, nothing beyond the cut', () => {
  assert.ok(Math.abs(survival(P, 5) - 0.5) < 0.01, `P(> 5 s) = ${survival(P, 5)}`);
  assert.ok(Math.abs(survival(P, 600) - 0.01) < 1e-4, `P(> 600 s) = ${survival(P, 600)}`);
  assert.equal(survival(P, P.tailMaxS), 0);
  // The tail's mean by numeric integration of its survival function.
  let integral = P.tailMinS;
  const steps = 200_000;
  const h = (P.tailMaxS - P.tailMinS) / steps;
  for (let i = 0; i < steps; i++) {
    const x = P.tailMinS + (i + 0.5) * h;
    integral += h * (((P.tailMinS / x) ** P.tailAlpha - (P.tailMinS / P.tailMaxS) ** P.tailAlpha) / (1 - (P.tailMinS / P.tailMaxS) ** P.tailAlpha));
  }
  assert.ok(Math.abs(tailMeanS(P) - integral) < 0.01, `tail mean ${tailMeanS(P)} vs ${integral}`);
});

test('samples follow the analytic shape (fixed seed, tolerances of several standard errors)', () => {
  const r = new Rng(5, 2);
  const N = 400_000;
  const xs = new Float64Array(N);
  let sum = 0;
  for (let i = 0; i < N; i++) {
    xs[i] = sampleLengthMs(P, r) / 1000;
    sum += xs[i]!;
  }
  xs.sort();
  const median = xs[N / 2]!;
  assert.ok(median > 4.9 && median < 5.2, `median ${median}`);
  const over10min = xs.filter((x) => x > 600).length / N;
  assert.ok(Math.abs(over10min - 0.01) < 5 * Math.sqrt((0.01 * 0.99) / N), `P(> 600 s) ${over10min}`);
  assert.ok(xs[N - 1]! <= P.tailMaxS);
  assert.ok(Math.abs(sum / N / meanLengthS(P) - 1) < 0.05, `mean ${sum / N} vs ${meanLengthS(P)}`);
  for (let i = 0; i < 1000; i++) {
    const t = sampleTailMs(P, r) / 1000;
    assert.ok(t >= P.tailMinS && t <= P.tailMaxS);
  }
});
