/**
 * The simulator's event queue: a binary min-heap of (time, a, b) in typed arrays, growing by
 * doubling. Entries with equal times come out in an order fixed by the sequence of pushes and
 * pops (deterministic), not necessarily first in, first out.
 */
export class EventHeap {
  private t: Float64Array;
  private a: Int32Array;
  private b: Int32Array;
  size = 0;

  constructor(capacity = 1024) {
    this.t = new Float64Array(capacity);
    this.a = new Int32Array(capacity);
    this.b = new Int32Array(capacity);
  }

  private grow(): void {
    const n = this.t.length * 2;
    const t = new Float64Array(n);
    const a = new Int32Array(n);
    const b = new Int32Array(n);
    t.set(this.t);
    a.set(this.a);
    b.set(this.b);
    this.t = t;
    this.a = a;
    this.b = b;
  }

  push(time: number, a: number, b: number): void {
    if (this.size === this.t.length) this.grow();
    let i = this.size++;
    const t = this.t;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (t[p]! <= time) break;
      t[i] = t[p]!;
      this.a[i] = this.a[p]!;
      this.b[i] = this.b[p]!;
      i = p;
    }
    t[i] = time;
    this.a[i] = a;
    this.b[i] = b;
  }

  /** Time of the earliest entry (Infinity when empty). */
  peekTime(): number {
    return this.size > 0 ? this.t[0]! : Infinity;
  }

  /** Removes the earliest entry; its fields are in `outA`, `outB` (and its time is the previous peekTime()). */
  outA = 0;
  outB = 0;
  pop(): number {
    const t = this.t;
    const time = t[0]!;
    this.outA = this.a[0]!;
    this.outB = this.b[0]!;
    const n = --this.size;
    if (n > 0) {
      const lt = t[n]!;
      const la = this.a[n]!;
      const lb = this.b[n]!;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && t[r]! < t[l]! ? r : l;
        if (t[c]! >= lt) break;
        t[i] = t[c]!;
        this.a[i] = this.a[c]!;
        this.b[i] = this.b[c]!;
        i = c;
      }
      t[i] = lt;
      this.a[i] = la;
      this.b[i] = lb;
    }
    return time;
  }
}
