/**
 * Who may speak for which source, case tables (ADR 0021): a collector section's ingester, the
 * token ingesters against grants and reserved namespaces, and the per-principal buckets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Signal } from '../model/types.js';
import { loadTokens, reservedNamespaces } from '../config/tokens.js';
import { QuotaBuckets, TokenGrants, collectorIngester, manualIngester, type Authorized } from './ingest-grants.js';

const sig = (source: string, region = 'us-va'): Signal => ({ region, kind: 'health.probe', source, key: 'k', observedAt: 0, expiresAt: 1, value: { up: true } });
const said = (a: Authorized) => ('refused' in a ? `refused: ${a.refused}` : `grant ${a.grant ?? '(none)'}`);

test('a collector speaks only under its prefix, in the regions its section is granted', () => {
  const mqtt = collectorIngester('mqtt', 'mqtt/', ['us-va']);
  assert.equal(mqtt.principal, 'collector:mqtt');
  const cases: [Signal, RegExp][] = [
    [sig('mqtt/site-1'), /^grant mqtt\/$/],
    [sig('mqtt/site-1', 'eu-ie'), /^refused: collector mqtt speaks only for mqtt\/ \(us-va\); it emitted mqtt\/site-1 about eu-ie$/],
    [sig('openadr3/vtn'), /^refused: .*it emitted openadr3\/vtn about us-va/],
    [sig('mqtt'), /^refused:/],
  ];
  for (const [s, want] of cases) assert.match(said(mqtt.authorize(s)), want, `${s.source} ${s.region}`);
  assert.match(said(collectorIngester('health', 'health/').authorize(sig('health/node-a', 'eu-ie'))), /^grant health\/$/, 'no region grant: every region');
});

test('tokens: granted ones only under their grants, ungranted ones only where no one else speaks; the operator only as manual/<name>', () => {
  const tokens = loadTokens({ env: 'ingest:bridge[ercot/|utility/=us-va]:bridge-token-0123456789,ingest:prober:prober-token-0123456789' });
  const grants = new TokenGrants(tokens, reservedNamespaces([{ name: 'openadr3', sources: 'openadr3/' }]));
  const who = (name: string) => grants.ingester(tokens.list().find((t) => t.name === name)!);
  const cases: [string, Signal, RegExp][] = [
    ['bridge', sig('ercot/eea', 'us-tx'), /^grant ercot\/$/],
    ['bridge', sig('utility/f-1'), /^grant utility\/$/],
    ['bridge', sig('utility/f-1', 'us-tx'), /^refused: token "bridge" may post only under its grants/],
    ['bridge', sig('prober/x'), /^refused: .*outside them/],
    ['prober', sig('prober/x'), /^grant \(none\)$/],
    ['prober', sig('ercot/x'), /^refused: ercot\/x is in ercot\/, granted to token "bridge"/],
    ['prober', sig('utility/f-1', 'us-tx'), /^refused: utility\/f-1 is in utility\/, granted to token "bridge"/],
    ['prober', sig('openadr3/vtn'), /^refused: .*reserved for collector openadr3/],
    ['prober', sig('manual/alice'), /^refused: .*reserved for the operator route/],
  ];
  for (const [name, s, want] of cases) assert.match(said(who(name).authorize(s)), want, `${name}: ${s.source} ${s.region}`);
  assert.equal(who('prober').principal, 'token:prober');
  const op = manualIngester('alice');
  assert.match(said(op.authorize(sig('manual/alice'))), /^grant manual\/$/);
  assert.match(said(op.authorize(sig('manual/bob'))), /^refused: an operator enters events as manual\/alice only$/);
});

test('quota buckets: per principal, a burst of the minute\'s size, refilled over the minute', () => {
  const q = new QuotaBuckets();
  assert.equal(q.take('token:a', 5, 6, 0), 0);
  assert.equal(q.take('token:a', 1, 6, 0), 0);
  assert.ok(q.take('token:a', 1, 6, 0) > 0, 'the seventh in the same instant waits');
  assert.equal(q.take('token:b', 6, 6, 0), 0, 'another principal has its own bucket');
  assert.equal(q.take('token:a', 1, 6, 10_000), 0, 'one more after 10 s (6 per minute)');
  assert.equal(q.take('token:a', 1_000_000, 0, 0), 0, '0 = no limit');
});
