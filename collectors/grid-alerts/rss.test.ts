/**
 * The RSS reader and the time reader on case tables: valid documents (CDATA, entities,
 * missing and self-closing fields, markup, namespaces), malformed ones (each must fail as a
 * whole, naming what is wrong) and hostile ones (a million items, deep nesting, entity
 * declarations), which must fail fast.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeEntities, parseRss, RssError, stripTags, type RssItem } from './rss.js';
import { parseTime } from './time.js';
import { countStringWork } from '../../test/helpers/work.js';

const doc = (items: string, head = '') => `<?xml version="1.0"?>${head}<rss version="2.0"><channel><title>T</title>${items}</channel></rss>`;

test('parseRss: valid documents', () => {
  const cases: [string, string, RssItem[]][] = [
    ['one item, all fields', doc('<item><title>A</title><description>d</description><pubDate>Sat, 13 Jan 2024 15:58:00 MST</pubDate><guid>g</guid><link>http://x/</link></item>'), [{ title: 'A', description: 'd', pubDate: 'Sat, 13 Jan 2024 15:58:00 MST', guid: 'g', link: 'http://x/' }]],
    ['missing fields are absent', doc('<item><title>A</title></item><item></item>'), [{ title: 'A' }, {}]],
    ['self-closing item and field', doc('<item/><item><title/></item>'), [{}, { title: '' }]],
    ['CDATA is verbatim', doc('<item><title><![CDATA[Grid & <Alert> &amp;]]></title></item>'), [{ title: 'Grid & <Alert> &amp;' }]],
    ['CDATA mixed with text', doc('<item><title>a <![CDATA[<b>]]> c</title></item>'), [{ title: 'a <b> c' }]],
    ['entities', doc('<item><title>&lt;p&gt; &amp; &quot;q&quot; &apos;a&apos; &#65;&#x42; &nbsp;&mdash; &unknown; &#0; &#xD800;</title></item>'), [{ title: '<p> & "q" \'a\' AB \u00a0— &unknown; \ufffd \ufffd' }]],
    ['nested markup text is kept', doc('<item><description><p>Grid <b>Alert</b></p></description></item>'), [{ description: 'Grid Alert' }]],
    ['comments, PI and attributes with > in quotes', doc('<!-- c --><item a="x>y" b=\'1\'><?pi x?><title>A<!-- no --></title></item>', '<!-- head -->'), [{ title: 'A' }]],
    ['namespaced start/end, other namespaces ignored', doc('<item><caiso:start>2025-07-15T16:00:00-07:00</caiso:start><end>e</end><dc:title>no</dc:title></item>'), [{ start: '2025-07-15T16:00:00-07:00', end: 'e' }]],
    ['first of a repeated field wins', doc('<item><title>A</title><title>B</title></item>'), [{ title: 'A' }]],
    ['channel-level titles and images are not items', doc('<image><title>logo</title></image><item><title>A</title></item>'), [{ title: 'A' }]],
    ['BOM, DOCTYPE without subset, CRLF', `\ufeff<!DOCTYPE rss SYSTEM "x">\r\n<rss><channel>\r\n<item><title>A</title></item></channel></rss>\r\n`, [{ title: 'A' }]],
    ['no items', doc(''), []],
  ];
  for (const [what, text, want] of cases) assert.deepEqual(parseRss(text).items, want, what);
  assert.equal(parseRss(doc('')).title, 'T');
});

test('parseRss: malformed and hostile documents fail as a whole, reading no further than the bound', () => {
  const ITEM = '<item><title>x</title></item>';
  const million = `<rss><channel>${ITEM.repeat(1_000_000)}</channel></rss>`;
  /** The characters a parser that stops at the bound reads (the hostile texts are 20 to 1000 times longer). */
  const upTo = new Map([
    ['a million items', '<rss><channel>'.length + 1001 * ITEM.length],
    ['too many elements', '<rss><channel><image>'.length + 50_001 * '<x/>'.length],
  ]);
  const cases: [string, string, RegExp][] = [
    ['empty', '', /no <rss> element/],
    ['JSON', '{"a":1}', /text outside the root/],
    ['HTML page', '<!DOCTYPE html><html><body>hi</body></html>', /root element is <html>/],
    ['Atom', '<feed xmlns="http://www.w3.org/2005/Atom"></feed>', /root element is <feed>/],
    ['no channel', '<rss></rss>', /no <channel>/],
    ['two channels', '<rss><channel></channel><channel></channel></rss>', /second <channel>/],
    ['truncated', doc('<item><title>A</title>').slice(0, -20), /truncated|unterminated/],
    ['cut inside a tag', '<rss><channel><item><tit', /unterminated start tag/],
    ['mismatched end tag', doc('<item><title>A</item>'), /does not close/],
    ['stray end tag', '<rss><channel></channel></rss></rss>', /does not close/],
    ['unterminated CDATA', doc('<item><title><![CDATA[A</title></item>'), /unterminated CDATA/],
    ['unterminated comment', doc('<!-- x'), /unterminated comment/],
    ['a lone <', doc('<item><title>a < b</title></item>'), /starts no tag/],
    ['unterminated attribute', '<rss a="x><channel></channel></rss>', /unterminated attribute/],
    ['entity declarations (billion laughs)', '<!DOCTYPE rss [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]><rss><channel><item><title>&b;</title></item></channel></rss>', /internal subset/],
    ['text after the root', `${doc('')}junk`, /text outside the root/],
    ['two roots', `${doc('')}<rss></rss>`, /second root/],
    ['deep nesting', `<rss><channel><item><description>${'<a>'.repeat(100)}${'</a>'.repeat(100)}</description></item></channel></rss>`, /nested deeper than 32/],
    ['a million items', million, /more than 1000 items/],
    ['too many elements', `<rss><channel><image>${'<x/>'.repeat(1_000_000)}</image></channel></rss>`, /more than 50000 elements/],
  ];
  for (const [what, text, want] of cases) {
    // Work is counted, not timed: the characters the parser's string operations touch stay
    // within a few per character of the text a bounded parser must read (it measures about 5).
    const w = countStringWork(() => parseRss(text));
    assert.ok(w.error instanceof RssError && want.test(w.error.message), `${what}: ${String(w.error)}`);
    const budget = 8 * (upTo.get(what) ?? text.length) + 64;
    assert.ok(w.chars <= budget, `${what}: ${w.chars} characters of work, more than ${budget}: the parser read past the bound`);
  }
  assert.throws(() => parseRss(doc('<item/><item/><item/>'), { maxItems: 2 }), /more than 2 items/);
});

