/**
 * This node's housekeeping-job and practice-run metrics (docs/schedules.md):
 * gridsteer_job_runs_total{job,outcome} — runs this node started (outcome ok, failed) and slots it
 * did not start (not_elected: another node took the slot or the last run still held it;
 * coordinator_error; missed; overlap); gridsteer_practice_runs_total{outcome} — practice-run
 * outcomes this node recorded (skipped, started, aborted, finished);
 * gridsteer_practice_moved_queries_total — measured queries the finished runs it recorded moved
 * off their regions; gridsteer_practice_probe_errors_total — failing probes it recorded while
 * a run acted.
 */
import client, { type Registry } from 'prom-client';
import type { JobRunner } from './jobs.js';

export function registerJobMetrics(registry: Registry, jobs: JobRunner, practice: ReadonlyMap<string, number>): void {
  new client.Counter({
    name: 'gridsteer_job_runs_total',
    help: 'housekeeping job slots on this node, by job and outcome: ok, failed (runs it started); not_elected, coordinator_error, missed, overlap (slots it did not start)',
    labelNames: ['job', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const j of jobs.jobs) {
        const c = jobs.countsOf(j.name);
        if (!c) continue;
        this.inc({ job: j.name, outcome: 'ok' }, c.ok);
        this.inc({ job: j.name, outcome: 'failed' }, c.failed);
        this.inc({ job: j.name, outcome: 'not_elected' }, c.notElected);
        this.inc({ job: j.name, outcome: 'coordinator_error' }, c.coordinatorError);
        this.inc({ job: j.name, outcome: 'missed' }, c.missed);
        this.inc({ job: j.name, outcome: 'overlap' }, c.overlap);
      }
    },
  });
  new client.Counter({
    name: 'gridsteer_practice_runs_total',
    help: 'practice-run outcomes this node recorded in the audit log: skipped, started, aborted, finished',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const o of ['skipped', 'started', 'aborted', 'finished']) this.inc({ outcome: o }, practice.get(`practice.${o}`) ?? 0);
    },
  });
  new client.Counter({
    name: 'gridsteer_practice_moved_queries_total',
    help: "measured queries of the practice runs' regions' clients that the plan sent elsewhere, in the finished runs this node recorded",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(practice.get('practice.moved-queries') ?? 0);
    },
  });
  new client.Counter({
    name: 'gridsteer_practice_probe_errors_total',
    help: 'failing health probes anywhere in the fleet that this node recorded while a practice run acted',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(practice.get('practice.probe-errors') ?? 0);
    },
  });
}
