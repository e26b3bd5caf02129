/**
 * Operator failover routes (issue 6; docs/api.md "Operator failover"):
 * - POST   /v1/regions/:id/drain   (operator): `{reason, cap?, ramp?, by?}` → 201 the drain override.
 * - DELETE /v1/regions/:id/drain   (operator): `?reason=` → ends the drains, ramps back (slow start).
 * - POST   /v1/regions/:id/force   (operator): `{state: up|down, until?, reason}` (until required for up).
 * - POST   /v1/automation/freeze   (operator): `{frozen, reason, until?}` holds gridPolicy where it stands.
 * - POST   /v1/grid/distrust       (operator): `{source | principal, distrusted, reason, until?}`: a grid source's (or a principal's) claims of physical loss no longer trusted (ADR 0014, 0021).
 * - GET    /v1/status              (viewer):   every region's share, state and next change now.
 * - POST   /v1/grid-events         (operator): a grid event entered by hand → 201 the stored signal.
 * - POST   /v1/plan/preview        (operator): the plan and traffic shares if an override, event or
 *   freeze were applied; nothing is written.
 * Bad input → 400 GSLB_ERR_VALIDATION naming the field; a store that does not answer → 503.
 */
import { Duration, Instant, Watts } from '../../model/domains.js';
import { Type } from '@sinclair/typebox';
import { apiError, NOTHING_CHANGED } from '../errors.js';
import { errorResponses, type ApiPlugin } from '../schemas.js';
import { OverrideSchema, PlanAlertSchema, PlanSchema } from '../../model/types.js';
import { StoreError } from '../../state/store.js';
import { OverrideError } from '../../control/service.js';
import type { OperatorService } from '../../control/operator.js';
import { RegionStateSchema } from '../../model/region-state.js';
import { StoreLossSchema } from './state.js';

export interface OperatorRoutesOptions extends Record<string, unknown> {
  operator: Pick<OperatorService, 'drain' | 'undrain' | 'force' | 'unforce' | 'freeze' | 'distrust' | 'status' | 'preview' | 'enterEvent'>;
}

const Reason = Type.String({ minLength: 1, maxLength: 500, description: 'why, in words (audited, shown in explain and status)' });
const RegionParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 63, description: 'region id' }) });

function failure(e: unknown): never {
  if (e instanceof OverrideError) throw apiError('GSLB_ERR_VALIDATION', { field: e.field, problem: e.problem }, { field: e.field });
  if (e instanceof StoreError && e.code === 'unavailable') throw apiError('GSLB_ERR_STORE_UNAVAILABLE', { reason: e.message, changed: NOTHING_CHANGED });
  if (e instanceof StoreError && e.code === 'not_found') throw apiError('GSLB_ERR_NOT_FOUND', { what: 'that override', hint: 'GET /v1/overrides lists the live ones' });
  throw e;
}

const Ended = Type.Array(OverrideSchema, { description: 'overrides this change ended (audited)' });

const StatusSchema = Type.Object({
  now: Type.Integer({ description: 'ms epoch of this status' }),
  planVersion: Type.String(),
  frozen: Type.Union([OverrideSchema, Type.Null()], { description: 'the freeze in force, if any' }),
  regions: Type.Array(
    Type.Object({
      id: Type.String(),
      share: Type.Number({ description: 'admission share now (0 when down)' }),
      down: Type.Boolean(),
      refuse: Type.Boolean({ description: 'the gateway is told to refuse new streams' }),
      state: RegionStateSchema,
      ttlCap: Type.Optional(Type.Number()),
      ttl: Type.Optional(Type.Number({ description: 'the TTL an answer naming it carries now, s, at most (its names\' TTL, bounded by its TTL cap and its next change); absent when no answer names it' })),
      reasons: Type.Array(Type.String()),
      next: Type.Optional(Type.Object({ at: Type.Integer(), share: Type.Number(), down: Type.Boolean(), ifNotRefreshed: Type.Optional(Type.Literal(true)) }, { description: 'the next scheduled change of its share or down (a step that changes only its TTL cap or weights is not one); ifNotRefreshed: a fact it depends on goes stale then, and a collector still reporting moves that on' })),
    }),
  ),
  unplaced: Type.Optional(Type.Record(Type.String(), Type.Number(), { description: 'demand (q/s per home) no region with headroom can take' })),
  alerts: Type.Optional(Type.Array(PlanAlertSchema, { description: "the plan's alerts (ADR 0014)" })),
  hooks: Type.Optional(Type.Unknown({ description: "the drain hooks' last call per region (docs/drain-hooks.md), when any region has one" })),
  planError: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'planning fails and no stored record could be blamed (ADR 0020): the error; this node answers from its last good plan (null when planning works)' })),
  storeLoss: Type.Optional(Type.Union([StoreLossSchema, Type.Null()], { description: 'a data loss of the state store this node holds its last plan for, until an operator confirms it (null when none)' })),
});

