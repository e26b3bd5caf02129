/**
 * Fleet routes (issue 7; docs/api.md "Fleet"): what operators look at during a grid event.
 * - GET /v1/regions       (viewer): every region with its configuration, state in the plan now,
 *   next scheduled change, expected traffic share, power now, health, and every signal the
 *   store holds about it with source and age (gslb/control/fleet.ts).
 * - GET /v1/regions/:id   (viewer): one region, the same shape; 404 naming the known ids.
 * - GET /v1/grid-events   (viewer): the grid events and alerts the store knows, with when each
 *   was learned (the notice a drain had).
 * - GET /v1/whoami        (viewer): the caller's token name and role (null, null when no tokens
 *   are configured: reads are open, changes refused) — the dashboard shows its controls by it.
 * - GET /v1/stream        (viewer): Server-Sent Events. `event: fleet` carries the body of
 *   GET /v1/regions plus the events; sent on connect, whenever the plan, the store or a region's
 *   step changes, and at least every `refreshMs` (ages move); a `: ping` comment between.
 *   At most MAX_STREAMS at once (more → 503 GSLB_ERR_NOT_READY with Retry-After), and at most
 *   MAX_STREAMS_PER_CALLER per token (or client address without one): more → 429
 *   GSLB_ERR_RATE_LIMITED. Both are per node.
 * A store that does not answer gives 503 GSLB_ERR_STORE_UNAVAILABLE (the stream sends
 * `event: error` and keeps trying).
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { apiError, NOTHING_CHANGED } from '../errors.js';
import { errorResponses, type ApiPlugin } from '../schemas.js';
import { StoreError, type StoreLoss } from '../../state/store.js';
import { StoreLossSchema } from './state.js';
import type { FleetView } from '../../control/fleet.js';
import { RegionStateSchema } from '../../model/region-state.js';
import { GridEventPhaseSchema } from '../../model/grid-event-phase.js';

export interface FleetRoutesOptions extends Record<string, unknown> {
  fleet: () => Promise<FleetView & { revision: number; storeLoss?: StoreLoss | null }>;
  /** How often the stream looks for changes, ms (default 1000). */
  streamTickMs?: number;
  /** Longest gap between two `fleet` events, ms (default 10 000). */
  streamRefreshMs?: number;
}

/** Most concurrent event streams per node. */
export const MAX_STREAMS = 64;
/** Most concurrent event streams per caller (token name, else client address) per node: one viewer cannot take every slot. */
export const MAX_STREAMS_PER_CALLER = 8;

const Opt = <T extends TSchema>(t: T) => Type.Optional(t);
// Response fields (what the store holds, already validated on the way in): no bounds to check here.
const EpochMs = (description: string) => Type.Integer({ description });

const SignalViewSchema = Type.Object({
  kind: Type.String({ description: 'signal kind, e.g. health.probe, power.budget, grid.event' }),
  source: Type.String({ description: 'who observed it (collector/instance)' }),
  principal: Opt(Type.String({ description: 'who wrote it (ADR 0021): token:<name> or collector:<name>, fleet-wide; absent on a record an earlier build wrote' })),
  grant: Opt(Type.String({ description: 'the grant (source prefix) it was written under; absent with a principal: written without a grant (never trusted for a physical loss)' })),
  key: Type.String(),
  observedAt: EpochMs('ms epoch the fact was true at its source'),
  expiresAt: EpochMs('ms epoch it stops being known'),
  ageMs: Type.Integer({ minimum: 0, description: 'now − observedAt' }),
  expired: Type.Boolean({ description: 'past expiresAt: its kind\'s stale policy decides what that does' }),
  summary: Type.String({ description: 'the value in words' }),
  value: Type.Unknown({ description: 'the value as stored (gslb/state/signals.ts)' }),
});

