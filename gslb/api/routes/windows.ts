/**
 * Recurring windows (issue 21; docs/schedules.md, docs/api.md "Recurring windows"):
 * - GET    /v1/windows                 (viewer):   every window (configuration and API) with its next occurrences, the plan's horizon, live skips.
 * - POST   /v1/windows                 (operator): a window as `windows:` in the config takes it → 201 the stored override (audited).
 * - DELETE /v1/windows/:id             (operator): `?reason=` → ends a window added through the API (audited).
 * - POST   /v1/windows/:id/skip-next   (operator): `{reason}` → its next occurrence does not act (audited).
 * Bad input → 400 GSLB_ERR_VALIDATION naming the field (the cron expression's bad part named by
 * node-cron's validation); a store that does not answer → 503.
 */
import { Type } from '@sinclair/typebox';
import { apiError, NOTHING_CHANGED } from '../errors.js';
import { errorResponses, type ApiPlugin } from '../schemas.js';
import { OverrideSchema } from '../../model/types.js';
import { DURATION_PATTERN, PlannerWindowSchema, WindowOccurrenceSchema, WindowSpecSchema } from '../../model/windows.js';
import { StoreError } from '../../state/store.js';
import { OverrideError } from '../../control/service.js';
import type { WindowsService } from '../../control/windows.js';

export interface WindowsRoutesOptions extends Record<string, unknown> {
  windows: Pick<WindowsService, 'list' | 'add' | 'remove' | 'skipNext'>;
}

const Reason = Type.String({ minLength: 1, maxLength: 500, description: 'why, in words (audited)' });
const WindowParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'window id' }) });

/** The body: a window as the config writes it (the config's annotations aside: fastify's validator is strict about keywords). */
export const WindowBody = Type.Object(
  { ...WindowSpecSchema.properties, duration: Type.String({ pattern: DURATION_PATTERN, description: WindowSpecSchema.properties.duration.description }) },
  { additionalProperties: false, description: WindowSpecSchema.description },
);

const { fields: _fields, learnedAt: _learned, ...listed } = PlannerWindowSchema.properties;
export const WindowListingSchema = Type.Object({
  now: Type.Integer({ description: 'ms epoch of this listing' }),
  horizon: Type.Union([Type.Object({ epoch: Type.Integer(), from: Type.Integer(), to: Type.Integer() }), Type.Null()], {
    description: 'the plan\'s horizon: epoch E = floor(now / 1 day); occurrences starting in [from, to) are planned; null = no window',
  }),
  windows: Type.Array(
    Type.Object({
      ...listed,
      overrideId: Type.Optional(Type.String({ description: 'API windows: the override that stores it' })),
      addedBy: Type.Optional(Type.String()),
      next: Type.Array(WindowOccurrenceSchema, { description: 'its next occurrences (one in progress included), skipped ones with why' }),
    }),
  ),
  skips: Type.Array(Type.Object({ id: Type.String(), window: Type.String(), at: Type.Integer(), actor: Type.String(), reason: Type.String() }), { description: 'live skips (gridsteer windows skip-next)' }),
});

function failure(e: unknown): never {
  if (e instanceof OverrideError) throw apiError('GSLB_ERR_VALIDATION', { field: e.field, problem: e.problem }, { field: e.field });
  if (e instanceof StoreError && e.code === 'unavailable') throw apiError('GSLB_ERR_STORE_UNAVAILABLE', { reason: e.message, changed: NOTHING_CHANGED });
  if (e instanceof StoreError && e.code === 'not_found') throw apiError('GSLB_ERR_NOT_FOUND', { what: 'that window', hint: 'GET /v1/windows lists them' });
  throw e;
}

export const windowsRoutes: ApiPlugin<WindowsRoutesOptions> = async (app, opts) => {
  const w = opts.windows;
  const actor = (r: { identity?: { name: string } | null }) => r.identity?.name ?? 'unknown';

  app.get('/v1/windows', { onRequest: app.requireRole('viewer'), schema: { response: { 200: WindowListingSchema, ...errorResponses } } }, async () => {
    try {
      return await w.list();
    } catch (e) {
      return failure(e);
    }
  });

  app.post(
    '/v1/windows',
    { onRequest: app.requireRole('operator'), schema: { body: WindowBody, response: { 201: OverrideSchema, ...errorResponses } } },
    async (request, reply) => {
      try {
        return reply.code(201).send(await w.add(request.body, actor(request)));
      } catch (e) {
        return failure(e);
      }
    },
  );

  app.delete(
    '/v1/windows/:id',
    {
      onRequest: app.requireRole('operator'),
      schema: { params: WindowParams, querystring: Type.Object({ reason: Reason }, { additionalProperties: false }), response: { 200: OverrideSchema, ...errorResponses } },
    },
    async (request) => {
      try {
        return await w.remove(request.params.id, actor(request), request.query.reason);
      } catch (e) {
        return failure(e);
      }
    },
  );

  app.post(
    '/v1/windows/:id/skip-next',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        params: WindowParams,
        body: Type.Object({ reason: Reason }, { additionalProperties: false }),
        response: { 201: Type.Object({ skip: OverrideSchema, occurrence: WindowOccurrenceSchema }), ...errorResponses },
      },
    },
    async (request, reply) => {
      try {
        return reply.code(201).send(await w.skipNext(request.params.id, actor(request), request.body.reason));
      } catch (e) {
        return failure(e);
      }
    },
  );
};
