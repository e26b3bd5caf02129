/**
 * State routes (signals in, overrides, audit, the plan):
 * - POST   /v1/signals           (ingest):   `{signals: Signal[]}` (1–1000). Every signal is
 *   validated first; one invalid signal refuses the batch with 400 GSLB_ERR_VALIDATION naming
 *   `body.signals[i].<field>`, and nothing is stored. Then each is stored (latest per id
 *   wins: an older one comes back `{stored: false, reason: "stale"}`, one of another principal's
 *   live records `held: …`). The token's principal is recorded with each (ADR 0021); a signal
 *   outside its grants or in a reserved namespace refuses the batch with 403
 *   GSLB_ERR_NOT_GRANTED naming `body.signals[i].source`, a batch over its quota with 429
 *   GSLB_ERR_QUOTA; nothing of either is stored.
 * - GET    /v1/overrides         (viewer):   the live overrides.
 * - POST   /v1/overrides         (operator): create one; the actor is the token's name.
 * - DELETE /v1/overrides/:id     (operator): end one, `?reason=` required (audited).
 * - GET    /v1/audit?limit=N     (viewer):   newest first.
 * - GET    /v1/plan              (viewer):   the plan in force, with its schedule and reasons.
 * - GET    /v1/demand?buckets=N  (viewer):   measured demand: the newest N 10-second buckets.
 * - GET    /v1/store             (viewer):   the store as this node sees it, with a data loss held.
 * - POST   /v1/store/confirm-loss (operator): `{reason}`: confirm the data loss (audited); the
 *   node plans from the store as it is now. 404 naming `body` when no loss is held.
 * A store that does not answer gives 503 GSLB_ERR_STORE_UNAVAILABLE: nothing was changed, except
 * for a signal batch, part of which may be stored (the message says so; sending it again is safe).
 */
import { Duration, Instant } from '../../model/domains.js';
import { Type } from '@sinclair/typebox';
import { apiError, NOTHING_CHANGED } from '../errors.js';
import { errorResponses, type ApiPlugin } from '../schemas.js';
import { OverrideSchema, PlanSchema, type Override, type Plan } from '../../model/types.js';
import type { AuditEntry, DemandBucket } from '../../model/snapshot.js';
import { StoreError, type StoreLoss } from '../../state/store.js';
import { SignalError } from '../../state/signals.js';
import { GrantError, OverrideError, QuotaError, type IngestResult, type OverrideRequest } from '../../control/service.js';
import type { TokenIdentity } from '../../config/tokens.js';

/** What the state routes need from the process (gslb/main.ts wires a StateService). */
export interface StateApi {
  /** Stores signals posted by `who` (an ingest token), under its grants and quotas (ADR 0021). */
  ingest(signals: unknown[], who: TokenIdentity): Promise<IngestResult>;
  overrides(): Promise<Override[]>;
  createOverride(req: OverrideRequest, actor: string): Promise<Override>;
  endOverride(id: string, actor: string, reason: string): Promise<Override>;
  audit(limit: number): Promise<AuditEntry[]>;
  /** Demand buckets in the store (all nodes summed), oldest first. */
  demand(): Promise<DemandBucket[]>;
  /** The plan in force (the configuration's until the store has been read). */
  plan(): Plan;
  /** The store as this node sees it now (cheap, synchronous). */
  store(): StoreView;
  /** Confirms the data loss this node holds (StoreError `not_found` when none). */
  confirmLoss(actor: string, reason: string): Promise<{ loss: StoreLoss; revision: number }>;
}

/** GET /v1/store. */
export interface StoreView {
  backend: 'memory' | 'redis';
  ready: boolean;
  stale: boolean;
  detail: string;
  loss: StoreLoss | null;
  losses: number;
}

/** A data loss of the store (gslb/state/store.ts StoreLoss); also in GET /v1/regions as `storeLoss`. */
export const StoreLossSchema = Type.Object(
  {
    detectedAt: Type.Integer({ description: 'ms epoch this node saw it' }),
    seenRevision: Type.Integer({ description: 'the newest store revision this node had seen before' }),
    revision: Type.Integer({ description: 'the revision the store reported then' }),
    seenEpoch: Type.Union([Type.String(), Type.Null()], { description: "the store's epoch (ms, decimal) this node had seen" }),
    epoch: Type.Union([Type.String(), Type.Null()], { description: "the store's epoch now (set anew after the loss)" }),
    why: Type.String({ description: 'what was seen, in words' }),
  },
  { description: 'a data loss of the state store this node holds its last plan for, until an operator confirms it' },
);