export const RegionViewSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  location: Opt(Type.Object({ lat: Type.Number(), lon: Type.Number(), country: Opt(Type.String()), city: Opt(Type.String()) })),
  capacityUnits: Opt(Type.Number()),
  power: Type.Object(
    {
      site: Opt(Type.String()),
      balancingAuthority: Opt(Type.String()),
      importLimitW: Opt(Type.Number({ description: 'configured import limit, W' })),
      fullLoadW: Opt(Type.Number()),
      availableW: Opt(Type.Number({ description: 'as the planner weighs the power budgets: import limit (under a grid event\'s) + generation + storage discharge, W' })),
      drawW: Opt(Type.Number()),
      headroomW: Opt(Type.Number({ description: 'availableW − drawW' })),
      source: Opt(Type.String()),
      ageMs: Opt(Type.Integer({ minimum: 0 })),
    },
    { description: 'configuration and the newest power budget' },
  ),
  share: Type.Number({ description: 'admission share now (0 when down)' }),
  down: Type.Boolean(),
  refuse: Type.Boolean({ description: 'the gateway is told to refuse new streams' }),
  state: RegionStateSchema,
  ttlCap: Opt(Type.Number()),
  ttl: Opt(Type.Number({ description: 'the TTL an answer naming it carries now, s, at most (its names\' TTL, bounded by its TTL cap and its next change); absent when no answer names it' })),
  reasons: Type.Array(Type.String()),
  next: Opt(Type.Object({ at: Type.Integer(), share: Type.Number(), down: Type.Boolean(), ifNotRefreshed: Opt(Type.Literal(true)) }, { description: 'the next scheduled change of its share or down (a step that changes only its TTL cap or weights is not one); ifNotRefreshed: a fact it depends on goes stale then, and a collector still reporting moves that on' })),
  traffic: Type.Number({ description: 'expected fraction of all measured demand it takes now' }),
  health: Opt(Type.Object({ up: Type.Integer(), total: Type.Integer() }, { description: 'probes saying up, of the unexpired probes' })),
  signals: Type.Array(SignalViewSchema),
});

export const GridEventViewSchema = Type.Object({
  region: Type.String(),
  kind: Type.Unsafe<'grid.event' | 'grid.alert'>({ type: 'string', enum: ['grid.event', 'grid.alert'] }),
  source: Type.String(),
  principal: Opt(Type.String({ description: 'who wrote it (ADR 0021): token:<name> or collector:<name>; absent on a record an earlier build wrote' })),
  grant: Opt(Type.String({ description: 'the grant it was written under; absent with a principal: without a grant' })),
  key: Type.String(),
  type: Type.String(),
  level: Opt(Type.Number()),
  start: Opt(EpochMs('ms epoch')),
  end: Opt(EpochMs('ms epoch')),
  cancelled: Type.Boolean(),
  phase: GridEventPhaseSchema,
  replay: Type.Boolean({ description: 'learned when its end had already passed (a collector replaying a feed\'s history): stored as history, never acted on' }),
  program: Opt(Type.String()),
  message: Opt(Type.String()),
  learnedAt: EpochMs('when its current content was first learned'),
  observedAt: Type.Integer(),
  expiresAt: Type.Integer(),
});

const RegionsSchema = Type.Object({
  now: Type.Integer(),
  planVersion: Type.String(),
  revision: Type.Integer({ description: 'the store revision read' }),
  unplaced: Type.Number({ description: 'expected fraction of demand no region admits now' }),
  regions: Type.Array(RegionViewSchema),
  storeLoss: Opt(Type.Union([StoreLossSchema, Type.Null()], { description: 'a data loss of the state store this node holds its last plan for (null when none): the dashboard shows it as a banner' })),
});

function storeFailure(e: unknown): never {
  if (e instanceof StoreError && e.code === 'unavailable') throw apiError('GSLB_ERR_STORE_UNAVAILABLE', { reason: e.message, changed: NOTHING_CHANGED });
  throw e;
}

/** The key that decides whether a stream sends: what changes the picture, not the ages. */
function changeKey(v: FleetView & { revision: number; storeLoss?: StoreLoss | null }): string {
  return JSON.stringify([v.planVersion, v.revision, v.storeLoss?.detectedAt ?? null, v.regions.map((r) => [r.share, r.down, r.refuse, r.ttlCap, r.next?.at, r.traffic, r.health?.up])]);
}

