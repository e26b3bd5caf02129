/**
 * Test-only helpers for the simulator's tests (not a test file itself): a tiny scenario of
 * three regions in North America, written to a temporary folder removed after the test.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

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
