/**
 * How node-cron's errors are logged (nodeCronError): a slot skipped because the run
 * coordinator (the store) did not answer is a warning naming the job — the store's outage is
 * reported already and the slot counted as coordinator_error — anything else an error. Checked
 * against node-cron itself: a task whose coordinator throws, on a seconds cron (bounded wait).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import cron from 'node-cron';
import { nodeCronError } from './jobs.js';

function recorder() {
  const lines: { level: 'warn' | 'error'; obj: Record<string, unknown>; msg: string }[] = [];
  return {
    lines,
    log: {
      warn: (obj: Record<string, unknown>, msg: string) => void lines.push({ level: 'warn', obj, msg }),
      error: (obj: Record<string, unknown>, msg: string) => void lines.push({ level: 'error', obj, msg }),
    } as unknown as Parameters<typeof nodeCronError>[0],
  };
}

test('nodeCronError: the run coordinator failing is a warning naming the job; anything else an error', () => {
  const r = recorder();
  nodeCronError(r.log, 'gc-signals', 'Run coordinator failed; skipping execution (fail-closed)');
  nodeCronError(r.log, 'audit-trim', new Error('task exploded'));
  assert.deepEqual(
    r.lines.map((l) => [l.level, l.obj.job, l.msg]),
    [
      ['warn', 'gc-signals', 'jobs: gc-signals: the store did not answer the run coordinator, so this node skipped the slot (fail-closed; counted as coordinator_error)'],
      ['error', 'audit-trim', 'jobs: node-cron'],
    ],
  );
  assert.equal(r.lines[1]!.obj.err, 'task exploded');
});

test('node-cron itself: a distributed task whose coordinator throws is logged as the warning, and skipped', async () => {
  const r = recorder();
  let ran = 0;
  let skipped = 0;
  const task = cron.createTask('* * * * * *', () => void ran++, {
    name: 'gridsteer-test-coordinator',
    distributed: true,
    runCoordinator: {
      shouldRun: async () => {
        throw new Error('store unavailable');
      },
    },
    distributedLease: 1000,
    logger: { info: () => undefined, warn: () => undefined, error: (m: unknown) => nodeCronError(r.log, 'test-job', m), debug: () => undefined },
  });
  task.on('execution:skipped', () => void skipped++);
  await task.start();
  // Bounded: at most 40 × 100 ms for a slot to come and be skipped.
  for (let i = 0; i < 40 && r.lines.length === 0; i++) await new Promise((res) => setTimeout(res, 100));
  await task.destroy();
  assert.equal(ran, 0, 'fail-closed: not run');
  assert.ok(r.lines.length >= 1, 'node-cron logged the coordinator failure');
  assert.deepEqual([...new Set(r.lines.map((l) => `${l.level} ${l.obj.job}`))], ['warn test-job'], JSON.stringify(r.lines));
  assert.ok(skipped >= 1, 'and reported the slot skipped');
});
