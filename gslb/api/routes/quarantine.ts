/**
 * Quarantine routes (ADR 0020): the stored records held out of planning, and the operator's
 * two ways out of it.
 * - GET  /v1/quarantine          (viewer):   what is held out, from the store as this node last read it.
 * - POST /v1/quarantine/release  (operator): `{target, reason}`: plan with the record again
 *   (if planning with it still fails, a node quarantines it again). Audited.
 * - POST /v1/quarantine/drop     (operator): `{target, reason}`: delete the record from the
 *   store with its entry; the audit entry keeps both. Audited.
 * An unknown target is 400 naming `body.target` with the targets held; a store that does not
 * answer is 503 GSLB_ERR_STORE_UNAVAILABLE (nothing changed).
 */
import { Type } from '@sinclair/typebox';
import { apiError, NOTHING_CHANGED } from '../errors.js';
import { errorResponses, type ApiPlugin } from '../schemas.js';
import type { QuarantineEntry } from '../../model/snapshot.js';
import { StoreError } from '../../state/store.js';
import { OverrideError } from '../../control/service.js';

/** What the routes need (gslb/main.ts wires the StateService). */
export interface QuarantineApi {
  /** The quarantine as this node last read it (cheap, synchronous). */
  view(): { held: QuarantineEntry[]; idle: number; planError: string | null };
  end(how: 'release' | 'drop', target: string, actor: string, reason: string): Promise<{ entry: QuarantineEntry; revision: number }>;
}

export interface QuarantineRoutesOptions extends Record<string, unknown> {
  quarantine: QuarantineApi;
}

export const QuarantineEntrySchema = Type.Object(
  {
    target: Type.String({ description: 'what is held out: signal:<signal id>, override:<override id>, demand:<bucket>|<home>|<name>, or file:<line> (a line of the memory store\'s file it could not read)' }),
    fingerprint: Type.String({ description: "the record's content it was found with (a record written again since is planned again); * = whatever it holds" }),
    why: Type.String({ description: 'the error planning with it threw, or why it could not be read' }),
    at: Type.Integer({ description: 'ms epoch it was found (the finding node\'s clock)' }),
    by: Type.String({ description: 'the node that found it' }),
  },
  { description: 'a stored record held out of planning (ADR 0020)' },
);

const EndBody = Type.Object(
  {
    target: Type.String({ minLength: 1, maxLength: 1024, description: 'the target of a quarantined record (GET /v1/quarantine)' }),
    reason: Type.String({ minLength: 1, maxLength: 500, description: 'why (audited)' }),
  },
  { additionalProperties: false },
);

export const quarantineRoutes: ApiPlugin<QuarantineRoutesOptions> = async (app, opts) => {
  const q = opts.quarantine;
  app.get(
    '/v1/quarantine',
    {
      onRequest: app.requireRole('viewer'),
      schema: {
        response: {
          200: Type.Object({
            held: Type.Array(QuarantineEntrySchema, { description: 'records held out of planning now' }),
            idle: Type.Integer({ minimum: 0, description: 'entries whose record is gone or was written again since (released by the next plan)' }),
            planError: Type.Union([Type.String(), Type.Null()], { description: 'the last plan attempt failed and no record could be blamed: the error (the last good plan stays in force)' }),
          }),
          ...errorResponses,
        },
      },
    },
    async () => q.view(),
  );
  for (const how of ['release', 'drop'] as const) {
    app.post(
      `/v1/quarantine/${how}`,
      {
        onRequest: app.requireRole('operator'),
        schema: {
          body: EndBody,
          response: { 200: Type.Object({ [how === 'release' ? 'released' : 'dropped']: QuarantineEntrySchema, revision: Type.Integer({ description: 'the store revision of the change' }) }), ...errorResponses },
        },
      },
      async (request) => {
        try {
          const r = await q.end(how, request.body.target, request.identity?.name ?? 'unknown', request.body.reason);
          return { [how === 'release' ? 'released' : 'dropped']: r.entry, revision: r.revision };
        } catch (e) {
          if (e instanceof OverrideError) throw apiError('GSLB_ERR_VALIDATION', { field: e.field, problem: e.problem }, { field: e.field });
          if (e instanceof StoreError && e.code === 'unavailable') throw apiError('GSLB_ERR_STORE_UNAVAILABLE', { reason: e.message, changed: NOTHING_CHANGED });
          throw e;
        }
      },
    );
  }
};
