/**
 * Payload fuzz (issue 27, test/helpers/payload-fuzz.ts): the Electricity Maps and WattTime
 * fixtures, mutated as JSON trees (and sometimes as text), through what a poll does with a
 * body: parseJson, then readElectricityMaps or readWattTimeIndex, then the carbon fact the
 * poller emits (observedAt the data's time, expiresAt max(observedAt, now) + 3 × pollMs).
 * Invariants: nothing but CarbonError is thrown (the poller counts it in byCode and logs it),
 * its message names the field (or the body); every fact passes validateSignal at `now`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CarbonError, parseJson, readElectricityMaps, readWattTimeIndex, type Reading } from './parse.js';
import { FuzzTally, caseName, fuzzRng, jsonText, mutateJson, mutateText } from '../../test/helpers/payload-fuzz.js';

const dir = fileURLToPath(new URL('../../../collectors/carbon/fixtures/', import.meta.url));
const NOW = Date.parse('2026-03-04T21:12:00Z'); // minutes after the fixtures' data
const MAX_AGE = 3 * 3_600_000;
const POLL = 300_000;
const REGIONS = new Set(['eu-de']);
const SEED = 27_012;
const CASES = 2000;
/** A refusal names the field it could not read (or the body/answer as a whole). */
const NAMES_FIELD = /\b(zone|carbonIntensity|datetime|meta(\.\w+)?|data(\[\d+\](\.\w+)?)?|point_time|body|answer)\b/;

const PROVIDERS = [
  { what: 'electricitymaps', file: 'electricitymaps-latest.json', read: (b: unknown): Reading => readElectricityMaps(b, 'DE', NOW, MAX_AGE), value: (v: number) => ({ gPerKWh: v }) },
  { what: 'watttime', file: 'watttime-signal-index.json', read: (b: unknown): Reading => readWattTimeIndex(b, 'CAISO_NORTH', NOW, MAX_AGE), value: (v: number) => ({ percentile: v }) },
];

for (const p of PROVIDERS) {
  test(`payload fuzz: carbon ${p.what} answers through parseJson and the reader`, (tc) => {
    const seed = SEED + PROVIDERS.indexOf(p);
    const fixture: unknown = JSON.parse(readFileSync(dir + p.file, 'utf8'));
    const r = fuzzRng(seed);
    const t = new FuzzTally(`carbon ${p.what}`, seed);
    for (let i = 0; i < CASES; i++) {
      let body: string;
      let what: string[];
      if (r() < 0.9) {
        const m = mutateJson(r, fixture);
        body = jsonText(r, m.value);
        t.case(m.mutations);
        what = m.at;
      } else {
        const m = mutateText(r, JSON.stringify(fixture, null, 2));
        body = m.text;
        t.case(m.mutations.map((x) => `text:${x}`));
        what = m.mutations;
      }
      const name = caseName(seed, i, what);
      let reading: Reading;
      try {
        reading = p.read(parseJson(body));
      } catch (e) {
        if (!(e instanceof CarbonError)) {
          t.fail(name, `threw ${(e as Error)?.name}: ${(e as Error)?.message}`);
          continue;
        }
        t.saw(e.code);
        if (e.code !== 'CARBON_ERR_BAD_JSON' && !NAMES_FIELD.test(e.message)) t.fail(name, `a refusal does not name the field: ${e.message.slice(0, 200)}`);
        continue;
      }
      const fact = { region: 'eu-de', kind: 'carbon', source: `carbon/${p.what}`, key: 'k', observedAt: reading.observedAt, expiresAt: Math.max(reading.observedAt, NOW) + 3 * POLL, value: p.value(reading.value) };
      t.emitted(name, [fact], [], NOW, REGIONS);
    }
    assert.deepEqual(t.report(tc), []);
    assert.ok((t.outcomes.signals ?? 0) > CASES / 10, 'a good share of the cases still read');
    assert.ok((t.outcomes.CARBON_ERR_PAYLOAD ?? 0) > CASES / 10, 'a good share of the cases was refused');
  });
}
