/**
 * Work counters for tests that bound how much a parser does by counting it, never by timing
 * it (a test must not fail because the machine is slow).
 *
 * - countStringWork(fn): runs fn with String.prototype's scanning methods and RegExp exec
 *   counted, and returns the characters they touched: 1 per charCodeAt/codePointAt, the
 *   distance an indexOf/includes/lastIndexOf scanned, the length a slice/substring/trim/
 *   startsWith copied or compared, the input left to a regex exec (its linear lower bound:
 *   backtracking inside a regex is invisible here, which is why the parsers' patterns are
 *   checked separately). Indexing a string with `s[i]` is not seen either.
 * - countIndexReads(array) / countByteReads(bytes): a view of an array or a Uint8Array through
 *   a Proxy that counts every indexed read (`a[i]`); a typed array's methods run on the real
 *   array, a plain array's through the Proxy (so `slice`, `map` … count what they read).
 *
 * Synchronous only: the counters are installed for the duration of one call and removed in a
 * finally, so nothing else in the process is counted.
 */

type AnyFn = (...a: never[]) => unknown;

export interface StringWork<T> {
  /** What fn returned, or undefined when it threw. */
  result: T | undefined;
  /** What fn threw, if it did. */
  error: unknown;
  /** Characters touched (see the module comment). */
  chars: number;
  /** The longest input a regex was run on (a bound on one match's backtracking, with the pattern). */
  longestRegexInput: number;
}

const SP = String.prototype as unknown as Record<string, AnyFn>;
const RP = RegExp.prototype as unknown as Record<string, AnyFn>;
const indexOf = String.prototype.indexOf;

/** Runs fn (synchronous) and counts the string work it does. Never nests. */
export function countStringWork<T>(fn: () => T): StringWork<T> {
  let chars = 0;
  let longestRegexInput = 0;
  const saved: [Record<string, AnyFn>, string, AnyFn][] = [];
  const wrap = (proto: Record<string, AnyFn>, name: string, cost: (self: string, args: unknown[], r: unknown) => number) => {
    const orig = proto[name]!;
    saved.push([proto, name, orig]);
    proto[name] = function (this: unknown, ...args: unknown[]) {
      const r = (orig as (...a: unknown[]) => unknown).apply(this, args);
      chars += cost(String(this), args, r);
      return r;
    } as AnyFn;
  };
  const scanned = (self: string, args: unknown[], r: unknown) => {
    const from = Math.max(0, Math.min(self.length, Number(args[1] ?? 0) || 0));
    const at = typeof r === 'number' ? r : -1;
    return at < 0 ? self.length - from : at - from + String(args[0]).length;
  };
  try {
    wrap(SP, 'charCodeAt', () => 1);
    wrap(SP, 'codePointAt', () => 1);
    wrap(SP, 'indexOf', scanned);
    wrap(SP, 'includes', (s, a) => scanned(s, a, indexOf.call(s, String(a[0]), Number(a[1] ?? 0) || 0)));
    wrap(SP, 'lastIndexOf', (s) => s.length);
    wrap(SP, 'startsWith', (_s, a) => String(a[0]).length);
    wrap(SP, 'endsWith', (_s, a) => String(a[0]).length);
    for (const m of ['slice', 'substring', 'substr', 'trim', 'trimStart', 'trimEnd', 'toLowerCase', 'toUpperCase']) wrap(SP, m, (_s, _a, r) => String(r).length);
    wrap(RP, 'exec', (_s, a) => {
      const n = String(a[0]).length;
      longestRegexInput = Math.max(longestRegexInput, n);
      return n;
    });
    try {
      const result = fn();
      return { result, error: undefined, chars, longestRegexInput };
    } catch (error) {
      return { result: undefined, error, chars, longestRegexInput };
    }
  } finally {
    for (const [proto, name, orig] of saved.reverse()) proto[name] = orig;
  }
}

/** A view of an array or typed array that counts indexed reads (`a[i]`); `reads()` is the count so far. */
export function countIndexReads<A extends object>(array: A): { buf: A; reads: () => number } {
  let n = 0;
  const buf = new Proxy(array, {
    get(target, key) {
      if (typeof key === 'string' && key.length > 0 && key.charCodeAt(0) >= 0x30 && key.charCodeAt(0) <= 0x39) n++;
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === 'function' && !Array.isArray(target) ? (v as AnyFn).bind(target) : v;
    },
  });
  return { buf, reads: () => n };
}

/** countIndexReads for bytes: a Uint8Array's methods run on the real array. */
export const countByteReads = <B extends Uint8Array>(bytes: B): { buf: B; reads: () => number } => countIndexReads(bytes);
