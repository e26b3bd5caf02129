/**
 * The collector payload fuzz generator (issue 27): deterministic (fuzzRng, a seed and an index
 * name every case), it takes a valid fixture — a parsed JSON value or a text body (Prometheus
 * exposition, RSS) — and breaks it the way a hostile or buggy source would. Used by each
 * collector's payload-fuzz.test.ts (docs/payload-fuzz.md lists them and their counts).
 *
 * JSON mutations (one to three per case, at a node chosen at random, numbers and dates more
 * often): numbers → NaN, ±Infinity, 1e308, -1, -0, 2^53 + 1, 9e15 (ms past Date's range),
 * 1e300, MAX_WATTS + 1, seconds where ms are meant and ms where seconds are; dates → 1970,
 * 0001-01-01, 1999-12-31, 2200-01-01 and later, +275760-09-13, 9999-12-31T23:59:59Z, 30
 * February, month 13, epoch numbers in seconds, ms and µs; wrong types (the number as a
 * string, null, true, [], {}); a field removed; unknown fields (`__proto__`, `constructor`
 * among them); huge strings; control characters, lone surrogates, NUL, RTL marks; deep nesting;
 * an array element repeated. Text mutations: number and date tokens replaced by the same values
 * as text (`NaN`, `+Inf`, `-Inf`, `1e999` …), truncation, a line removed or repeated, control
 * and unicode characters, a huge line, characters overwritten, deep nesting of `[`/`<x>`.
 */
import { fuzzRng } from './dns-fuzz.js';
import { INSTANT_MAX, INSTANT_MIN, MAX_WATTS } from '../../gslb/model/domains.js';
import { validateSignal } from '../../gslb/state/signals.js';
import pino from 'pino';
import type { CollectorContext, Signal } from '../../collectors/types.js';

export { fuzzRng };

/** Numbers no fact may carry as they are (or only at a boundary): each must be refused or bounded. */
export const BAD_NUMBERS: readonly number[] = [
  NaN,
  Infinity,
  -Infinity,
  1e308,
  -1,
  -0,
  2 ** 53 + 1,
  9e15,
  1e300,
  MAX_WATTS + 1,
  MAX_WATTS * 1000,
  -1e-300,
  Number.MIN_VALUE,
  2_147_483_648,
  0.5,
  // Seconds for ms (2026-11-30 in s), µs for ms, ms for s.
  1_796_000_000,
  1_796_000_000_000_000,
  1_796_000_000_000,
  INSTANT_MIN - 1,
  INSTANT_MAX + 1,
];

/** The same values as a text format writes them, and a few only text can carry. */
export const BAD_NUMBER_TEXT: readonly string[] = ['NaN', 'nan', '+Inf', '-Inf', 'Inf', 'Infinity', '-Infinity', '1e308', '1e999', '-1e999', '-1', '-0', '9007199254740993', '9e15', '1e300', '10000000000001', '4.9e-324', '2147483648', '1796000000', '1796000000000000', '0x10', '1_000', '', '.', '-', 'e5', '1e', '١٢٣'];

/** Dates no fact may carry (outside 2000–2200, not a calendar date, or a unit mix-up), as text. */
export const BAD_DATES: readonly string[] = [
  '1970-01-01',
  '1970-01-01T00:00:00Z',
  '0001-01-01T00:00:00Z',
  '1999-12-31T23:59:59Z',
  '2200-01-01T00:00:01Z',
  '2199-12-31T23:59:59Z',
  '2101-01-01T00:00:00Z',
  '+275760-09-13T00:00:00Z',
  '+275760-09-13T00:00:00.001Z',
  '-271821-04-20T00:00:00Z',
  '9999-12-31T23:59:59Z',
  '2026-02-30T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '2026-11-30T24:00:00Z',
  '2026-11-30T00:00:00+99:99',
  '2026-11-30T00:00:00',
  '2026-11-30',
  'Mon, 30 Nov 2026 25:00:00 GMT',
  'Thu, 01 Jan 1970 00:00:00 GMT',
  'Fri, 31 Dec 9999 23:59:59 GMT',
  '11.30.2026 00:00',
  '1796000000',
  '1796000000000',
  '1796000000000000',
  'now',
  'P9999Y',
  '',
];

