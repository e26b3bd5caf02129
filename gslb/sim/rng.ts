/**
 * Deterministic randomness for the simulator. Pure: no clock, no global state.
 *
 * `Rng` is xoshiro128** (Blackman and Vigna) seeded through splitmix32 from (seed, stream):
 * the same (seed, stream) gives the same sequence on every machine. The simulator draws each
 * concern (session arrivals, the world's layout, a policy's own choices) from its own stream,
 * so that the three policies compared on one seed see exactly the same sessions.
 */

/** splitmix32 step: the next state and its 32-bit output. */
function splitmix32(s: number): [number, number] {
  s = (s + 0x9e3779b9) >>> 0;
  let z = s;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return [s, (z ^ (z >>> 16)) >>> 0];
}

const rotl = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** `seed` and `stream` are unsigned 32-bit integers (other numbers are truncated). */
  constructor(seed: number, stream = 0) {
    let s = (seed ^ Math.imul(stream + 1, 0x27d4eb2f)) >>> 0;
    let o: number;
    [s, o] = splitmix32(s);
    this.a = o;
    [s, o] = splitmix32(s);
    this.b = o;
    [s, o] = splitmix32(s);
    this.c = o;
    [, o] = splitmix32(s);
    this.d = o;
    if ((this.a | this.b | this.c | this.d) === 0) this.d = 1;
  }

  /** The next unsigned 32-bit integer. */
  u32(): number {
    const r = Math.imul(rotl(Math.imul(this.b, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.b << 9) >>> 0;
    this.c = (this.c ^ this.a) >>> 0;
    this.d = (this.d ^ this.b) >>> 0;
    this.b = (this.b ^ this.c) >>> 0;
    this.a = (this.a ^ this.d) >>> 0;
    this.c = (this.c ^ t) >>> 0;
    this.d = rotl(this.d, 11);
    return r;
  }

  /** Uniform in [0, 1), 32 bits of resolution. */
  next(): number {
    return this.u32() / 0x100000000;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Exponential with the given mean (inverse transform; never returns Infinity). */
  exp(mean: number): number {
    return -mean * Math.log(1 - this.next());
  }

  /** Standard normal (Box–Muller; two uniforms per call, so the stream stays aligned). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
}

/**
 * Walker's alias method: samples index i with probability weights[i] / Σ weights in O(1).
 * Built once (O(n)); every weight must be finite and ≥ 0, and their sum > 0.
 */
export class Alias {
  private readonly prob: Float64Array;
  private readonly alias: Int32Array;
  readonly n: number;

  constructor(weights: readonly number[]) {
    const n = weights.length;
    const sum = weights.reduce((s, w) => s + w, 0);
    if (n === 0 || !(sum > 0) || !Number.isFinite(sum) || weights.some((w) => !(w >= 0))) throw new Error('sim/rng: alias table needs non-negative weights with a positive, finite sum');
    this.n = n;
    this.prob = new Float64Array(n);
    this.alias = new Int32Array(n);
    const scaled = weights.map((w) => (w * n) / sum);
    const small: number[] = [];
    const large: number[] = [];
    scaled.forEach((p, i) => (p < 1 ? small : large).push(i));
    while (small.length > 0 && large.length > 0) {
      const s = small.pop()!;
      const l = large.pop()!;
      this.prob[s] = scaled[s]!;
      this.alias[s] = l;
      scaled[l] = scaled[l]! + scaled[s]! - 1;
      (scaled[l]! < 1 ? small : large).push(l);
    }
    for (const i of [...small, ...large]) {
      this.prob[i] = 1;
      this.alias[i] = i;
    }
  }

  sample(rng: Rng): number {
    const i = rng.int(this.n);
    return rng.next() < this.prob[i]! ? i : this.alias[i]!;
  }
}