test('parseRss: a long field is cut at 64 Ki characters', () => {
  const item = parseRss(doc(`<item><description>${'x'.repeat(200_000)}</description></item>`)).items[0]!;
  assert.equal(item.description!.length, 65536);
});

test('decodeEntities and stripTags', () => {
  assert.equal(decodeEntities('a &amp;amp; b'), 'a &amp; b', 'one level only');
  assert.equal(decodeEntities('&#128512;'), '😀');
  assert.equal(stripTags('<p>a<br/>b</p> c < d'), ' a b  c < d');
  assert.equal(stripTags('<p>The <strong>Grid Alert</strong>: <a href="x">more</a></p>'), ' The Grid Alert: more ');
});

test('parseTime: the forms the feeds use', () => {
  const Z = (s: string) => Date.parse(s);
  const cases: [unknown, string, number | null | undefined][] = [
    [undefined, 'America/Chicago', undefined],
    [null, 'America/Chicago', undefined],
    ['', 'America/Chicago', undefined],
    ['  ', 'America/Chicago', undefined],
    [1752616800, 'America/Chicago', Z('2025-07-15T22:00:00Z')],
    [1752616800000, 'America/Chicago', Z('2025-07-15T22:00:00Z')],
    ['2025-07-15 17:00:10-0500', 'America/Chicago', Z('2025-07-15T22:00:10Z')],
    ['2025-07-15T16:00:00-07:00', 'America/Chicago', Z('2025-07-15T23:00:00Z')],
    ['2025-07-15T22:00:00.5Z', 'America/Chicago', Z('2025-07-15T22:00:00.500Z')],
    ['2025-07-15T22:00:00+05:30', 'America/Chicago', Z('2025-07-15T16:30:00Z')],
    ['2025-07-15 15:00', 'America/Los_Angeles', Z('2025-07-15T22:00:00Z')],
    ['2025-01-15 15:00', 'America/Los_Angeles', Z('2025-01-15T23:00:00Z')],
    ['07.15.2025 18:00', 'America/New_York', Z('2025-07-15T22:00:00Z')],
    ['12/01/2025 18:00', 'America/New_York', Z('2025-12-01T23:00:00Z')],
    ['Tue, 15 Jul 2025 15:10:00 MDT', 'America/Edmonton', Z('2025-07-15T21:10:00Z')],
    ['Mon, 14 Jul 2025 21:40:00 -0600', 'America/Edmonton', Z('2025-07-15T03:40:00Z')],
    ['14 Jul 2025 21:40 GMT', 'America/Edmonton', Z('2025-07-14T21:40:00Z')],
    ['Mon, 14 Jul 25 21:40:00 Z', 'America/Edmonton', Z('2025-07-14T21:40:00Z')],
    // DST: 2025-03-09 02:30 does not exist in Chicago, 2025-11-02 01:30 happens twice; both resolve to one instant.
    ['2025-11-02 01:30', 'America/Chicago', Z('2025-11-02T06:30:00Z')],
    ['tomorrow', 'America/Chicago', null],
    ['2025-13-01 00:00', 'America/Chicago', null],
    ['2025-02-30 00:00', 'America/Chicago', null],
    ['2025-07-15 24:00', 'America/Chicago', null],
    ['13.45.2025 25:00', 'America/New_York', null],
    ['Tue, 15 Foo 2025 15:10:00 MDT', 'America/Edmonton', null],
    ['Tue, 15 Jul 2025 15:10:00 XYZ', 'America/Edmonton', null],
    ['2025-07-15T22:00:00+25:00', 'America/Chicago', null],
    ['1999-12-31T23:59:59Z', 'America/Chicago', null],
    [-1, 'America/Chicago', null],
    [Number.NaN, 'America/Chicago', null],
    [true, 'America/Chicago', null],
    [{}, 'America/Chicago', null],
    ['2'.repeat(100_000), 'America/Chicago', null],
  ];
  for (const [v, zone, want] of cases) assert.equal(parseTime(v, zone), want, `${JSON.stringify(v)?.slice(0, 40)} in ${zone}`);
  const t = parseTime('2025-03-09 02:30', 'America/Chicago');
  assert.ok(typeof t === 'number' && Math.abs(t - Z('2025-03-09T08:00:00Z')) <= 3600_000, 'a time skipped by DST resolves within the hour');
});
