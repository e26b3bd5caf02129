/**
 * The API's error codes: ONE table, like fastify's `lib/errors.js` (`FST_ERR_*`).
 *
 * Contract:
 * - Every error the HTTP API answers carries a code from `ERRORS`, with that entry's status.
 *   The body is always `{ "error": { "code", "message", "field"?, "details"? } }`.
 * - `docs/errors.md` documents exactly the codes of this table (checked by errors.test.ts).
 * - Messages start with the module (`api: …`), name what was wrong and say what to do.
 * - `toApiError` maps anything thrown or produced by fastify (validation, body parsing,
 *   content types) to this table. Bad input always maps to a 4xx; only faults of the server
 *   itself map to GSLB_ERR_INTERNAL, whose message never carries the internal detail.
 *
 * This module does no I/O and imports no fastify runtime code.
 */
import type { FastifyError } from 'fastify';

/**
 * Code → HTTP status and message template. `{name}` placeholders are filled by `apiError`,
 * whose second argument must supply exactly the placeholders of the template (checked by tsc).
 */
export const ERRORS = {
  GSLB_ERR_AUTH_REQUIRED: { status: 401, message: 'api: this request needs a bearer token with role {role}; {how}' },
  GSLB_ERR_AUTH_INVALID: { status: 401, message: 'api: the bearer token was not accepted: {reason}' },
  GSLB_ERR_FORBIDDEN: { status: 403, message: 'api: this request needs role {required}; token "{name}" has role {role}' },
  GSLB_ERR_NOT_GRANTED: { status: 403, message: 'api: {field}: {problem}; nothing of the request was stored (docs/api.md "Principals and grants")' },
  GSLB_ERR_VALIDATION: { status: 400, message: 'api: {field} {problem}' },
  GSLB_ERR_BAD_REQUEST: { status: 400, message: 'api: bad request: {reason}' },
  GSLB_ERR_BAD_JSON: { status: 400, message: 'api: the request body is not valid JSON: {reason}' },
  GSLB_ERR_NOT_FOUND: { status: 404, message: 'api: {what} was not found; {hint}' },
  GSLB_ERR_BODY_TOO_LARGE: { status: 413, message: 'api: the request body is larger than {limit} bytes' },
  GSLB_ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'api: content type {contentType} is not accepted; send the body as application/json',
  },
  GSLB_ERR_CONFIG_INVALID: {
    status: 422,
    message: 'api: the configuration has {count} problem(s) and was not applied; the running configuration stays in force',
  },
  GSLB_ERR_RATE_LIMITED: { status: 429, message: 'api: too many requests; retry after {retryAfter} s' },
  GSLB_ERR_QUOTA: { status: 429, message: 'api: {problem}; nothing of the request was stored: retry after {retryAfter} s' },
  GSLB_ERR_INTERNAL: { status: 500, message: 'api: internal error (request {requestId}); the server log has the details' },
  GSLB_ERR_NOT_READY: { status: 503, message: 'api: not ready: {reason}' },
  GSLB_ERR_STORE_UNAVAILABLE: { status: 503, message: 'api: the state store is unavailable ({reason}); {changed}: retry later or on another node' },
} as const satisfies Record<`GSLB_ERR_${string}`, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** GSLB_ERR_STORE_UNAVAILABLE's `changed` for a write that applies whole or not at all (its script's deadline, redis-store.ts). */
export const NOTHING_CHANGED = 'nothing was changed';

/** Every code of the table, in table order. */
export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

type Placeholders<S extends string> = S extends `${string}{${infer K}}${infer Rest}` ? K | Placeholders<Rest> : never;

/** The values a code's template needs, by placeholder name. */
export type ErrorVars<C extends ErrorCode> = Record<Placeholders<(typeof ERRORS)[C]['message']>, string | number>;

/** The JSON body of every error response. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; field?: string; details?: unknown };
}

export interface ApiErrorExtra {
  /** The request field at fault, e.g. `body.reason`, `querystring.limit`, `headers.authorization`. */
  field?: string;
  /** Machine-readable detail, e.g. `{ issues: [...] }` for GSLB_ERR_CONFIG_INVALID. */
  details?: unknown;
  /** Response headers to send with the error (e.g. `WWW-Authenticate`, `Retry-After`). */
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An error that the API answers as-is: its code, status and message come from `ERRORS`. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly field: string | undefined;
  readonly details: unknown;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, extra: ApiErrorExtra = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = ERRORS[code].status;
    this.field = extra.field;
    this.details = extra.details;
    this.headers = extra.headers ?? {};
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message };
    if (this.field !== undefined) error.field = this.field;
    if (this.details !== undefined) error.details = this.details;
    return { error };
  }
}

/** Fills a code's template. A placeholder missing from `vars` is left visible as `{name}`. */
export function formatMessage<C extends ErrorCode>(code: C, vars: ErrorVars<C>): string {
  const values = vars as Record<string, string | number>;
  return ERRORS[code].message.replace(/\{(\w+)\}/g, (m, k: string) => (k in values ? String(values[k]) : m));
}

