/**
 * Session lengths: a mixture of a lognormal body (short requests) and a truncated Pareto
 * tail (long streaming sessions). With the defaults — body median 5 s, σ 1; 1 % of sessions
 * in the tail, Pareto from 600 s with α 1.5, cut at 4 h — the median is ≈ 5 s and 1 % of
 * sessions last more than 10 minutes. Pure.
 */
import type { Rng } from './rng.js';

export interface SessionLengthParams {
  /** Median of the lognormal body, seconds. */
  medianS: number;
  /** σ of the body's log (dimensionless). */
  sigma: number;
  /** Share of sessions drawn from the tail, [0, 1]. */
  tailShare: number;
  /** Where the tail starts (its Pareto scale), seconds. */
  tailMinS: number;
  /** The tail's Pareto shape α (> 0). */
  tailAlpha: number;
  /** Where the tail is cut (no session is longer), seconds; > tailMinS. */
  tailMaxS: number;
}

export const DEFAULT_SESSION_LENGTH: SessionLengthParams = { medianS: 5, sigma: 1, tailShare: 0.01, tailMinS: 600, tailAlpha: 1.5, tailMaxS: 14_400 };

/** A truncated Pareto length on [m, u] (seconds) from a uniform v in [0, 1). */
export function paretoTruncated(m: number, u: number, alpha: number, v: number): number {
  const k = 1 - (m / u) ** alpha;
  return m / (1 - v * k) ** (1 / alpha);
}

/** One session length in ms. */
export function sampleLengthMs(p: SessionLengthParams, rng: Rng): number {
  if (rng.next() < p.tailShare) return 1000 * paretoTruncated(p.tailMinS, p.tailMaxS, p.tailAlpha, rng.next());
  return 1000 * Math.min(p.tailMaxS, p.medianS * Math.exp(p.sigma * rng.normal()));
}

/** One length from the tail alone, ms (the warm start places long sessions begun before the simulation). */
export function sampleTailMs(p: SessionLengthParams, rng: Rng): number {
  return 1000 * paretoTruncated(p.tailMinS, p.tailMaxS, p.tailAlpha, rng.next());
}

/** Mean of the truncated Pareto tail, seconds. */
export function tailMeanS(p: SessionLengthParams): number {
  const { tailMinS: m, tailMaxS: u, tailAlpha: a } = p;
  const norm = 1 - (m / u) ** a;
  if (Math.abs(a - 1) < 1e-9) return (m * Math.log(u / m)) / norm;
  return ((a * m ** a) / norm) * ((m ** (1 - a) - u ** (1 - a)) / (a - 1));
}

/** Mean session length, seconds (the body's lognormal mean, ignoring its cut at tailMaxS, and the tail's). */
export function meanLengthS(p: SessionLengthParams): number {
  const body = p.medianS * Math.exp((p.sigma * p.sigma) / 2);
  return (1 - p.tailShare) * body + p.tailShare * tailMeanS(p);
}

/** P(length > x seconds) under the mixture (the body's normal tail by erfc). */
export function survival(p: SessionLengthParams, xS: number): number {
  const body = xS >= p.tailMaxS ? 0 : 0.5 * erfc(Math.log(xS / p.medianS) / (p.sigma * Math.SQRT2));
  let tail: number;
  if (xS <= p.tailMinS) tail = 1;
  else if (xS >= p.tailMaxS) tail = 0;
  else tail = ((p.tailMinS / xS) ** p.tailAlpha - (p.tailMinS / p.tailMaxS) ** p.tailAlpha) / (1 - (p.tailMinS / p.tailMaxS) ** p.tailAlpha);
  return (1 - p.tailShare) * body + p.tailShare * tail;
}

/** Complementary error function (Numerical Recipes' erfcc, |error| < 1.2e-7). */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}
