/**
 * A parser of the Prometheus text exposition format 0.0.4, written for hostile input: it
 * never loops beyond one pass over the text, never recurses, and never keeps more than
 * `maxSeries` samples (the caller bounds the text's size). It is strict like Prometheus's
 * own parser: the first malformed line fails the whole text with an ExpositionError naming
 * the line, so a truncated or foreign body is never half-read.
 *
 * What it accepts (https://prometheus.io/docs/instrumenting/exposition_formats/):
 * - `name{label="value",…} value [timestamp]`: names `[a-zA-Z_:][a-zA-Z0-9_:]*`, label names
 *   `[a-zA-Z_][a-zA-Z0-9_]*`, label values with the escapes `\\`, `\"` and `\n` (any other
 *   escape is an error), an optional trailing comma, `{}`, blanks and tabs between tokens;
 * - values as Go's ParseFloat reads decimals: `1`, `-2.5e3`, `.5`, `NaN`, `+Inf`, `-Inf`,
 *   `Inf` (case-insensitive); hexadecimal and `_` separators are errors;
 * - an optional integer timestamp (ms epoch, may be negative);
 * - `# HELP name text` (with `\\` and `\n` escapes) and `# TYPE name type` (type one of
 *   counter, gauge, histogram, summary, untyped; a second TYPE for a name is ignored);
 *   every other `#` line is a comment; blank lines, `\r\n` endings and a leading BOM are fine.
 *
 * Duplicate series (same name and label set) are kept once: the last one wins, and
 * `duplicates` counts the others.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

/** One sample line. `labels` has a null prototype (a label may be named `__proto__`). */
export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
  /** ms epoch, when the line carried one. */
  timestamp?: number;
}

export interface Exposition {
  /** Kept samples, one per series, in the order each series first appeared. */
  samples: Sample[];
  /** TYPE of each kept metric name that declared one. */
  types: Map<string, MetricType>;
  /** HELP text of each kept metric name that declared one (unescaped). */
  help: Map<string, string>;
  /** Sample lines read, of every name (kept or not), duplicates included. */
  lines: number;
  /** Kept sample lines that repeated an earlier series (the later one won). */
  duplicates: number;
}

export interface ParseOptions {
  /** At most this many sample lines (of any name); more fails the text. Default 100 000. */
  maxSeries?: number;
  /** Keep only samples (and HELP/TYPE) of names this accepts; others are checked and counted only. Default: keep all. */
  keep?: (name: string) => boolean;
}

/** The text is not valid exposition format (or is too large); `line` is 1-based. */
export class ExpositionError extends Error {
  constructor(
    readonly line: number,
    readonly reason: string,
  ) {
    super(`line ${line}: ${reason}`);
    this.name = 'ExpositionError';
  }
}

export const DEFAULT_MAX_SERIES = 100_000;

const TYPES: ReadonlySet<string> = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
/**
 * Go's decimal float syntax, written so that no two quantifiers can match the same digit
 * (`\d+(?:\.\d*)?`, not `\d+\.?\d*`, which backtracks quadratically on a long run of digits
 * that does not end a number); and a value token longer than VALUE_MAX is no number at all, so
 * one token's match is bounded whatever the pattern (Go formats any float64 in 24 characters).
 */
const FLOAT = /^[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)$/i;
/** The longest value token read as a number. */
export const VALUE_MAX = 128;
const TIMESTAMP = /^-?\d{1,19}$/;

const isBlank = (c: number): boolean => c === 0x20 || c === 0x09;
const isLetter = (c: number): boolean => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f; // a-z A-Z _
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isNameStart = (c: number): boolean => isLetter(c) || c === 0x3a; // plus ':'
const isNameChar = (c: number): boolean => isLetter(c) || isDigit(c) || c === 0x3a;
const isLabelChar = (c: number): boolean => isLetter(c) || isDigit(c);

/** A value token as a number, or null when it is not one (or longer than VALUE_MAX characters). */
export function parseValue(tok: string): number | null {
  if (tok.length > VALUE_MAX || !FLOAT.test(tok)) return null;
  const lower = tok.toLowerCase();
  if (lower.endsWith('nan')) return NaN;
  if (lower.endsWith('inf') || lower.endsWith('infinity')) return tok.startsWith('-') ? -Infinity : Infinity;
  return Number(tok);
}

