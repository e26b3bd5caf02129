/**
 * Reading YAML for people: the file, parsed with line numbers; every problem as a ConfigIssue
 * naming the file, the line, the path inside the file and the fix. Shared by the
 * configuration loader (load.ts) and the simulator's scenario loader (gslb/sim/scenario.ts).
 */
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument, isMap, isPair, isSeq, isScalar, isCollection, type Node as YamlNode, type YAMLError } from 'yaml';

/** One problem in one file. `path` is rendered as `zones[0].soa.serial` ('' for the whole file). */
export interface ConfigIssue {
  /** Absolute path of the file at fault. */
  file: string;
  /** 1-based line and column of the offending key or value, when the file could be parsed. */
  line?: number;
  column?: number;
  path: string;
  /** What is wrong, what is expected, and how to fix it. */
  message: string;
}

/** One line: `  FILE:LINE:COL: path: message` (`FILE: …` when there is no line). */
export function formatIssue(i: ConfigIssue): string {
  const where = i.line ? `${i.file}:${i.line}:${i.column ?? 1}` : i.file;
  return `  ${where}: ${i.path || '(top level)'}: ${i.message}`;
}

export interface ParsedFile {
  file: string;
  raw: Buffer;
  data: unknown;
  doc: ReturnType<typeof parseDocument>;
  lines: LineCounter;
}

/** How to fix a YAML syntax error, by the parser's error code. */
const YAML_FIXES: Partial<Record<YAMLError['code'], string>> = {
  DUPLICATE_KEY: 'a key appears twice in the same mapping: remove one or merge them',
  TAB_AS_INDENT: 'indent with spaces, not tabs',
  BAD_INDENT: 'check the indentation and that every [ and { is closed',
  MULTIPLE_DOCS: 'keep a single document: remove the second "---"',
  BLOCK_AS_IMPLICIT_KEY: 'put a value containing ": " in quotes, or start the nested mapping on its own line',
  MULTILINE_IMPLICIT_KEY: 'put a key on one line, and quote values that contain ": " or " #"',
  BAD_ALIAS: 'define the anchor (&name) before using it (*name)',
};

export function parseYamlFile(file: string, issues: ConfigIssue[]): ParsedFile | null {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'it does not exist' : code === 'EISDIR' ? 'it is a folder' : code ?? String(e);
    issues.push({ file, path: '', message: `cannot read the file (${why}): check the path` });
    return null;
  }
  const text = raw.toString('utf8');
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    // The parser reports an unclosed bracket or quote at the end of the file; point at the last line with content instead.
    // Later errors mostly follow from the first (the parser resynchronises badly): report the first.
    const end = text.trimEnd().length;
    const err = doc.errors[0]!;
    const pos = lines.linePos(Math.min(err.pos[0], Math.max(0, end - 1)));
    const fix = YAML_FIXES[err.code] ?? 'check the indentation (spaces), brackets and quotes';
    const more = doc.errors.length > 1 ? ` (then check again: ${doc.errors.length - 1} more YAML error${doc.errors.length > 2 ? 's' : ''} after it may follow from this one)` : '';
    issues.push({ file, line: pos.line, column: pos.col, path: '', message: `YAML syntax: ${err.message.split('\n')[0]}: ${fix}${more}` });
    return null;
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    issues.push({ file, path: '', message: `YAML: ${(e as Error).message.split('\n')[0]}: define every anchor (&name) before its aliases (*name), and use few aliases` });
    return null;
  }
  return { file, raw, data, doc, lines };
}

/**
 * Finds the YAML node at a path and returns its position. `at: 'key'` gives the position of
 * the last key on the path (for unknown or missing keys); 'value' the value's, or the key's
 * when the value is a block collection starting on a later line. A path that leaves the
 * document stops at the deepest node found.
 */
export function locateIn(pf: ParsedFile, path: (string | number)[], at: 'key' | 'value' = 'value'): { line?: number; column?: number } {
  let node: unknown = pf.doc.contents;
  let keyNode: YamlNode | null = null;
  let valueNode: YamlNode | null = (node as YamlNode) ?? null;
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) break;
      keyNode = (pair.key as YamlNode) ?? keyNode;
      node = pair.value;
      valueNode = (node as YamlNode) ?? keyNode;
    } else if (isSeq(node)) {
      const item = node.items[Number(seg)];
      if (!item) break;
      node = item;
      keyNode = null;
      valueNode = item as YamlNode;
    } else break;
  }
  const pos = (n: YamlNode | null) => (n?.range ? pf.lines.linePos(n.range[0]) : undefined);
  const k = pos(keyNode);
  const v = pos(valueNode);
  let p = at === 'key' ? (k ?? v) : v;
  if (at === 'value' && k && v && v.line > k.line && isCollection(valueNode)) p = k;
  return p ? { line: p.line, column: p.col } : {};
}

export function pointerToPath(pointer: string): (string | number)[] {
  if (!pointer) return [];
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** Renders ['zones', 0, 'soa'] as `zones[0].soa`. */
export function renderPath(path: (string | number)[]): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${seg}` : seg;
  return out;
}

/** The known key closest to an unknown one (a typo or different case), if any is close. */
export function closest(word: string, candidates: string[]): string | undefined {
  // Edit distance counting a swap of two neighbours as one edit (optimal string alignment).
  const dist = (a: string, b: string): number => {
    const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
    for (let i = 1; i <= a.length; i++) {
      for (let j = 1; j <= b.length; j++) {
        const row = d[i]!;
        row[j] = Math.min(d[i - 1]![j]! + 1, row[j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
        if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1);
      }
    }
    return d[a.length]![b.length]!;
  };
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const dd = c.toLowerCase() === word.toLowerCase() ? 0 : dist(word.toLowerCase(), c.toLowerCase());
    if (dd < bestD) [best, bestD] = [c, dd];
  }
  return best !== undefined && bestD <= Math.max(1, Math.floor(word.length / 3)) ? best : undefined;
}

/** The value found, for a message: ` (got 5)`, ` (got an empty value)`. */
export function got(v: unknown): string {
  if (v === undefined) return '';
  if (v === null) return ' (got an empty value)';
  const s = JSON.stringify(v) ?? String(v);
  return ` (got ${s.length > 60 ? s.slice(0, 59) + '…' : s})`;
}