export interface StateRoutesOptions extends Record<string, unknown> {
  state: StateApi;
}


/** POST /v1/overrides: the body (validated as the API does: test/core-total.test.ts compiles it too). */
export const OverrideBodySchema = Type.Object(
  {
    region: Type.String({ minLength: 1, maxLength: 63, description: 'region id' }),
    action: Type.Unsafe<OverrideRequest['action']>({
      type: 'string',
      enum: ['drain', 'undrain', 'force-up', 'force-down', 'weight'],
      description: 'drain (to value, default 0), undrain, force-up (needs end), force-down, weight (needs value)',
    }),
    value: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'drain: the share to keep (0 = full drain); weight: the admission weight' })),
    ramp: Type.Optional(Duration('spread the change over this many ms (0 = at once)')),
    by: Type.Optional(Instant('drain: the deadline by which the region must be drained (caches turned over, sessions given their allowance); the ramp is placed before it')),
    reason: Type.String({ minLength: 1, maxLength: 500, description: 'why, in words (audited, shown in explain)' }),
    start: Type.Optional(Instant('when it takes effect (default now)')),
    end: Type.Optional(Instant('when it ends (required for force-up)')),
  },
  { additionalProperties: false },
);

const AuditEntrySchema = Type.Object({
  seq: Type.Integer(),
  at: Type.Integer(),
  actor: Type.String(),
  action: Type.String(),
  target: Type.String(),
  reason: Type.String(),
  before: Type.Unknown(),
  after: Type.Unknown(),
});

/**
 * A signal batch is written in rounds of pipelined scripts that carry no deadline: when the store
 * stops answering part-way, some of the batch may be stored (or land after the timeout). Sending
 * it again is safe: what was stored comes back `stale`.
 */
const BATCH_MAY_BE_STORED = 'signals of the batch may have been stored before the store stopped answering; sending the batch again is safe (a stored signal comes back stale)';

function storeFailure(e: unknown, changed: string = NOTHING_CHANGED): never {
  if (e instanceof StoreError && e.code === 'unavailable') throw apiError('GSLB_ERR_STORE_UNAVAILABLE', { reason: e.message, changed });
  if (e instanceof StoreError && e.code === 'not_found') throw apiError('GSLB_ERR_NOT_FOUND', { what: 'that override', hint: 'GET /v1/overrides lists the live ones' }, { field: 'params.id' });
  throw e;
}