/** Builds the ApiError for `code`; the only way the API should create one. */
export function apiError<C extends ErrorCode>(code: C, vars: ErrorVars<C>, extra: ApiErrorExtra = {}): ApiError {
  return new ApiError(code, formatMessage(code, vars), extra);
}

/** One ajv error as fastify reports it on a validation failure. */
interface AjvLikeError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Renders a JSON pointer (`/items/0/name`) under a request part as `body.items[0].name`. */
function renderPath(part: string, pointer: string, extra?: string): string {
  const segments = pointer === '' ? [] : pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) segments.push(extra);
  let out = part;
  for (const s of segments) out += /^\d+$/.test(s) ? `[${s}]` : /^[A-Za-z_$][\w$-]*$/.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
  return out;
}

/**
 * The field named by one validation error: the missing or unknown property for `required`
 * and `additionalProperties`, else the value's own path, prefixed by the request part
 * (`body`, `querystring`, `params`, `headers`).
 */
export function validationField(part: string, e: AjvLikeError): string {
  if (e.keyword === 'required' && typeof e.params.missingProperty === 'string') {
    return renderPath(part, e.instancePath, e.params.missingProperty);
  }
  if (e.keyword === 'additionalProperties' && typeof e.params.additionalProperty === 'string') {
    return renderPath(part, e.instancePath, e.params.additionalProperty);
  }
  return renderPath(part, e.instancePath);
}

function validationProblem(e: AjvLikeError): string {
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a known field; remove it';
    case 'enum':
      return Array.isArray(e.params.allowedValues)
        ? `must be one of: ${e.params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`
        : 'must be one of the allowed values';
    case 'const':
      return `must be ${JSON.stringify(e.params.allowedValue)}`;
    default:
      return e.message ?? `fails the "${e.keyword}" rule`;
  }
}

/** What `toApiError` needs to know about the request the error belongs to. */
export interface ErrorContext {
  requestId: string;
  /** The body limit in bytes that applied to the request. */
  bodyLimit: number;
  /** The request's Content-Type header, if any. */
  contentType: string | undefined;
}

function isFastifyError(err: unknown): err is FastifyError & { validation?: AjvLikeError[]; validationContext?: string } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string';
}

/**
 * Maps anything the API may see as an error to an ApiError of the table:
 * - ApiError → itself;
 * - fastify validation errors → GSLB_ERR_VALIDATION naming the first failing field;
 * - fastify body/content-type errors (`FST_ERR_CTP_*`) → BODY_TOO_LARGE, UNSUPPORTED_MEDIA_TYPE, BAD_JSON;
 * - any other fastify (`FST_*`) error with a 4xx status → GSLB_ERR_BAD_REQUEST (bad input is never a 5xx);
 * - everything else → GSLB_ERR_INTERNAL, with `cause` set to the original for logging.
 */
export function toApiError(err: unknown, ctx: ErrorContext): ApiError {
  if (err instanceof ApiError) return err;
  if (isFastifyError(err)) {
    if (Array.isArray(err.validation) && err.validation.length > 0) {
      const first = err.validation[0] as AjvLikeError;
      const field = validationField(err.validationContext ?? 'request', first);
      return apiError('GSLB_ERR_VALIDATION', { field, problem: validationProblem(first) }, { field, cause: err });
    }
    switch (err.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return apiError('GSLB_ERR_BODY_TOO_LARGE', { limit: ctx.bodyLimit }, { field: 'body', cause: err });
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return apiError(
          'GSLB_ERR_UNSUPPORTED_MEDIA_TYPE',
          { contentType: ctx.contentType === undefined ? '(none)' : JSON.stringify(ctx.contentType.slice(0, 100)) },
          { field: 'headers.content-type', cause: err },
        );
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return apiError('GSLB_ERR_BAD_JSON', { reason: 'the body is empty' }, { field: 'body', cause: err });
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return apiError('GSLB_ERR_BAD_JSON', { reason: 'it does not parse' }, { field: 'body', cause: err });
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return apiError('GSLB_ERR_BAD_REQUEST', { reason: 'the body size does not match Content-Length' }, { cause: err });
      case 'FST_ERR_BAD_URL':
        return apiError('GSLB_ERR_BAD_REQUEST', { reason: 'the URL is not correctly percent-encoded' }, { cause: err });
      case 'FST_ERR_MAX_PARAM_LENGTH':
        return apiError('GSLB_ERR_BAD_REQUEST', { reason: 'a path segment is longer than 100 characters' }, { cause: err, field: 'params' });
    }
    // Other fastify request errors with a 4xx status (e.g. FST_ERR_ROUTE_MISSING_CONTENT_TYPE).
    // Errors from elsewhere are never trusted to describe the request, whatever their statusCode.
    const status = err.statusCode;
    if (err.code.startsWith('FST_') && typeof status === 'number' && status >= 400 && status < 500) {
      return apiError('GSLB_ERR_BAD_REQUEST', { reason: err.message || `HTTP ${status}` }, { cause: err });
    }
  }
  return apiError('GSLB_ERR_INTERNAL', { requestId: ctx.requestId }, { cause: err });
}
