/**
 * A small RSS 2.0 reader written for hostile input: one pass over the text with `indexOf`
 * (no backtracking patterns, no recursion), bounded depth, element count and item count, and
 * no entity expansion beyond the XML five and a few common HTML names (a DOCTYPE with an
 * internal subset, where entity bombs live, is refused). It is strict about structure like an
 * XML parser: unbalanced or unterminated markup fails the whole document with an RssError, so
 * a truncated or foreign body is never half-read.
 *
 * What it returns: the channel's items in document order, each with the text content
 * (CDATA sections kept verbatim, entities decoded, nested markup's text included) of its
 * `title`, `description`, `pubDate`, `guid`, `link`, and of the non-standard `start` and `end`
 * children some notice feeds add (any namespace prefix). A missing child is absent, not "".
 * Text is cut at 64 Ki characters per field.
 */

export class RssError extends Error {
  override name = 'RssError';
}

export interface RssItem {
  title?: string;
  description?: string;
  pubDate?: string;
  guid?: string;
  link?: string;
  start?: string;
  end?: string;
}

export interface RssFeed {
  /** The channel's title, if any. */
  title?: string;
  items: RssItem[];
}

export interface RssOptions {
  /** More items than this fails the document. Default 1000. */
  maxItems?: number;
  /** Deeper element nesting than this fails the document. Default 32. */
  maxDepth?: number;
  /** More elements than this fails the document. Default 50 000. */
  maxElements?: number;
}

const FIELD_MAX = 65536;
const ITEM_FIELDS = new Set(['title', 'description', 'pubDate', 'guid', 'link', 'start', 'end']);

const NAMED: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'",
  nbsp: '\u00a0', ndash: '–', mdash: '—', lsquo: '‘', rsquo: '’', ldquo: '“', rdquo: '”', hellip: '…', deg: '°', copy: '©', reg: '®',
};

/** Decodes character references: numeric ones and the names above; an unknown name stays as written. */
export function decodeEntities(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});/g, (whole, ref: string) => {
    if (ref[0] === '#') {
      const cp = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!Number.isFinite(cp) || cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return '\ufffd';
      return String.fromCodePoint(cp);
    }
    return NAMED[ref] ?? whole;
  });
}

/** Phrasing elements: removed without a blank (`<b>Grid</b>:` → `Grid:`); other tags leave one. */
const INLINE = /^<\/?(a|abbr|b|em|i|small|span|strong|sub|sup|u)\b/i;

/** Markup removed (`<p>a</p>` → ` a `), in one pass; what is left of a `<` without `>` stays. */
export function stripTags(s: string): string {
  if (!s.includes('<')) return s;
  let out = '';
  let i = 0;
  while (i < s.length) {
    const lt = s.indexOf('<', i);
    if (lt < 0) {
      out += s.slice(i);
      break;
    }
    const gt = s.indexOf('>', lt);
    if (gt < 0) {
      out += s.slice(i);
      break;
    }
    out += INLINE.test(s.slice(lt, lt + 8)) ? s.slice(i, lt) : `${s.slice(i, lt)} `;
    i = gt + 1;
  }
  return out;
}

const NAME_START = /[A-Za-z_:]/;
const NAME_CHAR = /[-A-Za-z0-9._:]/;

function localName(name: string): string {
  const c = name.lastIndexOf(':');
  return c < 0 ? name : name.slice(c + 1);
}

