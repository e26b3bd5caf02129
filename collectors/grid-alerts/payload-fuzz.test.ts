/**
 * Payload fuzz (issue 27, test/helpers/payload-fuzz.ts): each ISO adapter's fixture (ERCOT and
 * PJM JSON, CAISO stats JSON with its notices as JSON or RSS, AESO RSS), mutated — JSON as a
 * tree (numbers, dates far past and future, seconds for ms, wrong types, …), RSS and text as
 * text — through readFeed, what a poll does with the bodies. Invariants: readFeed throws
 * nothing but FeedError (the collector counts it in failuresByCode and logs it, by code), and
 * that error's message names the field or the body; every value read makes a grid.alert fact
 * that passes validateSignal at `now`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FeedError, readFeed, type Iso } from './adapters.js';
import { FuzzTally, caseName, fuzzRng, jsonText, mutateJson, mutateText } from '../../test/helpers/payload-fuzz.js';

const dir = fileURLToPath(new URL('../../../collectors/grid-alerts/fixtures/', import.meta.url));
const text = (name: string): string => readFileSync(dir + name, 'utf8');
const NOW = Date.parse('2025-07-15T22:00:00Z'); // the fixtures' instant
const REGIONS = new Set(['us-tx']);
const SEED = 27_007;
const CASES = 1000; // per adapter (and notices spelling)
/** A FeedError names the adapter and what it could not read: a field path, an element, an item, or the body as a whole. */
const NAMES_FIELD = /^collectors\/grid-alerts: (ercot|caiso|pjm|aeso)[^:]*: (the body|not a readable RSS 2\.0 document|expected a JSON|more than \d+ entries|its end|[\w.[\]"<>]+[ :])/;

const FEEDS: Array<{ iso: Iso; body: string; notices?: string; label: string }> = [
  { iso: 'ercot', body: text('ercot-daily-prc.json'), label: 'ercot' },
  { iso: 'pjm', body: text('pjm-postings.json'), label: 'pjm' },
  { iso: 'caiso', body: text('caiso-stats.json'), notices: text('caiso-notices.json'), label: 'caiso+json' },
  { iso: 'caiso', body: text('caiso-stats.json'), notices: text('caiso-notices.rss'), label: 'caiso+rss' },
  { iso: 'aeso', body: text('aeso-grid-alerts.rss'), label: 'aeso' },
];

/** A JSON body mutated as a tree (most cases) or as text; an RSS body as text (with nested elements for depth). */
function mutate(r: () => number, body: string): { body: string; mutations: string[]; what: string[] } {
  if (body.trimStart().startsWith('<')) {
    const m = mutateText(r, body, { open: '<item>', close: '</item>' });
    return { body: m.text, mutations: m.mutations.map((x) => `text:${x}`), what: m.mutations };
  }
  if (r() < 0.85) {
    const m = mutateJson(r, JSON.parse(body));
    return { body: jsonText(r, m.value), mutations: m.mutations, what: m.at };
  }
  const m = mutateText(r, body);
  return { body: m.text, mutations: m.mutations.map((x) => `text:${x}`), what: m.mutations };
}

for (const feed of FEEDS) {
  test(`payload fuzz: grid-alerts ${feed.label} through readFeed`, (tc) => {
    const seed = SEED + FEEDS.indexOf(feed);
    const r = fuzzRng(seed);
    const t = new FuzzTally(`grid-alerts ${feed.label}`, seed);
    for (let i = 0; i < CASES; i++) {
      const onNotices = feed.notices !== undefined && r() < 0.5;
      const m = mutate(r, onNotices ? feed.notices! : feed.body);
      t.case(m.mutations.map((w) => (onNotices ? `notices:${w}` : w)));
      const name = caseName(seed, i, [onNotices ? 'notices' : 'body', ...m.what]);
      let reading;
      try {
        reading = readFeed(feed.iso, onNotices ? feed.body : m.body, onNotices ? m.body : feed.notices, { now: NOW, alertMaxAgeMs: 48 * 3_600_000 });
      } catch (e) {
        if (!(e instanceof FeedError)) {
          t.fail(name, `readFeed threw ${(e as Error)?.name}: ${(e as Error)?.message}`);
          continue;
        }
        t.saw(e.code);
        if (!NAMES_FIELD.test(e.message)) t.fail(name, `a refusal does not name the field: ${e.message.slice(0, 200)}`);
        continue;
      }
      const fact = { region: 'us-tx', kind: 'grid.alert', source: `grid-alerts/${feed.iso}`, key: reading.value.zone ?? feed.iso, observedAt: NOW, expiresAt: NOW + 180_000, value: reading.value };
      t.emitted(name, [fact], [], NOW, REGIONS);
    }
    assert.deepEqual(t.report(tc), []);
    assert.ok((t.outcomes.signals ?? 0) > CASES / 10, 'a good share of the cases still read');
  });
}