/** A stable id of a series: its name and its label pairs sorted by label name. */
export function seriesId(name: string, labels: Readonly<Record<string, string>>): string {
  const keys = Object.keys(labels).sort();
  let id = name;
  for (const k of keys) id += `\u0000${k}\u0000${labels[k]}`;
  return id;
}

/** A cursor over one line. */
class Line {
  pos: number;
  constructor(
    readonly text: string,
    start: number,
    readonly end: number,
    readonly no: number,
  ) {
    this.pos = start;
  }

  fail(reason: string): never {
    throw new ExpositionError(this.no, reason);
  }

  atEnd(): boolean {
    return this.pos >= this.end;
  }

  peek(): number {
    return this.pos < this.end ? this.text.charCodeAt(this.pos) : -1;
  }

  skipBlanks(): number {
    const from = this.pos;
    while (this.pos < this.end && isBlank(this.text.charCodeAt(this.pos))) this.pos++;
    return this.pos - from;
  }

  /** A metric name, or fail. */
  name(what: string): string {
    const from = this.pos;
    if (!isNameStart(this.peek())) this.fail(`${what}: expected a metric name, got ${this.shown()}`);
    this.pos++;
    while (this.pos < this.end && isNameChar(this.text.charCodeAt(this.pos))) this.pos++;
    return this.text.slice(from, this.pos);
  }

  /** The run of characters up to the next blank or the end. */
  token(): string {
    const from = this.pos;
    while (this.pos < this.end && !isBlank(this.text.charCodeAt(this.pos))) this.pos++;
    return this.text.slice(from, this.pos);
  }

  /** What is at the cursor, short, for a message. */
  shown(): string {
    if (this.atEnd()) return 'the end of the line';
    const s = this.text.slice(this.pos, Math.min(this.end, this.pos + 20));
    return JSON.stringify(this.pos + 20 < this.end ? `${s}…` : s);
  }

  /** `{a="x",b="y"}` from the cursor (at `{`), into a null-prototype record. */
  labels(): Record<string, string> {
    const out = Object.create(null) as Record<string, string>;
    this.pos++; // '{'
    while (true) {
      this.skipBlanks();
      if (this.peek() === 0x7d) {
        this.pos++;
        return out;
      }
      const from = this.pos;
      const c = this.peek();
      if (!isLetter(c)) this.fail(`expected a label name or "}", got ${this.shown()}`);
      while (this.pos < this.end && isLabelChar(this.text.charCodeAt(this.pos))) this.pos++;
      const label = this.text.slice(from, this.pos);
      if (label in out) this.fail(`label ${label} appears twice`);
      this.skipBlanks();
      if (this.peek() !== 0x3d) this.fail(`expected "=" after label ${label}, got ${this.shown()}`);
      this.pos++;
      this.skipBlanks();
      if (this.peek() !== 0x22) this.fail(`expected a quoted value for label ${label}, got ${this.shown()}`);
      this.pos++;
      out[label] = this.quoted(label);
      this.skipBlanks();
      const sep = this.peek();
      if (sep === 0x2c) this.pos++;
      else if (sep !== 0x7d) this.fail(`expected "," or "}" after label ${label}, got ${this.shown()}`);
    }
  }

  /** A label value after its opening quote, up to and past the closing one. */
  private quoted(label: string): string {
    let out = '';
    let run = this.pos;
    while (this.pos < this.end) {
      const c = this.text.charCodeAt(this.pos);
      if (c === 0x22) {
        out += this.text.slice(run, this.pos);
        this.pos++;
        return out;
      }
      if (c === 0x5c) {
        out += this.text.slice(run, this.pos);
        const e = this.pos + 1 < this.end ? this.text.charCodeAt(this.pos + 1) : -1;
        if (e === 0x5c) out += '\\';
        else if (e === 0x22) out += '"';
        else if (e === 0x6e) out += '\n';
        else this.fail(`label ${label}: invalid escape ${e < 0 ? 'at the end of the line' : JSON.stringify(`\\${String.fromCharCode(e)}`)} (only \\\\, \\" and \\n)`);
        this.pos += 2;
        run = this.pos;
        continue;
      }
      this.pos++;
    }
    return this.fail(`label ${label}: the value has no closing quote`);
  }
}