export const stateRoutes: ApiPlugin<StateRoutesOptions> = async (app, opts) => {
  const st = opts.state;

  app.post(
    '/v1/signals',
    {
      onRequest: app.requireRole('ingest'),
      schema: {
        body: Type.Object({ signals: Type.Array(Type.Unknown(), { minItems: 1, maxItems: 1000, description: 'signals (gslb/model/types.ts Signal)' }) }, { additionalProperties: false }),
        response: {
          200: Type.Object({ revision: Type.Integer(), results: Type.Array(Type.Object({ stored: Type.Boolean(), reason: Type.Optional(Type.String()) })) }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      try {
        return await st.ingest(request.body.signals, request.identity!);
      } catch (e) {
        if (e instanceof SignalError) {
          const field = `body.${e.field}`;
          throw apiError('GSLB_ERR_VALIDATION', { field, problem: e.message.slice(e.field.length + 2) }, { field });
        }
        if (e instanceof GrantError) {
          const field = `body.${e.field}`;
          throw apiError('GSLB_ERR_NOT_GRANTED', { field, problem: e.problem }, { field });
        }
        if (e instanceof QuotaError) {
          throw apiError('GSLB_ERR_QUOTA', { problem: e.message, retryAfter: e.retryAfter }, { headers: { 'retry-after': String(e.retryAfter) }, details: { principal: e.principal, quota: e.quota } });
        }
        return storeFailure(e, BATCH_MAY_BE_STORED);
      }
    },
  );

  app.get('/v1/overrides', { onRequest: app.requireRole('viewer'), schema: { response: { 200: Type.Object({ overrides: Type.Array(OverrideSchema) }), ...errorResponses } } }, async () => {
    try {
      return { overrides: await st.overrides() };
    } catch (e) {
      return storeFailure(e);
    }
  });

  app.post(
    '/v1/overrides',
    { onRequest: app.requireRole('operator'), schema: { body: OverrideBodySchema, response: { 201: OverrideSchema, ...errorResponses } } },
    async (request, reply) => {
      try {
        const o = await st.createOverride(request.body, request.identity?.name ?? 'unknown');
        return reply.code(201).send(o);
      } catch (e) {
        if (e instanceof OverrideError) throw apiError('GSLB_ERR_VALIDATION', { field: e.field, problem: e.problem }, { field: e.field });
        return storeFailure(e);
      }
    },
  );

  app.delete(
    '/v1/overrides/:id',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }),
        querystring: Type.Object({ reason: Type.String({ minLength: 1, maxLength: 500, description: 'why it ends (audited)' }) }, { additionalProperties: false }),
        response: { 200: OverrideSchema, ...errorResponses },
      },
    },
    async (request) => {
      try {
        return await st.endOverride(request.params.id, request.identity?.name ?? 'unknown', request.query.reason);
      } catch (e) {
        return storeFailure(e);
      }
    },
  );

  app.get(
    '/v1/audit',
    {
      onRequest: app.requireRole('viewer'),
      schema: {
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000, default: 100 })) }, { additionalProperties: false }),
        response: { 200: Type.Object({ entries: Type.Array(AuditEntrySchema) }), ...errorResponses },
      },
    },
    async (request) => {
      try {
        return { entries: await st.audit(request.query.limit ?? 100) };
      } catch (e) {
        return storeFailure(e);
      }
    },
  );

  app.get(
    '/v1/demand',
    {
      onRequest: app.requireRole('viewer'),
      schema: {
        querystring: Type.Object({ buckets: Type.Optional(Type.Integer({ minimum: 1, maximum: 360, default: 6 })) }, { additionalProperties: false }),
        response: {
          200: Type.Object({
            buckets: Type.Array(Type.Object({ bucket: Type.Integer(), home: Type.String(), name: Type.String(), queries: Type.Number() })),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      try {
        const rows = await st.demand();
        const keep = new Set([...new Set(rows.map((r) => r.bucket))].sort((a, b) => b - a).slice(0, request.query.buckets ?? 6));
        return { buckets: rows.filter((r) => keep.has(r.bucket)).sort((a, b) => a.bucket - b.bucket || (a.home + a.name < b.home + b.name ? -1 : 1)) };
      } catch (e) {
        return storeFailure(e);
      }
    },
  );

  app.get('/v1/plan', { onRequest: app.requireRole('viewer'), schema: { response: { 200: PlanSchema, ...errorResponses } } }, async () => st.plan());

  app.get(
    '/v1/store',
    {
      onRequest: app.requireRole('viewer'),
      schema: {
        response: {
          200: Type.Object({
            backend: Type.Unsafe<'memory' | 'redis'>({ type: 'string', enum: ['memory', 'redis'] }),
            ready: Type.Boolean({ description: 'read, and this node\'s clock agrees with it' }),
            stale: Type.Boolean({ description: 'this node answers from its last plan (store unreachable, or a data loss held)' }),
            detail: Type.String(),
            loss: Type.Union([StoreLossSchema, Type.Null()]),
            losses: Type.Integer({ minimum: 0, description: 'data losses this node has seen since it started' }),
          }),
          ...errorResponses,
        },
      },
    },
    async () => st.store(),
  );

  app.post(
    '/v1/store/confirm-loss',
    {
      onRequest: app.requireRole('operator'),
      schema: {
        body: Type.Object({ reason: Type.String({ minLength: 1, maxLength: 500, description: 'why the store as it is now is right (audited), e.g. "overrides put back by hand"' }) }, { additionalProperties: false }),
        response: { 200: Type.Object({ confirmed: StoreLossSchema, revision: Type.Integer({ description: 'the store revision of the confirmation' }) }), ...errorResponses },
      },
    },
    async (request) => {
      try {
        const r = await st.confirmLoss(request.identity?.name ?? 'unknown', request.body.reason);
        return { confirmed: r.loss, revision: r.revision };
      } catch (e) {
        if (e instanceof OverrideError) throw apiError('GSLB_ERR_VALIDATION', { field: e.field, problem: e.problem }, { field: e.field });
        if (e instanceof StoreError && e.code === 'not_found') throw apiError('GSLB_ERR_NOT_FOUND', { what: 'a data loss to confirm', hint: 'this node holds none (GET /v1/store)' }, { field: 'body' });
        return storeFailure(e);
      }
    },
  );
};