/** Epoch numbers where a date is expected: seconds, ms, µs, before 2000, after 2200, beyond Date. */
export const BAD_EPOCHS: readonly number[] = [0, -1, 1_796_000_000, 1_796_000_000_000_000, INSTANT_MIN - 1, INSTANT_MAX + 1, 8.64e15, 8.64e15 + 1, 9e15, 1e300, NaN, Infinity];

/** Strings that break naive code: controls, NUL, lone surrogates, RTL, a long emoji run, markup. */
export const BAD_STRINGS: readonly string[] = ['\u0000', '\u0000\u0001\u001f\u007f', '\ud800', '\udfff\ud800', '\u202e\u202dRTL', '\ufeff', 'e\u0301\u0301\u0301', '😀'.repeat(50), '\r\n\r\n', '"\'\\', '<![CDATA[x]]>', '&amp;&#0;&#xD800;&unknown;', '${x}%s%n', '__proto__', 'constructor', ' ', '\t'];

/** The kinds of JSON mutation, by name (for reports and failure messages). */
export const JSON_MUTATIONS = ['none', 'number', 'date', 'epoch', 'type', 'remove', 'extra', 'huge-string', 'unicode', 'deep', 'repeat', 'replace-root'] as const;
export type JsonMutation = (typeof JSON_MUTATIONS)[number];

/** The kinds of text mutation, by name. */
export const TEXT_MUTATIONS = ['none', 'number', 'date', 'truncate', 'drop-line', 'repeat-line', 'control', 'huge-line', 'overwrite', 'deep', 'blank'] as const;
export type TextMutation = (typeof TEXT_MUTATIONS)[number];

/** The longest string a mutation writes (bounded: a case must stay cheap). */
export const HUGE = 70_000;

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

type Path = Array<string | number>;

/** Every node's path in `v` (the root is []), depth-first, at most `max` of them. */
function paths(v: unknown, max = 5000): Path[] {
  const out: Path[] = [[]];
  const stack: Array<{ v: unknown; p: Path }> = [{ v, p: [] }];
  while (stack.length > 0 && out.length < max) {
    const { v: cur, p } = stack.pop()!;
    const children: Array<[string | number, unknown]> = Array.isArray(cur) ? cur.map((c, i) => [i, c]) : typeof cur === 'object' && cur !== null ? Object.entries(cur) : [];
    for (const [k, c] of children) {
      out.push([...p, k]);
      stack.push({ v: c, p: [...p, k] });
    }
  }
  return out;
}

function get(v: unknown, p: Path): unknown {
  let cur = v;
  for (const k of p) cur = (cur as Record<string | number, unknown>)[k];
  return cur;
}

/** A bad value of another type than `old`. */
function wrongType(r: () => number, old: unknown): unknown {
  const all: unknown[] = [null, true, false, [], {}, '', 0, [old], { value: old }, String(old), typeof old === 'string' && old !== '' && Number.isFinite(Number(old)) ? Number(old) : 'x'];
  return pick(
    r,
    all.filter((x) => typeof x !== typeof old || (Array.isArray(x) !== Array.isArray(old))),
  );
}

/** Nested arrays or objects `depth` deep around `inner`. */
export function nested(depth: number, inner: unknown, asObject = false): unknown {
  let v = inner;
  for (let i = 0; i < depth; i++) v = asObject ? { a: v } : [v];
  return v;
}

