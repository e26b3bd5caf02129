/**
 * The API's shared TypeBox schemas and the type provider that derives handler types from
 * them. Routes declare params/query/body/response with these schemas; the TypeScript types
 * of request and reply come from the same declarations (`Static<typeof X>`).
 *
 * Response schemas also filter: fast-json-stringify sends only the properties a schema
 * declares, so a route never leaks a field it did not declare.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { FastifyBaseLogger, FastifyInstance, FastifyPluginAsync, FastifyTypeProvider } from 'fastify';

/** Fastify type provider for TypeBox: request and reply types are `Static<schema>`. */
export interface TypeBoxTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
  serializer: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
}

/** The fastify instance every route module receives. */
export type ApiInstance = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

/** A route module: registered with `app.register(plugin, opts)`; types come from its schemas. */
export type ApiPlugin<Opts extends Record<string, unknown>> = FastifyPluginAsync<Opts, Server, TypeBoxTypeProvider>;

/** Body of every error response; `code` is one of gslb/api/errors.ts. */
export const ErrorBodySchema = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ pattern: '^GSLB_ERR_[A-Z_]+$', description: 'stable error code, see docs/errors.md' }),
      message: Type.String({ description: 'what went wrong and what to do, for people' }),
      field: Type.Optional(Type.String({ description: 'the request field at fault, e.g. body.reason' })),
      details: Type.Optional(Type.Unknown({ description: 'code-specific detail' })),
    }),
  },
  { description: 'error response' },
);

/** One problem in one configuration file (the shape of gslb/config's ConfigIssue). */
export const ConfigIssueSchema = Type.Object({
  file: Type.String(),
  line: Type.Optional(Type.Integer({ minimum: 1 })),
  column: Type.Optional(Type.Integer({ minimum: 1 })),
  path: Type.String({ description: 'path inside the file, e.g. zones[0].soa.serial; empty = top level' }),
  message: Type.String(),
});
export type ConfigIssueBody = Static<typeof ConfigIssueSchema>;

/** Body of a GSLB_ERR_CONFIG_INVALID (422) response: the error plus every issue found. */
export const ConfigInvalidBodySchema = Type.Object(
  {
    error: Type.Object({
      code: Type.Literal('GSLB_ERR_CONFIG_INVALID'),
      message: Type.String(),
      details: Type.Object({ issues: Type.Array(ConfigIssueSchema) }),
    }),
  },
  { description: 'the configuration on disk is invalid; nothing was applied' },
);

/** The error responses every route declares next to its own. */
export const errorResponses = {
  '4xx': ErrorBodySchema,
  '5xx': ErrorBodySchema,
} as const;

export const HealthSchema = Type.Object({ status: Type.Literal('ok') }, { description: 'the process runs' });

export const ReadinessCheckSchema = Type.Object({
  name: Type.String({ description: 'what was checked, e.g. config, store, workers' }),
  ok: Type.Boolean(),
  detail: Type.String({ description: 'state in words, e.g. the oldest acknowledged plan version' }),
});

export const ReadinessSchema = Type.Object(
  { ready: Type.Boolean(), checks: Type.Array(ReadinessCheckSchema) },
  { description: 'ready = every check is ok' },
);

export const ConfigInfoSchema = Type.Object({
  version: Type.String({ description: 'hash of the configuration files in force' }),
  file: Type.String({ description: 'absolute path of gridsteer.yaml' }),
  loadedAt: Type.Integer({ description: 'when it was loaded, ms since the Unix epoch' }),
  zones: Type.Array(Type.String(), { description: 'zones served with authority' }),
  names: Type.Array(Type.String(), { description: 'steered (GSLB) names' }),
  regions: Type.Array(Type.String(), { description: 'region ids' }),
  banner: Type.Optional(Type.String({ description: 'http.banner: a line the dashboard shows in its header (e.g. a demo)' })),
});

export const ReloadResultSchema = Type.Object({
  version: Type.String({ description: 'configuration version in force after the reload' }),
  changed: Type.Boolean({ description: 'false when the files on disk were identical to the running configuration' }),
});

export const MetricsSchema = Type.String({ description: 'Prometheus text exposition format' });

