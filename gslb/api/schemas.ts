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
});

export const ReloadResultSchema = Type.Object({
  version: Type.String({ description: 'configuration version in force after the reload' }),
  changed: Type.Boolean({ description: 'false when the files on disk were identical to the running configuration' }),
});

export const MetricsSchema = Type.String({ description: 'Prometheus text exposition format' });