/** Applies one mutation to `root` (a fresh clone the caller owns) and returns the new root. */
function mutateOnce(r: () => number, root: unknown, mutation: JsonMutation): { root: unknown; at: string } {
  const all = paths(root);
  // Numbers and strings that look like dates are where parsers go wrong: aim there more often.
  const numbers = all.filter((p) => typeof get(root, p) === 'number');
  const dates = all.filter((p) => {
    const x = get(root, p);
    return typeof x === 'string' && /^\d{4}-\d\d-\d\d|^[A-Z][a-z]{2}, \d/.test(x);
  });
  const leaf = (prefer: Path[]): Path => (prefer.length > 0 && r() < 0.85 ? pick(r, prefer) : pick(r, all));
  const set = (p: Path, value: unknown): unknown => {
    if (p.length === 0) return value;
    (get(root, p.slice(0, -1)) as Record<string | number, unknown>)[p[p.length - 1]!] = value;
    return root;
  };
  const at = (p: Path) => (p.length === 0 ? '(root)' : p.join('.'));
  switch (mutation) {
    case 'none':
      return { root, at: '(none)' };
    case 'number': {
      const p = leaf(numbers);
      return { root: set(p, pick(r, BAD_NUMBERS)), at: at(p) };
    }
    case 'date': {
      const p = leaf(dates);
      return { root: set(p, pick(r, BAD_DATES)), at: at(p) };
    }
    case 'epoch': {
      const p = leaf(dates.length > 0 ? dates : numbers);
      return { root: set(p, pick(r, BAD_EPOCHS)), at: at(p) };
    }
    case 'type': {
      const p = leaf([...numbers, ...dates]);
      return { root: set(p, wrongType(r, get(root, p))), at: at(p) };
    }
    case 'remove': {
      const p = pick(r, all.length > 1 ? all.slice(1) : all);
      if (p.length === 0) return { root: undefined, at: '(root)' };
      const parent = get(root, p.slice(0, -1));
      const k = p[p.length - 1]!;
      if (Array.isArray(parent)) parent.splice(k as number, 1);
      else delete (parent as Record<string, unknown>)[k as string];
      return { root, at: at(p) };
    }
    case 'extra': {
      const objs = all.filter((p) => {
        const x = get(root, p);
        return typeof x === 'object' && x !== null;
      });
      if (objs.length === 0) return { root, at: '(no object)' };
      const p = pick(r, objs);
      const o = get(root, p) as Record<string | number, unknown>;
      const name = pick(r, ['__proto__', 'constructor', 'prototype', 'extra', 'value', 'id', '', 'x'.repeat(300)]);
      const value = pick(r, [1, 'x', null, { polluted: true }, [1, 2], NaN]);
      if (Array.isArray(o)) o.push(value);
      else Object.defineProperty(o, name, { value, enumerable: true, writable: true, configurable: true });
      return { root, at: `${at(p)}.${name.slice(0, 20)}` };
    }
    case 'huge-string': {
      const p = leaf(all.filter((q) => typeof get(root, q) === 'string'));
      return { root: set(p, pick(r, ['x', '9', '\u0000', '😀', '<a>', '{']).repeat(Math.floor(HUGE / 2))), at: at(p) };
    }
    case 'unicode': {
      const p = leaf(all.filter((q) => typeof get(root, q) === 'string'));
      const old = get(root, p);
      const s = pick(r, BAD_STRINGS);
      return { root: set(p, typeof old === 'string' && r() < 0.5 ? old + s : s), at: at(p) };
    }
    case 'deep': {
      const p = pick(r, all);
      return { root: set(p, nested(100 + Math.floor(r() * 2000), get(root, p), r() < 0.5)), at: at(p) };
    }
    case 'repeat': {
      const arrays = all.filter((q) => Array.isArray(get(root, q)) && (get(root, q) as unknown[]).length > 0);
      if (arrays.length === 0) return { root, at: '(no array)' };
      const p = pick(r, arrays);
      const a = get(root, p) as unknown[];
      const n = pick(r, [2, 10, 1001, 3000]);
      const el = a[Math.floor(r() * a.length)];
      for (let i = 0; i < n; i++) a.push(structuredClone(el));
      return { root, at: at(p) };
    }
    case 'replace-root':
    default:
      return { root: pick(r, [null, [], 'x', 0, NaN, true, [root], { data: root }]), at: '(root)' };
  }
}

/** One fuzz case of a JSON fixture: 1–3 mutations (index `i`'s draw picks them); `fixture` is not changed. */
export function mutateJson(r: () => number, fixture: unknown): { value: unknown; mutations: JsonMutation[]; at: string[] } {
  let root = structuredClone(fixture);
  const n = 1 + Math.floor(r() * r() * 3);
  const mutations: JsonMutation[] = [];
  const at: string[] = [];
  for (let k = 0; k < n; k++) {
    // Number, date and type mutations make most of the cases; the rest share what is left.
    const x = r();
    const m: JsonMutation = x < 0.25 ? 'number' : x < 0.4 ? 'date' : x < 0.48 ? 'epoch' : x < 0.58 ? 'type' : pick(r, JSON_MUTATIONS);
    const out = mutateOnce(r, root, m);
    root = out.root;
    mutations.push(m);
    at.push(out.at);
    if (typeof root !== 'object' || root === null) break;
  }
  return { value: root, mutations, at };
}