/** Parses an RSS 2.0 document (`<rss><channel><item>…`). Throws RssError naming what is wrong. */
export function parseRss(text: string, opts: RssOptions = {}): RssFeed {
  const maxItems = opts.maxItems ?? 1000;
  const maxDepth = opts.maxDepth ?? 32;
  const maxElements = opts.maxElements ?? 50_000;
  const n = text.length;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  /** Open elements, outermost first. */
  const stack: string[] = [];
  let rootSeen = false;
  let channelSeen = false;
  let elements = 0;
  const items: RssItem[] = [];
  let item: RssItem | null = null;
  /** The item field being read (stack depth 4: rss > channel > item > field), and its text. */
  let field: keyof RssItem | null = null;
  let fieldText = '';
  let channelTitle: string | undefined;
  let readingChannelTitle = false;

  const fail = (why: string): never => {
    throw new RssError(`${why} (at character ${i})`);
  };
  const addText = (t: string) => {
    if (field !== null) {
      if (fieldText.length < FIELD_MAX) fieldText += t.slice(0, FIELD_MAX - fieldText.length);
    } else if (readingChannelTitle) {
      channelTitle = ((channelTitle ?? '') + t).slice(0, FIELD_MAX);
    } else if (stack.length === 0 && t.trim() !== '') {
      fail('text outside the root element');
    }
  };

  while (i < n) {
    const lt = text.indexOf('<', i);
    if (lt < 0) {
      addText(decodeEntities(text.slice(i)));
      i = n;
      break;
    }
    if (lt > i) addText(decodeEntities(text.slice(i, lt)));
    i = lt;
    if (text.startsWith('<!--', i)) {
      const e = text.indexOf('-->', i + 4);
      if (e < 0) fail('unterminated comment');
      i = e + 3;
    } else if (text.startsWith('<![CDATA[', i)) {
      if (stack.length === 0) fail('CDATA outside the root element');
      const e = text.indexOf(']]>', i + 9);
      if (e < 0) fail('unterminated CDATA section');
      addText(text.slice(i + 9, e));
      i = e + 3;
    } else if (text.startsWith('<?', i)) {
      const e = text.indexOf('?>', i + 2);
      if (e < 0) fail('unterminated processing instruction');
      i = e + 2;
    } else if (text.startsWith('<!', i)) {
      if (rootSeen || !/^<!DOCTYPE\s/i.test(text.slice(i, i + 10))) fail('unexpected markup declaration');
      const e = text.indexOf('>', i);
      if (e < 0) fail('unterminated DOCTYPE');
      if (text.slice(i, e).includes('[')) fail('a DOCTYPE with an internal subset (entity declarations) is refused');
      i = e + 1;
    } else if (text.startsWith('</', i)) {
      const e = text.indexOf('>', i);
      if (e < 0) fail('unterminated end tag');
      const name = text.slice(i + 2, e).trim();
      const open = stack.pop();
      if (open === undefined || open !== name) fail(`end tag </${name}> does not close <${open ?? '(nothing)'}>`);
      const depth = stack.length;
      if (depth === 3 && field !== null && item) {
        if (item[field] === undefined) item[field] = fieldText;
        field = null;
        fieldText = '';
      } else if (depth === 2 && item && name === 'item') {
        items.push(item);
        item = null;
      } else if (depth === 2 && readingChannelTitle) {
        readingChannelTitle = false;
      }
      i = e + 1;
    } else {
      // A start tag: <name attr="v" …> or <name … />
      let j = i + 1;
      if (j >= n || !NAME_START.test(text[j]!)) fail('a "<" that starts no tag');
      while (j < n && NAME_CHAR.test(text[j]!)) j++;
      const name = text.slice(i + 1, j);
      let selfClosing = false;
      while (true) {
        if (j >= n) fail(`unterminated start tag <${name}`);
        const c = text[j]!;
        if (c === '>') break;
        if (c === '/' && text[j + 1] === '>') {
          selfClosing = true;
          j++;
          break;
        }
        if (c === '"' || c === "'") {
          const q = text.indexOf(c, j + 1);
          if (q < 0) fail(`unterminated attribute value in <${name}`);
          j = q + 1;
          continue;
        }
        if (c === '<') fail(`"<" inside the start tag <${name}`);
        j++;
      }
      i = j + 1;
      if (++elements > maxElements) fail(`more than ${maxElements} elements`);
      const depth = stack.length;
      if (depth === 0) {
        if (rootSeen) fail('a second root element');
        if (name !== 'rss') fail(`the root element is <${name}>, not <rss> (only RSS 2.0 is read)`);
        rootSeen = true;
      } else if (depth === 1 && name === 'channel') {
        if (channelSeen) fail('a second <channel>');
        channelSeen = true;
      } else if (depth === 2 && stack[1] === 'channel' && name === 'item') {
        if (items.length >= maxItems) fail(`more than ${maxItems} items`);
        item = {};
      } else if (depth === 2 && stack[1] === 'channel' && name === 'title' && channelTitle === undefined) {
        readingChannelTitle = !selfClosing;
        if (selfClosing) channelTitle = '';
      } else if (depth === 3 && item && stack[2] === 'item') {
        // Standard children by their plain name; start/end under any namespace prefix.
        const local = localName(name);
        const key = ITEM_FIELDS.has(name) ? name : local === 'start' || local === 'end' ? local : null;
        if (key !== null) {
          if (selfClosing) {
            if (item[key as keyof RssItem] === undefined) item[key as keyof RssItem] = '';
          } else {
            field = key as keyof RssItem;
            fieldText = '';
          }
        }
      }
      if (!selfClosing) {
        if (stack.length >= maxDepth) fail(`elements nested deeper than ${maxDepth}`);
        stack.push(name);
      } else if (depth === 2 && name === 'item' && item) {
        items.push(item);
        item = null;
      }
    }
  }
  if (!rootSeen) throw new RssError('no <rss> element: not an RSS document');
  if (stack.length > 0) throw new RssError(`the document ends inside <${stack.at(-1)}>: truncated`);
  if (!channelSeen) throw new RssError('<rss> has no <channel>');
  return { ...(channelTitle !== undefined ? { title: channelTitle.trim() } : {}), items };
}