export const fleetRoutes: ApiPlugin<FleetRoutesOptions> = async (app, opts) => {
  const read = async () => {
    try {
      return await opts.fleet();
    } catch (e) {
      return storeFailure(e);
    }
  };

  app.get(
    '/v1/whoami',
    {
      onRequest: app.requireRole('viewer'),
      schema: {
        response: {
          200: Type.Object({
            name: Type.Union([Type.String(), Type.Null()], { description: "the token's name; null when no tokens are configured" }),
            role: Type.Union([Type.String(), Type.Null()], { description: 'viewer or operator; null when no tokens are configured (reads open, changes refused)' }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ name: request.identity?.name ?? null, role: request.identity?.role ?? null }),
  );

  app.get('/v1/regions', { onRequest: app.requireRole('viewer'), schema: { response: { 200: RegionsSchema, ...errorResponses } } }, async () => {
    const v = await read();
    return { now: v.now, planVersion: v.planVersion, revision: v.revision, unplaced: v.unplaced, regions: v.regions, ...(v.storeLoss !== undefined ? { storeLoss: v.storeLoss } : {}) };
  });

  app.get(
    '/v1/regions/:id',
    {
      onRequest: app.requireRole('viewer'),
      schema: { params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 63, description: 'region id' }) }), response: { 200: RegionViewSchema, ...errorResponses } },
    },
    async (request) => {
      const v = await read();
      const r = v.regions.find((x) => x.id === request.params.id);
      if (!r) throw apiError('GSLB_ERR_NOT_FOUND', { what: `region "${request.params.id}"`, hint: `the regions are ${v.regions.map((x) => x.id).join(', ')}` }, { field: 'params.id' });
      return r;
    },
  );

  app.get(
    '/v1/grid-events',
    { onRequest: app.requireRole('viewer'), schema: { response: { 200: Type.Object({ now: Type.Integer(), events: Type.Array(GridEventViewSchema) }), ...errorResponses } } },
    async () => {
      const v = await read();
      return { now: v.now, events: v.events };
    },
  );

  // One poller for every open stream: it reads the fleet while anyone listens.
  const tickMs = opts.streamTickMs ?? 1000;
  const refreshMs = opts.streamRefreshMs ?? 10_000;
  const streams = new Set<{ send: (chunk: string) => void; lastKey: string; lastAt: number }>();
  const perCaller = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let busy = false;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      let v: (FleetView & { revision: number }) | undefined;
      let failed: string | undefined;
      try {
        v = await opts.fleet();
      } catch (e) {
        failed = e instanceof Error ? e.message : String(e);
      }
      const now = Date.now();
      for (const s of streams) {
        if (failed !== undefined) {
          s.send(`event: error\ndata: ${JSON.stringify({ message: `the store does not answer: ${failed}` })}\n\n`);
          continue;
        }
        const key = changeKey(v!);
        if (key !== s.lastKey || now - s.lastAt >= refreshMs) {
          s.lastKey = key;
          s.lastAt = now;
          s.send(`event: fleet\ndata: ${JSON.stringify(v)}\n\n`);
        } else s.send(': ping\n\n');
      }
    } finally {
      busy = false;
    }
  };
  // preClose, not onClose: fastify's close waits for in-flight requests before onClose runs,
  // and an open stream never finishes by itself, so a node with a dashboard open would not
  // stop (SIGTERM, a test's app.close()) until each viewer went away.
  app.addHook('preClose', async () => {
    if (timer) clearInterval(timer);
    timer = undefined;
    for (const s of streams) s.send('');
  });

  app.get(
    '/v1/stream',
    {
      onRequest: app.requireRole('viewer'),
      schema: {
        description: 'Server-Sent Events (text/event-stream): `event: fleet` with GET /v1/regions\' body plus `events` (GET /v1/grid-events), on connect and on every change',
        response: { 200: Type.String({ description: 'text/event-stream' }), ...errorResponses },
      },
    },
    async (request, reply) => {
      if (streams.size >= MAX_STREAMS) {
        throw apiError('GSLB_ERR_NOT_READY', { reason: `${MAX_STREAMS} event streams are open on this node; poll GET /v1/regions instead or retry later` }, { headers: { 'retry-after': '30' } });
      }
      const caller = request.identity?.name ?? `ip:${request.ip}`;
      if ((perCaller.get(caller) ?? 0) >= MAX_STREAMS_PER_CALLER) {
        throw apiError('GSLB_ERR_RATE_LIMITED', { retryAfter: 30 }, { headers: { 'retry-after': '30' } });
      }
      const first = await read();
      perCaller.set(caller, (perCaller.get(caller) ?? 0) + 1);
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      const s = {
        send: (chunk: string) => {
          if (chunk === '') raw.end();
          else raw.write(chunk);
        },
        lastKey: changeKey(first),
        lastAt: Date.now(),
      };
      raw.write(`retry: 2000\nevent: fleet\ndata: ${JSON.stringify(first)}\n\n`);
      streams.add(s);
      if (!timer) {
        timer = setInterval(() => void tick(), tickMs);
        timer.unref();
      }
      request.raw.on('close', () => {
        streams.delete(s);
        const n = (perCaller.get(caller) ?? 1) - 1;
        if (n <= 0) perCaller.delete(caller);
        else perCaller.set(caller, n);
        if (streams.size === 0 && timer) {
          clearInterval(timer);
          timer = undefined;
        }
      });
    },
  );
};