/** POST /v1/automation/freeze: the body (test/core-total.test.ts compiles it too). */
export const FreezeBody = Type.Object(
  {
    frozen: Type.Boolean({ description: 'true: hold gridPolicy where it stands now; false: let it act again' }),
    reason: Reason,
    until: Type.Optional(Instant('when the freeze ends by itself')),
  },
  { additionalProperties: false },
);

/** POST /v1/grid/distrust: the body (test/core-total.test.ts compiles it too). */
export const DistrustBody = Type.Object(
  {
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:/@-]+$', description: 'the source prefix, as signals name it (e.g. openadr3/vtn.utility.example); or give principal' })),
    principal: Type.Optional(Type.String({ minLength: 1, maxLength: 80, description: 'the principal, as GET /v1/grid-events shows it (token:<name>, collector:<name>): every claim it wrote, whatever its source (ADR 0021); or give source' })),
    distrusted: Type.Boolean({ description: "true: the source's claims of physical loss are no longer trusted (the safety limits and the freeze apply to them); false: trusted again" }),
    reason: Reason,
    until: Type.Optional(Instant('when the distrust ends by itself')),
  },
  { additionalProperties: false },
);

const PreviewBody = Type.Object(
  {
    override: Type.Optional(
      Type.Object(
        {
          region: Type.String({ minLength: 1, maxLength: 63 }),
          action: Type.Unsafe<'drain' | 'undrain' | 'force-up' | 'force-down' | 'weight'>({ type: 'string', enum: ['drain', 'undrain', 'force-up', 'force-down', 'weight'] }),
          value: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
          ramp: Type.Optional(Duration('ms')),
          by: Type.Optional(Instant('drain deadline')),
          start: Type.Optional(Instant('default now')),
          end: Type.Optional(Instant('when it would end')),
          reason: Type.Optional(Type.String({ maxLength: 500 })),
        },
        { additionalProperties: false },
      ),
    ),
    event: Type.Optional(
      Type.Object(
        {
          region: Type.String({ minLength: 1, maxLength: 63 }),
          type: Type.String({ minLength: 1, maxLength: 40, description: 'grid.event type: simple, import-capacity-limit, dispatch-setpoint, grid-emergency, load-shed, cap, drain' }),
          start: Instant('event start'),
          end: Instant('event end'),
          level: Type.Optional(Type.Integer({ minimum: 0, maximum: 3 })),
          cap: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
          limitW: Type.Optional(Watts('the limit, W')),
        },
        { additionalProperties: false },
      ),
    ),
    freeze: Type.Optional(Type.Boolean({ description: 'preview freezing automation now' })),
    applyShadow: Type.Optional(Type.Boolean({ description: 'the plan shadowed grid sources would have produced (policy.grid.shadow, policy.grid.mode shadow) if they applied' })),
  },
  { additionalProperties: false },
);

const PreviewSchema = Type.Object({
  plan: PlanSchema,
  current: Type.String({ description: 'the version of the plan in force' }),
  changed: Type.Array(Type.String(), { description: 'regions whose schedule would differ' }),
  shares: Type.Array(
    Type.Object({
      at: Type.Integer(),
      regions: Type.Record(Type.String(), Type.Number(), { description: 'share of measured demand per region' }),
      unplaced: Type.Number({ description: 'share of demand no region admits' }),
    }),
  ),
});

