/**
 * Test helpers for configuration: a small valid fleet as text, temp folders holding it,
 * and the issues a load reports. For tests only (gslb/config/*.test.ts, gslb/serve/serving.test.ts).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ConfigError, type ConfigIssue } from './load.js';

/** Files by path relative to the temp folder; a key ending in "/" is an (empty) folder. */
export type Files = Record<string, string>;

/** A valid gridsteer.yaml: one zone with glue, a delegation and a few records; two steered names. */
export const BASE_CONFIG = `# test fleet
dns:
  listen: ["127.0.0.1:0"]
zones:
  - name: gslb.example.com
    ttl: 300
    soa:
      rname: hostmaster.example.com.
      serial: 1
    nameservers:
      - { name: ns1, addresses: [192.0.2.53] }
      - { name: ns.example.net. }
    records:
      - { name: www, type: CNAME, data: api }
      - { name: "@", type: TXT, data: "hello" }
      - { name: mail, type: A, data: 192.0.2.25 }
      - { name: "@", type: MX, data: "10 mail" }
      - { name: sub, type: NS, data: ns.sub }
      - { name: ns.sub, type: A, data: 192.0.2.54 }
names:
  - name: api.gslb.example.com
    ttl: 30
  - name: eu.gslb.example.com
    regions: [eu-ie]
`;

/** The Virginia region file, as shipped in regions/us-va.yaml. */
export const US_VA = `# Virginia (US East): grid-fed site in PJM.
id: us-va
name: Virginia (US East)
location: { lat: 39.04, lon: -77.49, country: US, city: Ashburn }
bias: 0
endpoints:
  - address: 192.0.2.10
  - address: 192.0.2.11
  - address: 2001:db8:10::10
capacity: { units: 512 }
power: { site: grid, balancingAuthority: PJM }
`;

/** A region file in block style. */
export const EU_IE = `id: eu-ie
name: Ireland (EU West)
location:
  lat: 53.35
  lon: -6.26
  country: IE
endpoints:
  - address: 198.51.100.40
  - address: 2001:db8:40::40
`;

/** The base fleet: gridsteer.yaml and two regions. */
export function baseFiles(): Files {
  return { 'gridsteer.yaml': BASE_CONFIG, 'regions/us-va.yaml': US_VA, 'regions/eu-ie.yaml': EU_IE };
}

/** Writes `files` into a new temp folder, removed after the test; returns the folder. */
export function tempFleet(t: { after(fn: () => void): void }, files: Files): string {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const [rel, text] of Object.entries(files)) {
    const p = join(dir, rel);
    if (rel.endsWith('/')) mkdirSync(p, { recursive: true });
    else {
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, text);
    }
  }
  return dir;
}

/** Replaces `from` by `to` in `text`, failing the test when `from` is not there. */
export function sub(text: string | undefined, from: string, to: string): string {
  assert.ok(text?.includes(from), `test setup: ${JSON.stringify(from)} is not in the text`);
  return text!.replace(from, to);
}

/** The 1-based number of the only line of `text` that contains `needle`. */
export function lineOf(text: string, needle: string): number {
  const hits = text.split('\n').flatMap((l, i) => (l.includes(needle) ? [i + 1] : []));
  assert.equal(hits.length, 1, `test setup: ${JSON.stringify(needle)} must be on exactly one line`);
  return hits[0]!;
}

/** Runs `load` and returns the issues of the ConfigError it must throw. */
export function issuesOf(load: () => unknown): ConfigIssue[] {
  try {
    load();
  } catch (e) {
    if (e instanceof ConfigError) {
      for (const i of e.issues) assert.ok(e.message.includes(i.message), 'the error message lists every issue');
      return e.issues;
    }
    throw e;
  }
  assert.fail('expected a ConfigError, but the configuration loaded');
}

/** What a case expects of the one issue reported. */
export interface Expect {
  /** The file at fault, relative to the temp folder. */
  file: string;
  /** A text on the line at fault (in that file), or null when the issue has no line. */
  at: string | null;
  path: string;
  /** Every pattern must match the message: what is wrong, what is expected, the fix. */
  message: RegExp[];
}

/** Asserts that `issues` is exactly one issue as `want` says. */
export function assertOneIssue(what: string, dir: string, files: Files, issues: ConfigIssue[], want: Expect): void {
  const show = `${what}:\n${JSON.stringify(issues, null, 2)}`;
  assert.equal(issues.length, 1, `${what}: one issue\n${show}`);
  const i = issues[0]!;
  assert.equal(i.file, join(dir, want.file), `${what}: file\n${show}`);
  if (want.at === null) assert.equal(i.line, undefined, `${what}: no line\n${show}`);
  else {
    assert.equal(i.line, lineOf(files[want.file] ?? '', want.at), `${what}: line of ${JSON.stringify(want.at)}\n${show}`);
    assert.ok((i.column ?? 0) >= 1, `${what}: column\n${show}`);
  }
  assert.equal(i.path, want.path, `${what}: path\n${show}`);
  for (const re of want.message) assert.match(i.message, re, `${what}: message\n${show}`);
}