/** HELP text with `\\` and `\n` unescaped (other backslashes kept, as Prometheus does). */
function unescapeHelp(s: string): string {
  return s.includes('\\') ? s.replace(/\\([\\n])/g, (_, c: string) => (c === 'n' ? '\n' : '\\')) : s;
}

/**
 * Parses `text`. Throws ExpositionError on the first malformed line or when it holds more
 * than `maxSeries` sample lines. Time and memory are linear in the text's length.
 */
export function parseExposition(text: string, opts: ParseOptions = {}): Exposition {
  const maxSeries = opts.maxSeries ?? DEFAULT_MAX_SERIES;
  const keep = opts.keep ?? (() => true);
  const samples: Sample[] = [];
  const index = new Map<string, number>();
  const types = new Map<string, MetricType>();
  const help = new Map<string, string>();
  let lines = 0;
  let duplicates = 0;
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let no = 0;
  while (start <= text.length) {
    let nl = text.indexOf('\n', start);
    if (nl < 0) nl = text.length;
    let end = nl;
    if (end > start && text.charCodeAt(end - 1) === 0x0d) end--;
    no++;
    const l: Line = new Line(text, start, end, no);
    start = nl + 1;
    l.skipBlanks();
    if (l.atEnd()) continue;
    if (l.peek() === 0x23) {
      // '#': HELP, TYPE or a comment.
      l.pos++;
      l.skipBlanks();
      const word = l.token();
      if (word !== 'HELP' && word !== 'TYPE') continue;
      if (l.skipBlanks() === 0) l.fail(`# ${word}: expected a metric name, got ${l.shown()}`);
      const name = l.name(`# ${word}`);
      if (!l.atEnd() && l.skipBlanks() === 0) l.fail(`# ${word}: the metric name ends in ${l.shown()}`);
      if (word === 'TYPE') {
        const type = l.token();
        if (!TYPES.has(type)) l.fail(`# TYPE ${name}: expected counter, gauge, histogram, summary or untyped, got ${JSON.stringify(type.slice(0, 40))}`);
        l.skipBlanks();
        if (!l.atEnd()) l.fail(`# TYPE ${name} ${type}: unexpected ${l.shown()} after the type`);
        if (keep(name) && !types.has(name)) types.set(name, type as MetricType);
      } else if (keep(name)) {
        help.set(name, unescapeHelp(text.slice(l.pos, end)));
      }
      continue;
    }
    const name = l.name('sample');
    lines++;
    if (lines > maxSeries) l.fail(`more than ${maxSeries} series`);
    const blanksAfterName = l.skipBlanks();
    let labels: Record<string, string> | null = null;
    if (l.peek() === 0x7b) {
      labels = l.labels();
      if (l.skipBlanks() === 0) l.fail(`${name}: expected a blank then the value, got ${l.shown()}`);
    } else if (blanksAfterName === 0) {
      l.fail(`${name}: expected "{" or a blank after the name, got ${l.shown()}`);
    }
    if (l.atEnd()) l.fail(`${name}: the value is missing`);
    const vtok = l.token();
    const value = parseValue(vtok);
    if (value === null) l.fail(`${name}: the value ${JSON.stringify(vtok.slice(0, 40))} is not a number`);
    let timestamp: number | undefined;
    if (l.skipBlanks() > 0 && !l.atEnd()) {
      const ttok = l.token();
      if (!TIMESTAMP.test(ttok)) l.fail(`${name}: the timestamp ${JSON.stringify(ttok.slice(0, 40))} is not an integer (ms)`);
      timestamp = Number(ttok);
      l.skipBlanks();
      if (!l.atEnd()) l.fail(`${name}: unexpected ${l.shown()} after the timestamp`);
    } else if (!l.atEnd()) {
      l.fail(`${name}: unexpected ${l.shown()} after the value`);
    }
    if (!keep(name)) continue;
    const sample: Sample = { name, labels: labels ?? (Object.create(null) as Record<string, string>), value };
    if (timestamp !== undefined) sample.timestamp = timestamp;
    const id = seriesId(name, sample.labels);
    const at = index.get(id);
    if (at === undefined) {
      index.set(id, samples.length);
      samples.push(sample);
    } else {
      samples[at] = sample;
      duplicates++;
    }
  }
  return { samples, types, help, lines, duplicates };
}