export const operatorRoutes: ApiPlugin<OperatorRoutesOptions> = async (app, opts) => {
  const op = opts.operator;
  const actor = (r: { identity?: { name: string } | null }) => r.identity?.name ?? 'unknown';

  app.post(
    '/v1/regions/:id/drain',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        params: RegionParams,
        body: Type.Object(
          {
            reason: Reason,
            cap: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'the share to keep (0 = full drain)' })),
            ramp: Type.Optional(Duration('ramp length, ms (default: at once; with by, policy.drain.rampMs)')),
            by: Type.Optional(Instant('deadline: drained (caches turned over, sessions given policy.drain.sessionAllowanceMs) by then')),
          },
          { additionalProperties: false },
        ),
        response: { 201: OverrideSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      try {
        return reply.code(201).send(await op.drain(request.params.id, request.body, actor(request)));
      } catch (e) {
        return failure(e);
      }
    },
  );

  app.delete(
    '/v1/regions/:id/drain',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        params: RegionParams,
        querystring: Type.Object({ reason: Reason }, { additionalProperties: false }),
        response: { 200: Type.Object({ ended: Ended, undrain: Type.Union([OverrideSchema, Type.Null()]) }), ...errorResponses },
      },
    },
    async (request) => {
      try {
        return await op.undrain(request.params.id, request.query.reason, actor(request));
      } catch (e) {
        return failure(e);
      }
    },
  );

  app.post(
    '/v1/regions/:id/force',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        params: RegionParams,
        body: Type.Object(
          {
            state: Type.Unsafe<'up' | 'down'>({ type: 'string', enum: ['up', 'down'], description: 'up overrides failing health checks; down takes the region out' }),
            until: Type.Optional(Instant('when the force ends (required for up)')),
            reason: Reason,
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Object({ force: OverrideSchema, ended: Ended }), ...errorResponses },
      },
    },
    async (request, reply) => {
      try {
        const b = request.body;
        return reply.code(201).send(await op.force(request.params.id, b.state, b.until, b.reason, actor(request)));
      } catch (e) {
        return failure(e);
      }
    },
  );

  app.delete(
    '/v1/regions/:id/force',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        params: RegionParams,
        querystring: Type.Object({ reason: Reason }, { additionalProperties: false }),
        response: { 200: Type.Object({ ended: Ended }), ...errorResponses },
      },
    },
    async (request) => {
      try {
        return await op.unforce(request.params.id, request.query.reason, actor(request));
      } catch (e) {
        return failure(e);
      }
    },
  );

  app.post(
    '/v1/automation/freeze',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        body: FreezeBody,
        response: { 200: Type.Object({ frozen: Type.Union([OverrideSchema, Type.Null()]), ended: Ended }), ...errorResponses },
      },
    },
    async (request) => {
      try {
        const b = request.body;
        return await op.freeze(b.frozen, b.reason, b.until, actor(request));
      } catch (e) {
        return failure(e);
      }
    },
  );

  app.post(
    '/v1/grid/distrust',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        body: DistrustBody,
        response: { 200: Type.Object({ distrusted: Type.Union([OverrideSchema, Type.Null()]), ended: Ended }), ...errorResponses },
      },
    },
    async (request) => {
      try {
        const b = request.body;
        return await op.distrust(b.distrusted, { ...(b.source !== undefined ? { source: b.source } : {}), ...(b.principal !== undefined ? { principal: b.principal } : {}) }, b.reason, b.until, actor(request));
      } catch (e) {
        return failure(e);
      }
    },
  );

  app.post(
    '/v1/grid-events',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        description: "a grid event entered by hand, stored as a grid.event signal from source manual/<token name>; the same id again modifies it, cancelled: true cancels it; with source, corrects (modifies or cancels) another principal's event, audited",
        body: Type.Object(
          {
            region: Type.String({ minLength: 1, maxLength: 63 }),
            id: Type.String({ minLength: 1, maxLength: 200, description: 'the event id (e.g. the notice number); the same id modifies the event' }),
            type: Type.String({ minLength: 1, maxLength: 40, description: 'simple, import-capacity-limit, dispatch-setpoint, grid-emergency, load-shed, cap, drain' }),
            start: Instant('event start'),
            end: Instant('event end'),
            level: Type.Optional(Type.Integer({ minimum: 0, maximum: 3 })),
            cap: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
            limitW: Type.Optional(Watts('the limit, W')),
            program: Type.Optional(Type.String({ maxLength: 200, description: 'where it comes from, e.g. "ERCOT phone call 14:02"' })),
            cancelled: Type.Optional(Type.Boolean()),
            source: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:/@-]+$', description: "correct another principal's event instead (ADR 0021): the source it is stored under; the event with this id must be stored there. Needs reason; audited (signal.correct)" })),
            reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'with source: why the correction, in words (audited)' })),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({
            stored: Type.Boolean({ description: 'false: an entry with a later observedAt is already stored (reason stale)' }),
            reason: Type.Optional(Type.String()),
            signal: Type.Object({ region: Type.String(), kind: Type.String(), source: Type.String(), key: Type.String(), observedAt: Type.Integer(), expiresAt: Type.Integer(), value: Type.Unknown() }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      try {
        return reply.code(201).send(await op.enterEvent(request.body, actor(request)));
      } catch (e) {
        return failure(e);
      }
    },
  );

  app.get('/v1/status', { onRequest: app.requireRole('viewer'), schema: { response: { 200: StatusSchema, ...errorResponses } } }, async () => {
    try {
      return await op.status();
    } catch (e) {
      return failure(e);
    }
  });

  app.post(
    '/v1/plan/preview',
    { onRequest: app.requireRole('operator'), schema: { body: PreviewBody, response: { 200: PreviewSchema, ...errorResponses } } },
    async (request) => {
      try {
        return await op.preview(request.body, actor(request));
      } catch (e) {
        return failure(e);
      }
    },
  );
};
