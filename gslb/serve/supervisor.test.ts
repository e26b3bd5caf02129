/**
 * The primary hands plans to its DNS workers with at most one state message in each worker's
 * channel: plans published while one is being written are not queued, and the newest is sent
 * once that write is done. (A write storm queued every plan in the primary's memory faster
 * than the workers read them: 7 GB in 4 minutes in the ingest campaign, then the kernel killed
 * the node.) A worker here is a stand-in for cluster's Worker that records what it is sent and
 * completes each write when the test says; test/workers.test.ts runs real workers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { DnsProcesses } from './supervisor.js';

test('publish: one state message in flight per worker; the newest is sent after it, those in between are skipped', () => {
  let version = 'v0';
  const dp = new DnsProcesses({ workers: 1, listen: [], tcp: {} as never, log: pino({ level: 'silent' }), current: () => ({ prepared: { state: { version } } as never, table: null }) });
  const sent: string[] = [];
  const done: (() => void)[] = [];
  const worker = {
    id: 1,
    isConnected: () => true,
    send(msg: { t: string; state: { version: string } }, _h: unknown, _o: unknown, cb: () => void) {
      sent.push(`${msg.t}:${msg.state.version}`);
      done.push(cb);
      return true;
    },
  };
  (dp as unknown as { slots: Map<number, unknown> }).slots.set(1, { worker, bound: true, acked: '', sending: false, stale: false });
  for (let i = 1; i <= 50; i++) {
    version = `v${i}`;
    dp.publish();
  }
  assert.deepEqual(sent, ['state:v1'], 'one message while the first is written');
  done.shift()!();
  assert.deepEqual(sent, ['state:v1', 'state:v50'], 'then the newest, once');
  done.shift()!();
  assert.deepEqual(sent, ['state:v1', 'state:v50'], 'nothing more to send');
  version = 'v51';
  dp.publish();
  assert.deepEqual(sent, ['state:v1', 'state:v50', 'state:v51'], 'an idle channel sends at once');
});