/** JSON text of a mutated value: NaN and ±Infinity written as bare words (what a broken encoder sends), sometimes cut short. */
export function jsonText(r: () => number, value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? `\u0000${String(v)}\u0000` : v)) ?? 'undefined';
  } catch {
    text = '[]'; // a structure too deep for JSON.stringify's stack
  }
  text = text.replace(/"\\u0000(NaN|-?Infinity)\\u0000"/g, '$1');
  if (r() < 0.05) text = text.slice(0, Math.floor(r() * text.length));
  return text;
}

const NUMBER_TOKEN = /(?<![\w.:-])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w:])/g;
const DATE_TOKEN = /\d{4}-\d\d-\d\d(?:[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?)?|[A-Z][a-z]{2}, \d{1,2} [A-Z][a-z]{2} \d{4} [\d:]+ [A-Z+\-\d]+/g;

function replaceNth(text: string, re: RegExp, r: () => number, make: () => string): string {
  const hits = [...text.matchAll(re)];
  if (hits.length === 0) return text;
  const h = hits[Math.floor(r() * hits.length)]!;
  return text.slice(0, h.index) + make() + text.slice(h.index! + h[0].length);
}

/** One fuzz case of a text fixture (1–3 mutations); `deepOpen`/`deepClose` are the format's nesting (`<x>`, `</x>`). */
export function mutateText(r: () => number, fixture: string, deep: { open: string; close: string } = { open: '[', close: ']' }): { text: string; mutations: TextMutation[] } {
  let text = fixture;
  const n = 1 + Math.floor(r() * r() * 3);
  const mutations: TextMutation[] = [];
  for (let k = 0; k < n; k++) {
    const x = r();
    const m: TextMutation = x < 0.35 ? 'number' : x < 0.5 ? 'date' : pick(r, TEXT_MUTATIONS);
    mutations.push(m);
    const lines = text.split('\n');
    const line = Math.floor(r() * lines.length);
    switch (m) {
      case 'none':
        break;
      case 'number':
        text = replaceNth(text, NUMBER_TOKEN, r, () => pick(r, BAD_NUMBER_TEXT));
        break;
      case 'date':
        text = replaceNth(text, DATE_TOKEN, r, () => pick(r, BAD_DATES));
        break;
      case 'truncate':
        text = text.slice(0, Math.floor(r() * text.length));
        break;
      case 'drop-line':
        lines.splice(line, 1);
        text = lines.join('\n');
        break;
      case 'repeat-line':
        lines.splice(line, 0, ...Array.from({ length: pick(r, [1, 5, 1000]) }, () => lines[line] ?? ''));
        text = lines.join('\n');
        break;
      case 'control': {
        const at = Math.floor(r() * (text.length + 1));
        text = text.slice(0, at) + pick(r, BAD_STRINGS) + text.slice(at);
        break;
      }
      case 'huge-line':
        lines.splice(line, 0, pick(r, ['x', '9', '#', '{', ' ', '"']).repeat(HUGE));
        text = lines.join('\n');
        break;
      case 'overwrite': {
        const at = Math.floor(r() * text.length);
        const len = 1 + Math.floor(r() * 8);
        text = text.slice(0, at) + Array.from({ length: len }, () => String.fromCharCode(Math.floor(r() * 0x80))).join('') + text.slice(at + len);
        break;
      }
      case 'deep': {
        const d = 100 + Math.floor(r() * 5000);
        const at = Math.floor(r() * (text.length + 1));
        text = text.slice(0, at) + deep.open.repeat(d) + deep.close.repeat(r() < 0.5 ? d : 0) + text.slice(at);
        break;
      }
      case 'blank':
      default:
        text = pick(r, ['', ' ', '\n', '\ufeff', 'null', '<html><body>502 Bad Gateway</body></html>']);
        break;
    }
  }
  return { text, mutations };
}

/** Why `s` is not a signal the state layer stores at `now` (validateSignal's message), or null when it is one. */
export function signalProblem(s: unknown, now: number, regions: ReadonlySet<string>): string | null {
  try {
    validateSignal(structuredClone(s), now, regions);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** A short, reproducible name of one case for a failure message. */
export function caseName(seed: number, i: number, what: unknown): string {
  let shown: string;
  try {
    shown = JSON.stringify(what) ?? String(what);
  } catch {
    shown = String(what);
  }
  return `seed ${seed} case ${i} (${shown.slice(0, 300)})`;
}

/** What one fuzz test saw: cases by mutation, outcomes, and the first failures (reproducible by seed and case). */
export class FuzzTally {
  readonly byMutation: Record<string, number> = {};
  readonly outcomes: Record<string, number> = {};
  readonly failures: string[] = [];
  cases = 0;
  constructor(
    readonly what: string,
    readonly seed: number,
  ) {}

  /** Counts one case and its mutations. */
  case(mutations: readonly string[]): void {
    this.cases++;
    for (const m of mutations) this.byMutation[m] = (this.byMutation[m] ?? 0) + 1;
  }

  /** Counts an outcome of a case (`signal`, `rejected`, …). */
  saw(outcome: string, n = 1): void {
    this.outcomes[outcome] = (this.outcomes[outcome] ?? 0) + n;
  }

  /** Records a broken invariant (the first 20 are kept). */
  fail(name: string, why: string): void {
    if (this.failures.length < 20) this.failures.push(`${name}: ${why}`);
    else if (this.failures.length === 20) this.failures.push('…');
  }

  /**
   * Checks the refusals of one case: `count` refused (by the collector's counter), each logged
   * in one of `lines` whose message names the field (`names`). Counts them as `outcome`.
   */
  refusals(name: string, outcome: string, count: number, lines: readonly LogLine[], names: RegExp, text: (l: LogLine) => string = (l) => l.msg): void {
    if (count <= 0) return;
    this.saw(outcome, count);
    if (lines.length === 0) this.fail(name, `${count} refused (counted) but nothing logged`);
    for (const l of lines) if (!names.test(text(l))) this.fail(name, `a refusal does not name the field: ${text(l).slice(0, 200)}`);
  }

  /** Checks what one case emitted and logged: no error-level line, every signal one the state layer stores at `now`. */
  emitted(name: string, signals: readonly unknown[], logs: readonly LogLine[], now: number, regions: ReadonlySet<string>): void {
    for (const l of logs) if (l.level >= 50) this.fail(name, `error logged: ${l.msg}`);
    for (const s of signals) {
      const why = signalProblem(s, now, regions);
      if (why !== null) this.fail(name, `emitted a signal the state layer refuses (${why}): ${JSON.stringify(s).slice(0, 300)}`);
    }
    this.saw('signals', signals.length);
  }

  /** Prints the summary (stdout and the test's diagnostics) and returns the failures (the test asserts there are none). */
  report(tc: { diagnostic(message: string): void }): string[] {
    console.log(this.summary());
    tc.diagnostic(this.summary());
    return this.failures;
  }

  /** One line for the test's output: the seed, the case count and what they did. */
  summary(): string {
    return `payload fuzz ${this.what}: seed ${this.seed}, ${this.cases} cases; outcomes ${JSON.stringify(this.outcomes)}; mutations ${JSON.stringify(this.byMutation)}`;
  }
}

/** A log line as pino writes it (the fields the fuzz tests read). */
export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** A collector context for a fuzz case: a fixed clock (or one the test moves), the given regions, emits and log lines collected. */
export function fuzzContext<C>(config: C, now: number | (() => number), regions: ReadonlySet<string>): { ctx: CollectorContext<C>; emitted: Signal[]; logs: LogLine[] } {
  const emitted: Signal[] = [];
  const logs: LogLine[] = [];
  const ctx: CollectorContext<C> = {
    config,
    log: pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) }),
    now: typeof now === 'function' ? now : () => now,
    node: 'test-node',
    fleet: () => [...regions].map((id) => ({ id, endpoints: ['192.0.2.1'] })),
    signal: new AbortController().signal,
    emit: (s) => void emitted.push(s),
  };
  return { ctx, emitted, logs };
}