/** GET /v1/explain: the query of one client. */
export const ExplainQuerySchema = Type.Object(
  {
    client: Type.String({ minLength: 1, maxLength: 64, description: "the DNS packet's source address: the resolver's, or the client's own (IPv4 or IPv6)" }),
    name: Type.String({ minLength: 1, maxLength: 255, description: 'a steered name, or a name whose CNAME chain ends at one' }),
    type: Type.Optional(Type.Unsafe<'A' | 'AAAA'>({ type: 'string', enum: ['A', 'AAAA'], default: 'A', description: 'query type (default A)' })),
    subnet: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'EDNS Client Subnet of the query, e.g. 198.51.100.0/24 or 2001:db8:1200::/40' })),
  },
  { additionalProperties: false },
);

const GeoPositionFields = {
  lat: Type.Number(),
  lon: Type.Number(),
  country: Type.Optional(Type.String({ description: 'ISO 3166-1 alpha-2' })),
  city: Type.Optional(Type.String()),
  accuracyRadiusKm: Type.Optional(Type.Number()),
  network: Type.Optional(Type.String({ description: 'the database network holding the address' })),
};

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const ExplainCandidateSchema = Type.Object({
  region: Type.String(),
  rank: Nullable(Type.Integer({ minimum: 1, description: "position in the cell's ranking; null outside it" })),
  distanceKm: Nullable(Type.Number({ description: 'great-circle km from distanceFrom' })),
  bias: Type.Number(),
  biasedKm: Nullable(Type.Number({ description: 'distance scaled by the bias: what the ranking sorts by' })),
  servesName: Type.Boolean(),
  hasFamily: Type.Boolean({ description: 'has endpoints of the query type' }),
  down: Type.Boolean({ description: 'down in the plan step in force' }),
  weight: Type.Number({ description: 'w[home][region] in the plan step in force' }),
  draw: Type.Optional(Type.Number({ description: 'admission draw h(subnetKey, region) in [0, 1), when weight < 1' })),
  admitted: Nullable(Type.Boolean({ description: 'true: admitted here; false: passed over; null: not reached' })),
  answered: Type.Boolean(),
  why: Type.String(),
});

/** GET /v1/explain: why the client gets its answer (gslb/serve/explain.ts ExplainResult). */
export const ExplainResultSchema = Type.Object({
  at: Type.Integer({ description: 'ms since the Unix epoch the explanation is for' }),
  name: Type.String(),
  steeredName: Type.String(),
  qtype: Type.Unsafe<'A' | 'AAAA'>({ type: 'string', enum: ['A', 'AAAA'] }),
  client: Type.String(),
  subnet: Nullable(Type.String()),
  subnetKey: Type.String({ description: 'the subnet key as CIDR: admission draws and ECS scopes come from it' }),
  usedEcs: Type.Boolean(),
  fallbackReason: Type.Optional(Type.String()),
  located: Nullable(Type.Object({ address: Type.String(), ...GeoPositionFields })),
  geoTable: Type.Object({
    version: Type.String(),
    compiled: Type.Boolean({ description: 'false: the default table (no database compiled yet, or geoip disabled)' }),
    databaseType: Type.String(),
    databaseBuilt: Type.String(),
    note: Type.String(),
  }),
  cell: Type.Object({
    origin: Type.Unsafe<'geoip' | 'default' | 'override'>({ type: 'string', enum: ['geoip', 'default', 'override'] }),
    special: Type.Boolean({ description: 'a private, reserved or unparsable client at the default location' }),
    description: Type.String(),
    range: Nullable(Type.String({ description: 'first–last of the cell entry holding the address' })),
    rangeCidrs: Type.Array(Type.String()),
    rangeCidrsMore: Type.Integer({ minimum: 0 }),
    ranking: Type.Array(Type.String()),
  }),
  distanceFrom: Nullable(
    Type.Object({ what: Type.Unsafe<'database' | 'default-location'>({ type: 'string', enum: ['database', 'default-location'] }), lat: Type.Number(), lon: Type.Number() }),
  ),
  candidates: Type.Array(ExplainCandidateSchema),
  answer: Type.Object({
    region: Nullable(Type.String()),
    addresses: Type.Array(Type.String()),
    ttl: Type.Integer(),
    ecsScope: Nullable(Type.Integer({ minimum: 0, maximum: 128, description: 'null: the query has no ECS, so the reply carries none' })),
    rcode: Type.Unsafe<'NOERROR' | 'SERVFAIL'>({ type: 'string', enum: ['NOERROR', 'SERVFAIL'] }),
  }),
  planStep: Type.Object({ at: Type.Number(), planVersion: Type.String(), reasons: Type.Array(Type.String()) }),
  reasons: Type.Array(Type.String(), { description: "decide's reasons, in order" }),
  notes: Type.Array(Type.String(), { description: 'what explain adds: fallbacks, the table in force, the ECS scope' }),
});
