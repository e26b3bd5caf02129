/**
 * The README's console examples as data: every ```console block of a Markdown file, split
 * into commands (`$ …`, with `\` continuation lines) and the output shown under each, and a
 * matcher that compares a command's real output with the shown one after normalising only
 * what must vary between runs (test/readme.test.ts).
 *
 * Blank lines are ignored on both sides. A line that is only `…` stands for any number of
 * lines; `…` inside a line stands for any text on that line. A block preceded by
 * `<!-- readme-test: not run: REASON -->` is listed as not run, with its reason.
 */

export interface Example {
  /** The command as shown, continuation lines joined (without the `$ `). */
  command: string;
  /** The output shown under it, one string per line. */
  expected: string[];
  /** 1-based line of the `$` in the file. */
  line: number;
}

export interface ConsoleBlock {
  /** The nearest `## ` heading above the block. */
  section: string;
  /** 1-based line of the opening fence. */
  line: number;
  examples: Example[];
  /** Set when the block is marked `<!-- readme-test: not run: … -->`. */
  notRun?: string;
}

export function consoleBlocks(markdown: string): ConsoleBlock[] {
  const lines = markdown.split('\n');
  const blocks: ConsoleBlock[] = [];
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l.startsWith('## ')) section = l.slice(3).trim();
    if (l.trim() !== '```console') continue;
    let notRun: string | undefined;
    for (let j = i - 1; j >= 0 && j >= i - 3; j--) {
      const m = /^<!-- readme-test: not run: (.+) -->$/.exec(lines[j]!.trim());
      if (m) notRun = m[1];
    }
    const block: ConsoleBlock = { section, line: i + 1, examples: [], ...(notRun ? { notRun } : {}) };
    let j = i + 1;
    for (; j < lines.length && lines[j]!.trim() !== '```'; j++) {
      const t = lines[j]!;
      if (t.startsWith('$ ')) {
        let command = t.slice(2);
        const line = j + 1;
        while (command.endsWith('\\') && j + 1 < lines.length) {
          j++;
          command = `${command.slice(0, -1)} ${lines[j]!.trim()}`;
        }
        block.examples.push({ command, expected: [], line });
      } else {
        const ex = block.examples[block.examples.length - 1];
        if (!ex) throw new Error(`readme: line ${j + 1}: output before the first command of the block at line ${i + 1}`);
        ex.expected.push(t);
      }
    }
    blocks.push(block);
    i = j;
  }
  return blocks;
}

export interface Normalise {
  /** Exact strings replaced by a placeholder before comparing (e.g. the home directory → `~`). */
  replace?: [string, string][];
}

/**
 * What varies between runs and is not the example's point: DNS message ids, 16-hex-digit
 * version and plan ids, ISO 8601 instants and clock times, epoch milliseconds, and the
 * per-node EDNS options (COOKIE, NSID) in dig's OPT pseudosection.
 */
export function normaliseLine(line: string, n: Normalise = {}): string | null {
  let s = line.replace(/\s+$/, '');
  for (const [from, to] of n.replace ?? []) s = s.split(from).join(to);
  if (/^; (COOKIE|NSID): /.test(s)) return null;
  s = s.replace(/\bid: \d+/g, 'id: <id>');
  s = s.replace(/\b[0-9a-f]{16}\b/g, '<hex>');
  s = s.replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?Z\b/g, '<instant>');
  s = s.replace(/\b\d\d:\d\d:\d\d\b/g, '<clock>');
  s = s.replace(/\b1[7-9]\d{11}\b/g, '<epoch-ms>');
  s = s.replace(/\t+/g, ' ').replace(/ {2,}/g, ' ');
  return s;
}

function lineMatches(expected: string, actual: string): boolean {
  if (!expected.includes('…')) return expected === actual;
  const re = expected
    .split('…')
    .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${re}$`).test(actual);
}

/** Does `actual` (one string per line) show what `expected` shows? Both are normalised here. */
export function outputMatches(expected: string[], actual: string[], n: Normalise = {}): boolean {
  const norm = (ls: string[]) => ls.map((l) => normaliseLine(l, n)).filter((l): l is string => l !== null && l !== '');
  const e = norm(expected);
  const a = norm(actual);
  const go = (i: number, j: number): boolean => {
    if (i === e.length) return j === a.length;
    if (e[i] === '…') {
      for (let k = j; k <= a.length; k++) if (go(i + 1, k)) return true;
      return false;
    }
    return j < a.length && lineMatches(e[i]!, a[j]!) && go(i + 1, j + 1);
  };
  return go(0, 0);
}

/** Both sides normalised, for a failure message. */
export function showNormalised(lines: string[], n: Normalise = {}): string {
  return lines
    .map((l) => normaliseLine(l, n))
    .filter((l): l is string => l !== null && l !== '')
    .join('\n');
}
