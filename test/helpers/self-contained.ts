/**
 * The repository stands on its own (docs/conventions.md "The repository stands on its own"):
 * a checker over the texts of tracked files that reports, by file and line, every reference a
 * clone of the repository could not follow:
 *
 * - a path outside the repository: a folder beside the checkout reached by `..` (the sibling
 *   folder named in OUTSIDE_PATHS), or an absolute path of the machine the repository was
 *   written on;
 * - a bare upper-case Markdown file name (no folder before it) that no tracked file has: a
 *   document kept somewhere else;
 * - in Markdown, a relative link (inline, image or reference definition) that resolves above
 *   the repository root, to a file that is not tracked, or to a heading the target lacks;
 * - anywhere, a plain-text section reference (a Markdown path followed by `#anchor`, or by a
 *   space and a quoted heading) to a tracked Markdown file that has no such heading. A quoted
 *   heading names a section by its first words: it matches a heading that begins with them,
 *   after the heading's own number ("4. Upgrades without dropping queries" for "Upgrades").
 *
 * Pure: it is handed the files (repository path → text) and returns what breaks the rule, in
 * words; test/self-contained.test.ts runs it over `git ls-files` and over hand-made cases.
 */
import { posix } from 'node:path';

/** One reference a clone cannot follow. */
export interface Violation {
  file: string;
  line: number;
  message: string;
}

/**
 * Paths outside the repository, as patterns of their text. Spelled without the literal paths
 * so that this file does not name them itself.
 */
const OUTSIDE_PATHS: readonly { pattern: RegExp; why: string }[] = [
  { pattern: new RegExp(`\\.\\./${'shared'}\\b`), why: 'a folder beside the checkout, which a clone does not have' },
  { pattern: new RegExp(`(?<![\\w.-])/${'work'}/`), why: 'an absolute path of the machine the repository was written on' },
];

/** A bare upper-case Markdown file name (no directory before it). */
const BARE_UPPER_MD = /(?<![\w./-])([A-Z][A-Z0-9_-]*\.md)\b/g;

/** A plain-text reference to a section of a Markdown file: `path.md#anchor` or `path.md "Heading"`. */
const SECTION_REF = /(?<![\w./<-])((?:\.{1,2}\/)*(?:[\w-]+\/)*[\w.-]+\.md)(?:#([\w-]+)| "([^"\n]+)")/g;

/** An inline link or image target: `](href)` or `](href "title")`. */
const INLINE_LINK = /\]\(\s*<?([^)\s>]+)>?(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g;

/** A reference definition: `[id]: href`. */
const REF_DEFINITION = /^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/;

/** The ATX heading of a line, or null. */
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;

/** An explicit HTML anchor. */
const HTML_ANCHOR = /<a\s+(?:id|name)="([^"]+)"/g;

/** A fence line of a code block (``` or ~~~). */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** A reader of a Markdown text, line by line: true for a fence line and for every line inside a code block. */
function codeBlocks(): (line: string) => boolean {
  let fence: string | null = null;
  return (line) => {
    const f = FENCE.exec(line);
    if (f) {
      const mark = f[1]![0]!;
      if (fence === null) fence = mark;
      else if (mark === fence) fence = null;
      return true;
    }
    return fence !== null;
  };
}

