/**
 * Housekeeping jobs and practice runs (issue 21; docs/api.md "Recurring windows"):
 * - GET /v1/jobs           (viewer): every housekeeping job: its schedule, next slot on this node,
 *   the fleet's last runs (from the audit log: a run without a finish is incomplete once a
 *   later slot started) and this node's counts.
 * - GET /v1/practice-runs  (viewer): the practice runs recorded (skipped and why, started,
 *   aborted and why, finished: the least share planned, restored), newest first.
 */
import { Type } from '@sinclair/typebox';
import { apiError, NOTHING_CHANGED } from '../errors.js';
import { errorResponses, type ApiPlugin } from '../schemas.js';
import { StoreError } from '../../state/store.js';
import type { JobView } from '../../control/jobs.js';
import type { PracticeRunView } from '../../control/housekeeping.js';

export interface JobsRoutesOptions extends Record<string, unknown> {
  jobs: { status(): Promise<JobView[]>; practiceRuns(): Promise<PracticeRunView[]> };
}

const Run = Type.Object({
  slot: Type.Integer({ description: 'the slot, ms epoch' }),
  node: Type.String(),
  startedAt: Type.Integer(),
  finishedAt: Type.Optional(Type.Integer()),
  outcome: Type.Union(['running', 'ok', 'failed', 'incomplete'].map((x) => Type.Literal(x))),
  detail: Type.String(),
});

export const JobsSchema = Type.Object({
  jobs: Type.Array(
    Type.Object({
      name: Type.String(),
      cron: Type.String({ description: 'UTC' }),
      what: Type.String(),
      nextRun: Type.Union([Type.Integer(), Type.Null()], { description: "this node's next slot, ms epoch" }),
      lastRun: Type.Union([Run, Type.Null()]),
      earlier: Type.Array(Run),
      thisNode: Type.Object({
        started: Type.Integer(),
        ok: Type.Integer(),
        failed: Type.Integer(),
        notElected: Type.Integer({ description: 'slots another node took (or the last run still held)' }),
        coordinatorError: Type.Integer({ description: 'slots skipped because the store did not answer' }),
        missed: Type.Integer({ description: "slots missed: this node's event loop was blocked past node-cron's tolerance" }),
        overlap: Type.Integer({ description: "slots skipped: this node's last run of the job was still going" }),
      }),
    }),
  ),
});

const PracticeSpanSchema = (description: string) =>
  Type.Object(
    {
      from: Type.Integer({ description: 'ms epoch, a 10-second bucket boundary' }),
      to: Type.Integer({ description: 'ms epoch, exclusive' }),
      queries: Type.Number({ description: 'steered queries counted fleet-wide from those clients in the closed buckets of [from, to)' }),
      qps: Type.Number(),
    },
    { description },
  );

export const PracticeRunsSchema = Type.Object({
  runs: Type.Array(
    Type.Object({
      window: Type.String(),
      regions: Type.Array(Type.String()),
      start: Type.Integer(),
      end: Type.Integer(),
      outcome: Type.Union(['skipped', 'started', 'aborted', 'finished'].map((x) => Type.Literal(x))),
      why: Type.Optional(Type.String()),
      share: Type.Optional(Type.Number({ description: 'the least share the regions were planned down to during the run' })),
      restored: Type.Optional(Type.Boolean()),
      restoredAt: Type.Optional(Type.Integer({ description: "ms epoch: the regions' first full-share step after the run" })),
      traffic: Type.Optional(
        Type.Object(
          {
            homes: Type.Array(Type.String(), { description: "the run's regions: the measured demand of clients homed there is read" }),
            before: PracticeSpanSchema('the 5 minutes before the first step'),
            held: PracticeSpanSchema('the run held its regions at its least share: its start until its end or abort'),
            acting: Type.Intersect([
              PracticeSpanSchema('from the first step until the regions were back at full share'),
              Type.Object({ moved: Type.Number({ description: "of those queries, the ones the plan sent elsewhere: each bucket's queries × (1 − its home region's planned share over the bucket)" }) }),
            ]),
          },
          { description: 'measured demand (GET /v1/demand buckets) of the run\'s regions\' clients; recorded with finished' },
        ),
      ),
      probeErrors: Type.Optional(
        Type.Array(
          Type.Object({ region: Type.String(), source: Type.String(), key: Type.String(), at: Type.Integer({ description: "the probe's observedAt, ms epoch" }), detail: Type.Optional(Type.String()) }),
          { description: 'failing health probes anywhere in the fleet while the run acted (sampled at each run of the practice-runs job), oldest first' },
        ),
      ),
      recordedBy: Type.String(),
    }),
  ),
});

function failure(e: unknown): never {
  if (e instanceof StoreError && e.code === 'unavailable') throw apiError('GSLB_ERR_STORE_UNAVAILABLE', { reason: e.message, changed: NOTHING_CHANGED });
  throw e;
}

export const jobsRoutes: ApiPlugin<JobsRoutesOptions> = async (app, opts) => {
  app.get('/v1/jobs', { onRequest: app.requireRole('viewer'), schema: { response: { 200: JobsSchema, ...errorResponses } } }, async () => {
    try {
      return { jobs: await opts.jobs.status() };
    } catch (e) {
      return failure(e);
    }
  });
  app.get('/v1/practice-runs', { onRequest: app.requireRole('viewer'), schema: { response: { 200: PracticeRunsSchema, ...errorResponses } } }, async () => {
    try {
      return { runs: await opts.jobs.practiceRuns() };
    } catch (e) {
      return failure(e);
    }
  });
};
