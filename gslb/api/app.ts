/**
 * The HTTP API: a fastify app with schema-first routes, bearer-token auth and one error table.
 *
 * Contract of every response:
 * - errors are `{ error: { code, message, field?, details? } }` with a code from
 *   gslb/api/errors.ts (also for unknown routes, bad JSON, wrong content types, oversized
 *   bodies and schema violations); bad input is always a 4xx naming the field;
 * - request bodies are JSON only (`application/json`, UTF-8), at most BODY_LIMIT bytes;
 *   an empty JSON body counts as no body; strict.ts holds the rules every route's input
 *   follows before its schema is checked (query integers, text, bodies, Authorization);
 * - `Cache-Control: no-store`; the client address is the socket's (`trustProxy` off);
 * - once closing starts, every route but /healthz and /readyz answers 503 GSLB_ERR_NOT_READY
 *   and /readyz reports not ready.
 */
import swagger from '@fastify/swagger';
import { readFileSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import type { TLSSocket } from 'node:tls';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyHttpOptions, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { apiError, toApiError, type ApiError } from './errors.js';
import { registerAuth } from './auth.js';
import { AJV_OPTIONS, registerStrictInputs, strictBodyValidator } from './strict.js';
import type { ApiInstance, TypeBoxTypeProvider } from './schemas.js';
import { probeRoutes } from './routes/probes.js';
import { configRoutes } from './routes/config.js';
import { explainRoutes } from './routes/explain.js';
import { stateRoutes } from './routes/state.js';
import { quarantineRoutes } from './routes/quarantine.js';
import { operatorRoutes } from './routes/operator.js';
import { fleetRoutes } from './routes/fleet.js';
import { windowsRoutes } from './routes/windows.js';
import { jobsRoutes } from './routes/jobs.js';
import { dashboardRoutes } from './routes/dashboard.js';
import type { ApiDeps } from './deps.js';

/** Every route an API instance has, as `METHOD /url` (HEAD and hidden routes aside): what the OpenAPI test checks /docs against. */
export const routeTables = new WeakMap<FastifyInstance, string[]>();

/** The package version, for the OpenAPI description. */
const VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Largest accepted request body, in bytes (1 MiB). */
export const BODY_LIMIT = 1024 * 1024;

/** Routes that keep answering while the API closes (orchestrators watch them). */
const OPEN_WHILE_CLOSING = new Set(['/healthz', '/readyz']);
/** Routes logged at debug rather than info (polled by machines). */
const QUIET_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);
/** The statuses that refuse a request's input (not its access, rate or existence): gridsteer_api_rejected_total. */
const REJECTED_STATUS = new Set([400, 413, 415, 422]);

/** Answers any error with its table code and logs it: faults at error, refusals of access at info, bad input at debug. */
function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (clientWentAway(err, request)) {
    // Not a fault of ours: the client aborted (e.g. a large upload cut off). Nothing was done.
    request.log.info({ method: request.method, url: request.url.slice(0, 200), reason: (err as Error)?.message }, 'api: the client closed the connection before its request was read; nothing was done');
    return reply.code(400).send(apiError('GSLB_ERR_BAD_REQUEST', { reason: 'the request was aborted by the client' }).toBody());
  }
  const e: ApiError = toApiError(err, {
    requestId: request.id,
    bodyLimit: request.routeOptions?.bodyLimit ?? BODY_LIMIT,
    contentType: request.headers['content-type'],
  });
  if (e.code === 'GSLB_ERR_INTERNAL') request.log.error({ err: e.cause ?? err }, 'api: internal error');
  else if (e.statusCode === 401 || e.statusCode === 403 || e.statusCode === 429) request.log.info({ code: e.code }, e.message);
  else request.log.debug({ code: e.code, field: e.field }, e.message);
  for (const [k, v] of Object.entries(e.headers)) reply.header(k, v);
  // Also set here for errors raised before routing, which skip the onSend hook.
  reply.header('cache-control', 'no-store');
  reply.header('x-content-type-options', 'nosniff');
  return reply.code(e.statusCode).send(e.toBody());
}

/** Whether `err` comes from the client closing its connection while its request was read. */
function clientWentAway(err: unknown, request: FastifyRequest): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  const message = (err as Error | null)?.message;
  if (code === 'ECONNRESET' || code === 'ECONNABORTED' || code === 'ERR_STREAM_PREMATURE_CLOSE') return true;
  return message === 'aborted' && (request.raw.destroyed || request.raw.socket?.destroyed === true);
}

/**
 * Logs failed TLS handshakes (at debug: scanners and plain HTTP to the port make them), and
 * with optional client certificates closes a connection whose certificate does not verify.
 */
