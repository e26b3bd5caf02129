/**
 * Test-only helpers for the simulator's tests (not a test file itself): a tiny scenario of
 * three regions in North America, written to a temporary folder removed after the test.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { GridSteerPolicy } from './policies.js';
import type { buildWorld } from './world.js';

/**
 * A one-hour scenario: regions east, west and south; `east` loses power from 30 to 45 min,
 * announced 20 minutes ahead through an OpenADR load-shed event; 20,000 sessions per hour.
 * `extra` is appended at the top level (e.g. a policies: section); `trust` is the trust
 * configuration (default TINY_TRUST: the event's source bound to east and granted to its own
 * token; '' for the production default, nothing trusted).
 */
export function tinyScenario(extra = '', trust = TINY_TRUST): string {
  return `title: tiny test fleet
hours: 1
regions:
  list:
    - { id: east, lat: 40.0, lon: -75.0, capacityUnits: 100 }
    - { id: west, lat: 37.0, lon: -122.0, capacityUnits: 100 }
    - { id: south, lat: 30.0, lon: -97.0, capacityUnits: 100 }
events:
  - id: shed-1
    region: east
    at: 30m
    duration: 15m
    notice: 20m
    effect: { kind: power-off }
    facts:
      - kind: grid.event
        source: openadr3/vtn.test
        value: { type: load-shed }
world:
  sessionsPerHour: 20000
  subnets: 200
  resolvers: 40
  demandShare: { north-america: 1 }
  warmup: 5m
${trust}${extra}`;
}

/** The tiny scenario's trust: its feed is bound to east, written under its own grant. */
export const TINY_TRUST = `trust:
  bindings: { openadr3/vtn.test: [east] }
  principals: { openadr3/vtn.test: { principal: 'token:vtn-test' } }
`;

/**
 * The tiny scenario with a second shed, of west at the same time from another bound source
 * (openadr3/vtn.other): east's source is written by token:a, west's by `westBy`. East and west
 * are 200 of the name's 300 units, beyond maxTrustedLossShare 0.5 for one principal.
 */
export function tinyTwoSheds(westBy: string, extra = ''): string {
  const trust = `trust:\n  bindings: { openadr3/vtn.test: [east], openadr3/vtn.other: [west] }\n  principals: { openadr3/vtn.test: { principal: 'token:a' }, openadr3/vtn.other: { principal: '${westBy}' } }\n`;
  const tiny = tinyScenario(extra, trust);
  const first = tiny.slice(tiny.indexOf('  - id: shed-1'), tiny.indexOf('world:\n'));
  const second = first.replace('shed-1', 'shed-2').replace('region: east', 'region: west').replace('vtn.test', 'vtn.other');
  return tiny.replace('world:\n', `${second}world:\n`);
}

/** Writes `files` (relative path → text) into a fresh temporary folder removed after the test; returns the folder. */
export function tempDir(t: { after(fn: () => void): void }, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-sim-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

/** GridSteer told of the scenario's events (each event's facts, at its announcement); returns the policy with its world. */
export function toldOfEvents(w: ReturnType<typeof buildWorld>, p = new GridSteerPolicy(w, w.scenario.policies.gridsteer, w.scenario.epoch)) {
  const sc = w.scenario;
  for (const e of sc.events) for (const f of e.facts) p.fact({ region: e.region, kind: f.kind, source: f.source, key: f.key, observedAt: sc.epoch + e.atMs - e.noticeMs, expiresAt: sc.epoch + e.atMs + e.durationMs, value: f.value }, sc.epoch + e.atMs - e.noticeMs);
  return Object.assign(p, { w });
}
export const verdicts = (p: GridSteerPolicy) => (p.current.trust ?? []).map((d) => `${d.region} ${d.status} ${d.principal}`).sort();
