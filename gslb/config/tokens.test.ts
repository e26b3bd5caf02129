import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIN_TOKEN_LENGTH, TokenLoadError, hashToken, loadTokens, roleGrants, type Role } from './tokens.js';

const ALICE = 'alice-token-0123456789abcdef';
const GRAFANA = 'grafana-token-0123456789abcdef';

function tmpFile(t: TestContext, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-auth-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'tokens.yaml');
  writeFileSync(file, text);
  return file;
}

function loadError(opts: { file?: string; env?: string }): TokenLoadError {
  try {
    loadTokens(opts);
  } catch (e) {
    assert.ok(e instanceof TokenLoadError, `expected TokenLoadError, got ${String(e)}`);
    return e;
  }
  assert.fail('loadTokens did not throw');
}

test('hashToken is the SHA-256 hex of the UTF-8 token', () => {
  assert.equal(hashToken('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(hashToken('é'), createHash('sha256').update(Buffer.from('é', 'utf8')).digest('hex'));
});

test('roleGrants: operator includes viewer; ingest is separate', () => {
  const cases: [Role, Role, boolean][] = [
    ['viewer', 'viewer', true],
    ['viewer', 'operator', false],
    ['viewer', 'ingest', false],
    ['operator', 'viewer', true],
    ['operator', 'operator', true],
    ['operator', 'ingest', false],
    ['ingest', 'ingest', true],
    ['ingest', 'viewer', false],
    ['ingest', 'operator', false],
  ];
  for (const [have, need, want] of cases) assert.equal(roleGrants(have, need), want, `${have} → ${need}`);
});

test('no sources, or empty ones, give an empty store', (t) => {
  assert.equal(loadTokens({}).size, 0);
  assert.equal(loadTokens({ env: '' }).size, 0);
  assert.equal(loadTokens({ env: ' , ' }).size, 0);
  assert.equal(loadTokens({ file: tmpFile(t, 'tokens: []\n') }).size, 0);
  assert.equal(loadTokens({}).verify(ALICE), null);
});

test('tokens from a file: verified by hash, identity carries name, role and source', (t) => {
  const file = tmpFile(
    t,
    `tokens:\n  - { name: alice, role: operator, sha256: ${hashToken(ALICE)} }\n  - name: grafana\n    role: viewer\n    sha256: ${hashToken(GRAFANA).toUpperCase()}\n`,
  );
  const store = loadTokens({ file });
  assert.equal(store.size, 2);
  assert.deepEqual(store.verify(ALICE), { name: 'alice', role: 'operator', source: file });
  assert.deepEqual(store.verify(GRAFANA), { name: 'grafana', role: 'viewer', source: file });
  assert.equal(store.verify('wrong-token-0123456789abcdef'), null);
  assert.equal(store.verify(''), null);
  assert.equal(store.verify(hashToken(ALICE)), null, 'the stored hash is not itself a token');
  assert.deepEqual(
    store.list().map((i) => `${i.name}/${i.role}`),
    ['alice/operator', 'grafana/viewer'],
  );
});

test('tokens from GRIDSTEER_TOKENS: hashed on load, never kept in clear', () => {
  const store = loadTokens({ env: `operator:alice:${ALICE}, viewer:grafana:${GRAFANA},ingest:meter-1:a:b:c:0123456789abcdef,` });
  assert.equal(store.size, 3);
  assert.deepEqual(store.verify(ALICE), { name: 'alice', role: 'operator', source: 'GRIDSTEER_TOKENS' });
  assert.equal(store.verify(GRAFANA)?.role, 'viewer');
  assert.equal(store.verify('a:b:c:0123456789abcdef')?.name, 'meter-1', 'a token may contain ":"');
  // Nothing reachable from the store holds a token in clear.
  const seen = JSON.stringify(store) + JSON.stringify(store.list());
  for (const secret of [ALICE, GRAFANA]) assert.ok(!seen.includes(secret));
});

test('file and env together; names and tokens must be unique across both', (t) => {
  const file = tmpFile(t, `tokens:\n  - { name: alice, role: operator, sha256: ${hashToken(ALICE)} }\n`);
  const store = loadTokens({ file, env: `viewer:grafana:${GRAFANA}` });
  assert.equal(store.size, 2);
  assert.equal(store.verify(GRAFANA)?.source, 'GRIDSTEER_TOKENS');

  const dupName = loadError({ file, env: `viewer:alice:${GRAFANA}` });
  assert.match(dupName.message, /GRIDSTEER_TOKENS entry 1: the name "alice" is already used by .*tokens\.yaml:2: tokens\[0\]/);
  const dupToken = loadError({ file, env: `viewer:bob:${ALICE}` });
  assert.match(dupToken.message, /GRIDSTEER_TOKENS entry 1: the same token as .*tokens\[0\]/);
});

test('malformed token files: each problem names the file, line and entry and says how to fix', (t) => {
  const good = hashToken(ALICE);
  const cases: [string, string, RegExp[]][] = [
    ['empty file', '', [/tokens\.yaml: the file is empty; expected `tokens:`/]],
    ['not a mapping', '- a\n- b\n', [/tokens\.yaml:1: expected a mapping with a `tokens` list/]],
    ['YAML syntax', 'tokens: [\n', [/tokens\.yaml:\d+: YAML syntax:/]],
    ['unknown top key', `tokens: []\nusers: []\n`, [/tokens\.yaml:2: unknown key "users"/]],
    ['tokens not a list', 'tokens: {a: 1}\n', [/tokens\.yaml:1: tokens: expected a list/]],
    ['entry not a mapping', 'tokens:\n  - alice\n', [/tokens\.yaml:2: tokens\[0\]: expected a mapping/]],
    [
      'plaintext token',
      `tokens:\n  - name: alice\n    role: operator\n    token: ${ALICE}\n`,
      [/tokens\.yaml:4: tokens\[0\]\.token: tokens are not stored in clear; remove it and store the token's SHA-256/, /sha256 is missing/],
    ],
    ['bad role', `tokens:\n  - { name: alice, role: admin, sha256: ${good} }\n`, [/tokens\.yaml:2: tokens\[0\]\.role: "admin" is not a role; use viewer, operator or ingest/]],
    ['missing role', `tokens:\n  - { name: alice, sha256: ${good} }\n`, [/tokens\[0\]: role is missing: add role: viewer, operator or ingest/]],
    ['bad name', `tokens:\n  - { name: "al ice", role: viewer, sha256: ${good} }\n`, [/tokens\[0\]\.name: must be 1-64 characters/]],
    ['short hash', `tokens:\n  - { name: alice, role: viewer, sha256: abc123 }\n`, [/tokens\[0\]\.sha256: must be 64 hex digits \(a SHA-256, not the token\)/]],
    ['unknown entry key', `tokens:\n  - { name: alice, role: viewer, sha256: ${good}, expires: 2026 }\n`, [/tokens\[0\]\.expires: unknown key; an entry has only name, role, sha256 and grants/]],
    [
      'second entry reported with its index and line',
      `tokens:\n  - { name: alice, role: viewer, sha256: ${good} }\n  - { name: bob, role: viewer }\n`,
      [/tokens\.yaml:3: tokens\[1\]: sha256 is missing/],
    ],
  ];
  for (const [name, text, patterns] of cases) {
    const file = tmpFile(t, text);
    const e = loadError({ file });
    assert.ok(e.message.startsWith('api: cannot load the API tokens'), name);
    for (const p of patterns) assert.match(e.message, p, `${name}: ${e.message}`);
    assert.ok(!e.message.includes(ALICE), `${name}: the message never repeats a token`);
  }
  const missing = loadError({ file: '/nonexistent/tokens.yaml' });
  assert.match(missing.message, /\/nonexistent\/tokens\.yaml: cannot read the tokens file \(ENOENT\): check http\.tokensFile/);
});

test('malformed GRIDSTEER_TOKENS entries: named by position, never echoing the token', () => {
  const secret = 'supersecret-0123456789abcdef';
  const cases: [string, RegExp][] = [
    [`alice:${secret}`, /GRIDSTEER_TOKENS entry 1: expected role:name:token/],
    [secret, /GRIDSTEER_TOKENS entry 1: expected role:name:token/],
    [`viewer:grafana:${GRAFANA},admin:alice:${secret}`, /GRIDSTEER_TOKENS entry 2: the role "admin" is not a role; use viewer, operator or ingest/],
    [`operator:al ice:${secret}`, /entry 1: the name must be 1-64 characters/],
    ['operator:alice:short', new RegExp(`entry 1: the token must be at least ${MIN_TOKEN_LENGTH} characters without spaces; generate one with: openssl rand -hex 32`)],
    [`operator:alice:${secret} x`, /entry 1: the token must be at least/],
  ];
  for (const [env, p] of cases) {
    const e = loadError({ env });
    assert.match(e.message, p, env);
    assert.ok(!e.message.includes(secret), `the message never repeats a token: ${e.message}`);
  }
  const many = loadError({ env: 'x,viewer:a b:0123456789abcdef0' });
  assert.equal(many.problems.length, 2, 'every problem is reported at once');
});

test('the tokens file example in docs/api.md loads', (t) => {
  const doc = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
  const m = /```yaml\n(# [^\n]*tokens\.yaml\n[\s\S]*?)```/.exec(doc);
  assert.ok(m, 'docs/api.md has a ```yaml block starting with a tokens.yaml comment');
  const store = loadTokens({ file: tmpFile(t, m[1] as string) });
  assert.deepEqual(
    store.list().map((i) => `${i.name}/${i.role}`),
    ['alice/operator', 'grafana/viewer'],
  );
});
