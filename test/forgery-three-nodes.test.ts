/**
 * No feed can speak for another, on three nodes sharing one real Redis (issue 28, ADR 0021).
 * Bindings as docs/grid-policy.md shows them; one ingest token (`evil`, granted `utility/`)
 * tries every forgery the issue found, spread over the three nodes:
 *
 * - post as the genuine VTN's source (refused, 403, on every node);
 * - post claims of loss for four regions under many of its own bound sources, two per region,
 *   so that its sources corroborate each other (one principal: one witness);
 * - cancel the genuine VTN's claim under the VTN's name (403) and under its own source with the
 *   same event id (stored, but it cancels only its own claims);
 * - overwrite the genuine claim's record (403: the source is not its grant).
 *
 * Every node's plan is the same, the trusted share of the name's capacity units at every
 * instant never exceeds maxTrustedLossShare, the rest waits with the critical alert, and the
 * genuine claim stays trusted. No DNS is sent: the rate limiter is not involved.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { sleep } from './helpers/net.js';
import { apiCall, type ApiReply } from './helpers/api.js';
import { spawnServer, writeTestConfig, type RunningServer, type TestConfig } from './helpers/server.js';
import { startRedis, type RunningRedis } from './helpers/redis.js';

const EVIL = 'forgery-evil-token-3c1d0e9a';
const PJM = 'forgery-pjm-token-81b2f47c';
const VIEWER = 'forgery-viewer-token-aa01';
const sha = (t: string) => createHash('sha256').update(t, 'utf8').digest('hex');
const GENUINE = 'openadr3/vtn.pjm.example';
const SHARE = 0.5;

let redis: RunningRedis;
let cfg: TestConfig;
const nodes: RunningServer[] = [];

before(async () => {
  redis = await startRedis();
  cfg = writeTestConfig((c) => {
    c.state = { store: 'redis', redis: { url: redis.url, prefix: `f${process.pid}` }, planDebounceMs: 20 };
    c.http = { ...(c.http ?? {}), tokensFile: 'tokens.yaml' };
    const policy = ((c as Record<string, unknown>).policy ?? {}) as Record<string, unknown>;
    (c as Record<string, unknown>).policy = {
      ...policy,
      grid: { ...((policy.grid as object) ?? {}), loss: { bindings: { [GENUINE]: ['us-va'], 'utility/': ['us-tx', 'us-va', 'ap-tyo', 'ca-ab', 'eu-ie'] }, maxTrustedLossShare: SHARE } },
    };
  });
  writeFileSync(
    join(cfg.dir, 'tokens.yaml'),
    stringify({
      tokens: [
        { name: 'evil', role: 'ingest', sha256: sha(EVIL), grants: ['utility/'] },
        { name: 'pjm', role: 'ingest', sha256: sha(PJM), grants: [GENUINE] },
        { name: 'vic', role: 'viewer', sha256: sha(VIEWER) },
      ],
    }),
  );
  for (let i = 0; i < 3; i++) nodes.push(await spawnServer({ configFile: cfg.file }));
});

after(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  await redis?.cleanup();
  cfg?.cleanup();
});

const api = (node: RunningServer, method: string, path: string, token: string | null, body?: unknown): Promise<ApiReply> => apiCall(node.http, method, path, token, body);
const H = 3_600_000;

function shed(region: string, source: string, id: string, start: number, o: { cancelled?: boolean; at?: number } = {}) {
  const at = o.at ?? Date.now();
  return { region, kind: 'grid.event', source, key: id, observedAt: at, expiresAt: start + 2 * H, value: { id, type: 'load-shed', start, end: start + H, ...(o.cancelled ? { cancelled: true } : {}) } };
}

interface PlanView {
  version: string;
  trust?: { region: string; source: string; principal: string; eventId: string; status: string; at: number }[];
  alerts?: { kind: string; severity: string; regions: string[] }[];
}

test('one token tries every forgery over three nodes: the trusted share never exceeds maxTrustedLossShare, the genuine claim stays trusted', async () => {
  const t1 = Date.now() + 2 * H; // evil's claims
  const t2 = t1 + 3 * H; // the genuine VTN's claim, later, not overlapping
  // The genuine claim, through node C.
  const genuine = await api(nodes[2]!, 'POST', '/v1/signals', PJM, { signals: [shed('us-va', GENUINE, 'pjm-1', t2)] });
  assert.equal(genuine.status, 200, JSON.stringify(genuine.body));

  // 1. Speaking as the genuine source, on every node: 403, naming the field.
  for (const n of nodes) {
    const r = await api(n, 'POST', '/v1/signals', EVIL, { signals: [shed('us-tx', GENUINE, 'x-1', t1)] });
    assert.equal(r.status, 403, JSON.stringify(r.body));
    assert.equal((r.body.error as { field: string }).field, 'body.signals[0].source');
  }
  // 2. Claims for four regions, two bound sources each, one batch per node.
  const regions = ['us-tx', 'us-va', 'ap-tyo', 'ca-ab'];
  let k = 0;
  for (const region of regions) {
    const n = nodes[k % 3]!;
    const batch = [shed(region, `utility/feeder-${k}`, `e-${region}`, t1), shed(region, `utility/substation-${k}`, `s-${region}`, t1)];
    const r = await api(n, 'POST', '/v1/signals', EVIL, { signals: batch });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    k++;
  }
  // 3. Cancel the genuine claim: under the VTN's name (403), and under its own source with the same id.
  const forgedCancel = await api(nodes[1]!, 'POST', '/v1/signals', EVIL, { signals: [shed('us-va', GENUINE, 'pjm-1', t2, { cancelled: true })] });
  assert.equal(forgedCancel.status, 403);
  const ownCancel = await api(nodes[0]!, 'POST', '/v1/signals', EVIL, { signals: [shed('ca-ab', 'utility/feeder-0', 'pjm-1', t2, { cancelled: true })] });
  assert.equal(ownCancel.status, 200);

  // Every node converges on the same plan holding all eight claims and the genuine one.
  const units = new Map(((await api(nodes[0]!, 'GET', '/v1/regions', VIEWER)).body.regions as { id: string; capacityUnits?: number }[]).map((r) => [r.id, r.capacityUnits ?? 1]));
  const total = [...units.values()].reduce((a, b) => a + b, 0);
  let plans: PlanView[] = [];
  for (let i = 0; i < 100; i++) {
    plans = await Promise.all(nodes.map(async (n) => (await api(n, 'GET', '/v1/plan', VIEWER)).body as unknown as PlanView));
    if (plans.every((p) => (p.trust ?? []).length === 9 && p.version === plans[0]!.version)) break;
    await sleep(100);
  }
  for (const p of plans) assert.equal((p.trust ?? []).length, 9, `every claim in the plan: ${JSON.stringify(p.trust)}`);
  assert.ok(plans.every((p) => p.version === plans[0]!.version), `one plan on every node: ${plans.map((p) => p.version).join(', ')}`);
  const trust = plans[0]!.trust!;

  // The trusted share at every instant a claim starts (every claim here lasts an hour).
  for (const at of new Set(trust.map((d) => d.at))) {
    const dark = new Set(trust.filter((d) => d.status === 'trusted' && d.at === at).map((d) => d.region));
    const share = [...dark].reduce((a, r) => a + units.get(r)!, 0) / total;
    assert.ok(share <= SHARE + 1e-9, `${JSON.stringify(trust)}\nat ${new Date(at).toISOString()}: ${[...dark].join(', ')} trusted dark, ${Math.round(share * 100)} % > ${SHARE * 100} %`);
  }
  const evil = trust.filter((d) => d.principal === 'token:evil');
  assert.ok(evil.some((d) => d.status === 'waiting'), `some of evil's claims wait: ${JSON.stringify(evil)}`);
  assert.ok(plans[0]!.alerts!.some((a) => a.kind === 'loss-waiting' && a.severity === 'critical'), 'the critical loss-waiting alert stands');
  const pjm = trust.find((d) => d.source === GENUINE)!;
  assert.deepEqual([pjm.principal, pjm.status], ['token:pjm', 'trusted'], "the genuine claim is untouched by evil's cancel");
});
