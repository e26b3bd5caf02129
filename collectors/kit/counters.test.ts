/**
 * Per-instance counters: sums of counter trees, and two instances of one real collector
 * (health, probing a loopback listener) counting apart, each in the copy its context gave it,
 * while the family's total sums them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Value } from '@sinclair/typebox/value';
import { countersFor, defineCounters, sumCounters } from './counters.js';
import { health, healthCounters, HealthConfigSchema, type HealthConfig } from '../health/index.js';
import type { CollectorContext } from '../types.js';

test('sumCounters: numbers add, maps merge by key, other leaves are the newest set one', () => {
  const template = { a: 0, m: {} as Record<string, number>, n: { x: 0 }, listening: null as string | null };
  const trees = [
    { a: 1, m: { E1: 2 }, n: { x: 1 }, listening: '127.0.0.1:1' },
    { a: 2, m: { E1: 1, E2: 5 }, n: { x: 3 }, listening: null },
  ];
  assert.deepEqual(sumCounters(trees, template), { a: 3, m: { E1: 3, E2: 5 }, n: { x: 4 }, listening: '127.0.0.1:1' });
  assert.deepEqual(sumCounters([], template), template);
  const fam = defineCounters(template);
  const one = fam.create();
  const two = countersFor({}, fam);
  one.a += 2;
  two.a += 5;
  two.m.E9 = 1;
  two.listening = '[::1]:9';
  assert.deepEqual([one.a, two.a], [2, 5], 'two copies, not one');
  assert.deepEqual(structuredClone(fam.total), { a: 7, m: { E9: 1 }, n: { x: 0 }, listening: '[::1]:9' });
  assert.deepEqual({ ...fam.total }, structuredClone(fam.total), 'spreads like a plain object');
  assert.equal(fam.template.a, 0, 'the template stays zero');
});

test('two instances of one collector do not share counters', async (t) => {
  const server = net.createServer((s) => s.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const config = Value.Default(HealthConfigSchema, { intervalMs: 500, timeoutMs: 300, checks: [{ type: 'tcp', port }] }) as HealthConfig;
  const before = { ...healthCounters.total };
  // What the collector host does: a fresh copy per instance, kept for /metrics.
  const instance = (endpoints: string[]) => {
    const kept: object[] = [];
    const abort = new AbortController();
    const ctx: CollectorContext<HealthConfig> = {
      config,
      log: pino({ level: 'silent' }),
      emit: () => undefined,
      now: Date.now,
      node: 'n',
      fleet: () => [{ id: 'r1', endpoints }],
      signal: abort.signal,
      counters: (family) => {
        const c = family.create();
        kept.push(c);
        return c;
      },
    };
    return { ctx, kept, abort };
  };
  const a = instance(['127.0.0.1']);
  const b = instance(['127.0.0.1', '127.0.0.2', '127.0.0.3']);
  const stopA = await health.start(a.ctx);
  const stopB = await health.start(b.ctx);
  await new Promise((r) => setTimeout(r, 200));
  a.abort.abort();
  b.abort.abort();
  await Promise.all([stopA(), stopB()]);
  assert.equal(a.kept.length, 1);
  assert.equal(b.kept.length, 1);
  const ca = a.kept[0] as typeof before;
  const cb = b.kept[0] as typeof before;
  assert.notEqual(ca, cb);
  assert.deepEqual([ca.rounds, ca.probes], [1, 1], 'instance a: one round, one endpoint');
  assert.deepEqual([cb.rounds, cb.probes], [1, 3], 'instance b: one round, three endpoints');
  assert.equal(healthCounters.total.probes - before.probes, 4, 'the family total sums both');
});