/** True for a target with a scheme (https:, mailto:) — not a file of the repository. */
const hasScheme = (href: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(href);

/** A heading's text as a reader sees it: links reduced to their text, emphasis and code marks dropped. */
function headingText(raw: string): string {
  return raw
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .replace(/<[^>]+>/g, '')
    .trim();
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function slugOf(text: string): string {
  return headingText(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The headings of a Markdown text (outside code blocks): their texts and their anchors (duplicates numbered as GitHub does). */
export function headingsOf(md: string): { texts: Set<string>; anchors: Set<string> } {
  const texts = new Set<string>();
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const inCode = codeBlocks();
  for (const line of md.split('\n')) {
    if (inCode(line)) continue;
    for (const a of line.matchAll(HTML_ANCHOR)) anchors.add(a[1]!);
    const h = HEADING.exec(line);
    if (!h) continue;
    texts.add(headingText(h[2]!));
    const base = slugOf(h[2]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return { texts, anchors };
}

/** True when one of `texts` is `quoted` or begins with it as whole words, its own number (`4. `) aside. */
function hasHeading(texts: ReadonlySet<string>, quoted: string): boolean {
  const want = headingText(quoted).toLowerCase();
  for (const t of texts) {
    const have = t.replace(/^\d+(?:\.\d+)*\.?\s+/, '').toLowerCase();
    if (have === want || t.toLowerCase() === want) return true;
    if (have.startsWith(want) && !/[\p{L}\p{N}]/u.test(have.charAt(want.length))) return true;
  }
  return false;
}

/** The line with inline code spans blanked (same length), so examples in backticks are not read as links. */
function withoutCodeSpans(line: string): string {
  return line.replace(/(`+)(?:(?!\1).)+\1/g, (m) => ' '.repeat(m.length));
}

/**
 * Every reference in `files` that a clone of the repository could not follow. `files` holds
 * every tracked text file (path → text); `tracked` every tracked path, binary files included
 * (a link to an image is a link to a file), default the keys of `files`.
 */
export function selfContainedViolations(files: ReadonlyMap<string, string>, tracked: Iterable<string> = files.keys()): Violation[] {
  const out: Violation[] = [];
  const paths = new Set<string>(tracked);
  for (const p of files.keys()) paths.add(p);
  const dirs = new Set<string>(['']);
  const basenames = new Set<string>();
  for (const p of paths) {
    basenames.add(posix.basename(p));
    for (let d = posix.dirname(p); d !== '.'; d = posix.dirname(d)) dirs.add(d);
  }
  const exists = (p: string): boolean => paths.has(p) || dirs.has(p);
  const headingCache = new Map<string, ReturnType<typeof headingsOf>>();
  const headings = (p: string) => {
    let h = headingCache.get(p);
    if (!h) headingCache.set(p, (h = headingsOf(files.get(p)!)));
    return h;
  };
  /** Repository path of `href` written in `file`, or null when it climbs above the root. */
  const resolve = (file: string, href: string): string | null => {
    const joined = posix.normalize(posix.join(posix.dirname(file), href));
    if (joined === '..' || joined.startsWith('../')) return null;
    return joined === '.' ? '' : joined.replace(/\/$/, '');
  };
  /** Checks `#anchor` (or a quoted heading) of a tracked Markdown target. */
  const checkSection = (file: string, line: number, target: string, shown: string, anchor: string | undefined, heading: string | undefined) => {
    if (!target.endsWith('.md') || !files.has(target)) return;
    const h = headings(target);
    if (anchor !== undefined && anchor !== '' && !h.anchors.has(anchor)) {
      out.push({ file, line, message: `${shown} has no heading with the anchor #${anchor} (its headings: ${[...h.anchors].join(', ')})` });
    }
    if (heading !== undefined && !hasHeading(h.texts, heading)) {
      out.push({ file, line, message: `${shown} has no heading "${heading}" (its headings: ${[...h.texts].map((t) => `"${t}"`).join(', ')})` });
    }
  };

  for (const [file, text] of files) {
    const markdown = file.endsWith('.md');
    const lines = text.split('\n');
    const inCode = codeBlocks();
    lines.forEach((raw, i) => {
      const line = i + 1;
      for (const o of OUTSIDE_PATHS) {
        const m = o.pattern.exec(raw);
        if (m) out.push({ file, line, message: `names "${m[0]}", ${o.why}: point at the file in the repository instead` });
      }
      for (const m of raw.matchAll(BARE_UPPER_MD)) {
        if (!basenames.has(m[1]!)) out.push({ file, line, message: `names ${m[1]}, which is no file of the repository: point at the document in the repository that holds it (docs/…)` });
      }

      let prose = raw;
      if (markdown) {
        if (inCode(raw)) return;
        const visible = withoutCodeSpans(raw);
        const hrefs = [...visible.matchAll(INLINE_LINK)].map((m) => m[1]!);
        const def = REF_DEFINITION.exec(visible);
        if (def) hrefs.push(def[1]!);
        for (const href of hrefs) {
          if (hasScheme(href)) continue;
          const [pathPart, anchor] = href.split('#', 2) as [string, string | undefined];
          let path = pathPart;
          try {
            path = decodeURIComponent(pathPart);
          } catch {
            // A malformed escape: check the text as written.
          }
          if (path === '') {
            checkSection(file, line, file, `the link #${anchor}: ${file}`, anchor, undefined);
            continue;
          }
          if (path.startsWith('/')) {
            out.push({ file, line, message: `links to ${href}, an absolute path: link relative to ${file}` });
            continue;
          }
          const target = resolve(file, path);
          if (target === null) out.push({ file, line, message: `links to ${href}, which is outside the repository` });
          else if (!exists(target)) out.push({ file, line, message: `links to ${href}, which does not exist (${target} is not a tracked file or folder)` });
          else checkSection(file, line, target, `the link ${href}: ${target}`, anchor, undefined);
        }
        // The hrefs are checked; what remains is prose for the plain-text references below.
        prose = visible.replace(INLINE_LINK, ']()');
      }
      for (const m of prose.matchAll(SECTION_REF)) {
        const written = m[1]!;
        const fromHere = resolve(file, written);
        const target = fromHere !== null && files.has(fromHere) ? fromHere : files.has(written) ? written : null;
        if (target !== null) checkSection(file, line, target, `${written} (${target})`, m[2], m[3]);
      }
    });
  }
  return out;
}

/** A violation as one line: `file:line: message`. */
export function formatViolation(v: Violation): string {
  return `${v.file}:${v.line}: ${v.message}`;
}