function watchTls(server: HttpServer, opts: HttpsServerOptions, log: Logger): void {
  server.on('tlsClientError', (err: Error & { code?: string }, socket: TLSSocket) => {
    log.debug({ code: err.code, remote: socket.remoteAddress }, `api: TLS handshake failed: ${err.message}`);
  });
  if (opts.requestCert && !opts.rejectUnauthorized) {
    server.on('secureConnection', (socket: TLSSocket) => {
      if (socket.authorized || Object.keys(socket.getPeerCertificate()).length === 0) return;
      log.info({ remote: socket.remoteAddress, reason: String(socket.authorizationError) }, 'api: closed a connection whose client certificate does not verify against http.tls.clientCa');
      socket.destroy();
    });
  }
}

/**
 * Builds the API. The instance is not yet ready: callers may register more routes
 * (`app.register(plugin)`, which inherit auth and the error handlers) before `listen`,
 * `ready` or `inject`. Logs a warning once here when no API token is configured.
 * Never listens by itself; the caller owns `listen` and `close`.
 */
export async function buildApi(deps: ApiDeps): Promise<FastifyInstance> {
  const log = deps.log.child({ module: 'api' });
  const options: FastifyHttpOptions<HttpServer> = {
    // Errors raised before routing (bad percent-encoding, over-long path parameters) take the same path.
    frameworkErrors: (err, request, reply) => sendError(err, request, reply),
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    trustProxy: false,
    return503OnClosing: false,
    requestTimeout: 30_000,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Unknown properties are errors (schemas say additionalProperties: false), never silently dropped.
    ajv: AJV_OPTIONS,
    // A JSON body is never coerced: "0.5" where a number is asked is a 400 naming the field.
    // Query strings and path parameters are text by nature, so they keep fastify's coercion
    // (strict.ts has already held query numbers to decimal digits).
    schemaController: { compilersFactory: { buildValidator: strictBodyValidator } },
  };
  // An https.Server serves the same requests; the instance keeps the http.Server typing.
  const fastify = Fastify(deps.https ? ({ ...options, https: deps.https } as FastifyHttpOptions<HttpServer>) : options);
  if (deps.https) watchTls(fastify.server, deps.https, log);
  const app: ApiInstance = fastify.withTypeProvider<TypeBoxTypeProvider>();

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  // JSON only. An empty body with a JSON content type is "no body" (curl -X POST -H … sends that).
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer); // parseAs: 'buffer' delivers a Buffer
    } catch {
      done(apiError('GSLB_ERR_BAD_JSON', { reason: 'it is not valid UTF-8' }, { field: 'body' }), undefined);
      return;
    }
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    defaultJson(request, text, (err, value) => {
      if (err === null) {
        done(null, value);
        return;
      }
      let reason = 'it does not parse';
      try {
        JSON.parse(text);
        reason = 'it contains a "__proto__" or "constructor.prototype" key';
      } catch (e) {
        reason = (e as Error).message;
      }
      done(apiError('GSLB_ERR_BAD_JSON', { reason }, { field: 'body' }), undefined);
    });
  });

  // Strict inputs: one Authorization header, no body where none is taken, JSON in UTF-8 only,
  // decimal query integers, text without control characters (strict.ts).
  registerStrictInputs(fastify);
  registerAuth(fastify, deps.tokens);
  if (deps.tokens.size === 0) {
    log.warn(
      'api: no API tokens are configured: read-only routes are open to anyone who can reach the HTTP port and ' +
        'every change is refused; set http.tokensFile in gridsteer.yaml or GRIDSTEER_TOKENS (docs/api.md)',
    );
  } else {
    log.info({ tokens: deps.tokens.list().map((t) => `${t.name}/${t.role}`) }, `api: ${deps.tokens.size} API token(s) configured`);
  }

  app.addHook('onRequest', async (request) => {
    if (closing && !OPEN_WHILE_CLOSING.has(request.routeOptions.url ?? '')) {
      throw apiError('GSLB_ERR_NOT_READY', { reason: 'the server is shutting down; retry on another node' });
    }
  });

  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('cache-control', 'no-store');
    reply.header('x-content-type-options', 'nosniff');
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => {
    // Bad input refused (400 a field, 413 too large, 415 not JSON, 422 a config): counted by route.
    if (REJECTED_STATUS.has(reply.statusCode)) deps.onRejected?.(request.routeOptions.url ?? 'unrouted', reply.statusCode);
    const line = {
      method: request.method,
      url: request.url.length > 200 ? `${request.url.slice(0, 200)}…` : request.url,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      actor: request.identity?.name,
    };
    if (QUIET_ROUTES.has(request.routeOptions.url ?? '')) request.log.debug(line, 'api: request');
    else request.log.info(line, 'api: request');
  });

  app.setErrorHandler(sendError);

  // Rate limits (token buckets per caller): operator writes, and explain (it walks the geo
  // table and the plan per call). Ingest (/v1/signals) is machines' traffic, bounded by the
  // body limit and batch size instead. Runs after the route's auth hook (the caller is known) and
  // before validation (bad input counts too).
  const limitsOf = deps.rateLimit;
  if (limitsOf) {
    const clock = deps.clock ?? Date.now;
    const buckets = new Map<string, { tokens: number; at: number }>();
    app.addHook('preValidation', async (request) => {
      const limits = typeof limitsOf === 'function' ? limitsOf() : limitsOf;
      const url = request.routeOptions.url ?? '';
      const write = request.method !== 'GET' && request.method !== 'HEAD' && url !== '/v1/signals';
      const perMinute = write ? limits.writesPerMinute : url === '/v1/explain' ? limits.explainPerMinute : 0;
      if (perMinute <= 0) return;
      const key = `${write ? 'w' : 'e'}|${request.identity?.name ?? `ip:${request.ip}`}`;
      const now = clock();
      let b = buckets.get(key);
      if (!b) {
        if (buckets.size >= 10_000) buckets.delete(buckets.keys().next().value!);
        b = { tokens: perMinute, at: now };
        buckets.set(key, b);
      }
      b.tokens = Math.min(perMinute, b.tokens + ((now - b.at) * perMinute) / 60_000);
      b.at = now;
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return;
      }
      const retryAfter = Math.max(1, Math.ceil(((1 - b.tokens) * 60_000) / perMinute / 1000));
      throw apiError('GSLB_ERR_RATE_LIMITED', { retryAfter }, { headers: { 'retry-after': String(retryAfter) } });
    });
  }

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const shown = path.length > 200 ? `${path.slice(0, 200)}…` : path;
    const e = apiError('GSLB_ERR_NOT_FOUND', { what: `route ${request.method} ${shown}`, hint: 'the routes are listed in docs/api.md' });
    return reply.code(e.statusCode).send(e.toBody());
  });

  // OpenAPI from the routes' own schemas, served at /docs (JSON) and /docs/openapi.yaml.
  // Each route's role (from its requireRole hook) is in its description and x-gridsteer-role.
  const ROUTE_ROLES = new Map<string, string>();
  const table: string[] = [];
  routeTables.set(fastify, table);
  app.addHook('onRoute', (route) => {
    const hidden = (route.schema as { hide?: boolean } | undefined)?.hide === true;
    if (!hidden) for (const m of [route.method].flat()) if (m !== 'HEAD') table.push(`${m} ${route.url}`);
    const hooks = [route.onRequest ?? []].flat() as ({ role?: string } | undefined)[];
    const role = hooks.find((h) => h?.role !== undefined)?.role;
    if (role) for (const m of [route.method].flat()) ROUTE_ROLES.set(`${m} ${route.url}`, role);
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'GridSteer API', version: VERSION, description: 'docs/api.md describes every route; errors are the GSLB_ERR_* table of docs/errors.md.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'an API token (roles: viewer, operator, ingest)' } } },
    },
    transform: ({ schema, url, route }) => {
      const role = ROUTE_ROLES.get(`${route.method as string} ${url}`);
      const out = { ...(schema ?? {}) } as Record<string, unknown>;
      if (role) {
        out.security = [{ bearer: [] }];
        out['x-gridsteer-role'] = role;
        out.description = `Role: ${role}.${out.description ? ` ${String(out.description)}` : ''}`;
      }
      return { schema: out as typeof schema, url };
    },
  });
  app.get('/docs', { schema: { hide: true } }, async () => app.swagger());
  app.get('/docs/openapi.yaml', { schema: { hide: true } }, async (_request, reply) => reply.type('application/yaml').send(app.swagger({ yaml: true })));

  await app.register(probeRoutes, { readiness: deps.readiness, metrics: deps.metrics, closing: () => closing });
  await app.register(configRoutes, { configInfo: deps.configInfo, reload: deps.reload });
  await app.register(explainRoutes, { explain: deps.explain });
  if (deps.state) await app.register(stateRoutes, { state: deps.state });
  if (deps.quarantine) await app.register(quarantineRoutes, { quarantine: deps.quarantine });
  if (deps.operator) await app.register(operatorRoutes, { operator: deps.operator });
  if (deps.fleet) await app.register(fleetRoutes, { fleet: deps.fleet, ...(deps.streamTickMs !== undefined ? { streamTickMs: deps.streamTickMs } : {}) });
  if (deps.windows) await app.register(windowsRoutes, { windows: deps.windows });
  if (deps.jobs) await app.register(jobsRoutes, { jobs: deps.jobs });
  if (deps.dashboardDir !== false) await app.register(dashboardRoutes, deps.dashboardDir === undefined ? {} : { dir: deps.dashboardDir });
  return fastify;
}
