/**
 * Payload fuzz (issue 27, test/helpers/payload-fuzz.ts): the VTN's programs and events
 * fixtures (3.0.1 and 3.1 spellings), mutated, through Openadr3Poller.ingest — what a poll does
 * with the answers once fetched (readEvent, region matching, emits, cancellations), without
 * HTTP. Invariants: ingest never throws and never logs an error; every emitted grid.event
 * passes validateSignal at the poller's `now`; an event refused in whole or in part is
 * counted (`badEvents`) and logged naming the field.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Value } from '@sinclair/typebox/value';
import { Openadr3ConfigSchema, Openadr3Poller, type Openadr3Config } from './index.js';
import { readProgramNames, type ProgramInfo } from './parse.js';
import type { Signal } from '../types.js';
import { FuzzTally, caseName, fuzzContext, fuzzRng, mutateJson, type LogLine } from '../../test/helpers/payload-fuzz.js';

const fixtures = fileURLToPath(new URL('../../../collectors/openadr3/fixtures/', import.meta.url));
const json = (name: string): unknown => JSON.parse(readFileSync(fixtures + name, 'utf8'));
const NOW = Date.UTC(2031, 5, 1, 12); // the fixtures' events are that evening
const REGIONS = new Set(['us-va', 'eu-west']);
const SEED = 27_001;
const CASES = 2000;

/** A refusal's log line names what is wrong by field. */
const NAMES_FIELD = /\b(id|programID|targets|intervals|intervals\[\d+\]|intervalPeriod|start|duration|priority|payloads|value|values|units|limitW|SIMPLE|IMPORT_CAPACITY_LIMIT|DISPATCH_SETPOINT|interval id)\b/;

function pollerOf(version: '3.0.1' | '3.1'): { poller: Openadr3Poller; emitted: Signal[]; logs: LogLine[] } {
  const cfg = Value.Default(
    Openadr3ConfigSchema,
    structuredClone({
      vtn: { url: 'http://127.0.0.1:1/openadr3', clientId: 'ven', clientSecret: 'secret', version },
      pollMs: 30000,
      unitsWhenMissing: 'KW',
      regions: [{ region: 'us-va', ...(version === '3.0.1' ? { targets: [{ type: 'RESOURCE_NAME', values: ['site-a', 'site-b'] }] } : {}) }, { region: 'eu-west' }],
    }),
  ) as Openadr3Config;
  assert.ok(Value.Check(Openadr3ConfigSchema, cfg), [...Value.Errors(Openadr3ConfigSchema, cfg)].map((e) => `${e.path} ${e.message}`).join('; '));
  const { ctx, emitted, logs } = fuzzContext(cfg, NOW, REGIONS);
  return { poller: new Openadr3Poller(ctx), emitted, logs };
}

for (const version of ['3.0.1', '3.1'] as const) {
  test(`payload fuzz: OpenADR ${version} events through Openadr3Poller.ingest`, (tc) => {
    const events = json(`events-${version}.json`) as Record<string, unknown>[];
    const names = new Map<string, ProgramInfo>();
    readProgramNames(json(`programs-${version}.json`) as unknown[], names);
    const seed = SEED + (version === '3.1' ? 1 : 0);
    const r = fuzzRng(seed);
    const t = new FuzzTally(`openadr3 ${version}`, seed);
    for (let i = 0; i < CASES; i++) {
      const m = mutateJson(r, events);
      t.case(m.mutations);
      // GET /events refuses an answer that is not an array of objects as a whole (OADR3_ERR_SHAPE, client.ts).
      if (!Array.isArray(m.value) || m.value.some((e) => typeof e !== 'object' || e === null || Array.isArray(e))) {
        t.saw('refused by the client (not an array of objects)');
        continue;
      }
      const { poller, emitted, logs } = pollerOf(version);
      const name = caseName(seed, i, m.at);
      try {
        poller.ingest(names, m.value as Record<string, unknown>[], false);
      } catch (e) {
        t.fail(name, `ingest threw: ${(e as Error).message}`);
        continue;
      }
      t.emitted(name, emitted, logs, NOW, REGIONS);
      t.refusals(name, 'events refused', poller.stats.badEvents, logs.filter((l) => l.level === 40), NAMES_FIELD);
    }
    assert.deepEqual(t.report(tc), []);
    assert.ok((t.outcomes['events refused'] ?? 0) > CASES / 10, 'a good share of the cases was refused');
    assert.ok((t.outcomes.signals ?? 0) > CASES, 'most cases still emitted facts');
  });
}
