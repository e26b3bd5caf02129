/**
 * QTYPE=ANY (RFC 8482): the reply is NOERROR with either one RRset of the name (any one)
 * or a single synthesized HINFO record "RFC8482" ""; never every RRset. A name that does
 * not exist is still NXDOMAIN.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { dig, digSummary, type DigResult } from './helpers/dig.js';
import { API, ZONE } from './helpers/fleet.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';

let cfg: TestConfig;
let srv: RunningServer;

before(async () => {
  cfg = writeTestConfig();
  srv = await spawnServer({ configFile: cfg.file });
});

after(async () => {
  await srv?.stop();
  cfg?.cleanup();
});

/** Asserts the RFC 8482 shape: one RRset of `owner`, or one HINFO "RFC8482". */
function assertMinimalAny(r: DigResult, owner: string, possibleTypes: string[]): void {
  const m = r.msg;
  assert.equal(m.status, 'NOERROR', digSummary(r));
  assert.ok(m.flags.includes('aa'), digSummary(r));
  assert.ok(m.answer.length > 0, `ANY gets a non-empty answer\n${digSummary(r)}`);
  const types = new Set(m.answer.map((x) => `${x.name.toLowerCase()} ${x.type}`));
  assert.equal(types.size, 1, `a single RRset, not ${[...types].join(', ')}\n${digSummary(r)}`);
  const only = m.answer[0]!;
  assert.equal(only.name.toLowerCase(), owner, digSummary(r));
  if (only.type === 'HINFO') {
    assert.equal(m.answer.length, 1, digSummary(r));
    assert.match(only.data, /^"RFC8482"/, digSummary(r));
  } else {
    assert.ok(possibleTypes.includes(only.type), `${only.type} is not an RRset of ${owner}\n${digSummary(r)}`);
  }
}

test('ANY at the apex (SOA, NS, TXT, CAA there): one RRset or HINFO RFC8482', async () => {
  const r = await dig(srv.udp, ['gslb.example.com', 'ANY']);
  assertMinimalAny(r, ZONE, ['SOA', 'NS', 'TXT', 'CAA']);
});

test('ANY for the GSLB name (A and AAAA): one RRset or HINFO RFC8482', async () => {
  const r = await dig(srv.udp, ['api.gslb.example.com', 'ANY']);
  assertMinimalAny(r, API, ['A', 'AAAA']);
});

test('ANY for a name that does not exist: NXDOMAIN with the SOA', async () => {
  const r = await dig(srv.udp, ['nothing.gslb.example.com', 'ANY']);
  assert.equal(r.msg.status, 'NXDOMAIN', digSummary(r));
  assert.equal(r.msg.answer.length, 0, digSummary(r));
  assert.ok(r.msg.authority.some((x) => x.type === 'SOA'), digSummary(r));
});

test('ANY outside our zones: REFUSED', async () => {
  const r = await dig(srv.udp, ['example.org', 'ANY']);
  assert.equal(r.msg.status, 'REFUSED', digSummary(r));
});
