/**
 * Strict inputs (issue 20): the rules every route gets from its schema, checked before the
 * schema's own validation and before any handler touches the store. Each refusal is a 4xx
 * naming the field (docs/api.md "Conventions"):
 *
 * - **One Authorization header.** A request with two is refused (400 `headers.authorization`):
 *   Node keeps the first silently, and a proxy may have checked the other.
 * - **No body where the route takes none.** A route whose schema has no `body` refuses a
 *   request carrying one (Content-Length above 0, or chunked) with 400 naming `body`, before
 *   a byte of it is parsed. An empty body stays "no body" (curl -X POST).
 * - **`application/json`, UTF-8 only.** A body's media type must be `application/json`
 *   (RFC 9110 §8.3.1: type and subtype are case-insensitive, so `application/JSON` is the same
 *   type) with no parameter but an optional `charset=utf-8` (any case, quoted or not); any
 *   other parameter, charset, empty parameter (`application/json;;`) or stray whitespace
 *   before the type is refused with 415 naming `headers.content-type`. The body itself must
 *   be valid UTF-8 (app.ts decodes it fatally).
 * - **A JSON body is never coerced** (strictBodyValidator): a string where the schema asks
 *   for a number or a boolean is refused (400 naming the field), as is any other type
 *   mismatch; only query strings and path parameters, which are text, are coerced.
 * - **Only known query parameters.** A parameter the route's querystring schema does not
 *   declare (every parameter, where the route declares none) is refused (400
 *   `querystring.<name>`, naming the known ones), like an unknown body field.
 * - **Query integers are decimal integers**: `-?[0-9]+` without leading zeros, at most 15
 *   digits; `1e400`, `Infinity`, `0x10`, `1.5`, `+5`, ` 5` are refused (400
 *   `querystring.<name>`); bounds are then the schema's.
 * - **Text is text**, the same rule for query strings and for every string of a JSON body
 *   (TEXT_PROBLEM): no control characters but tab, LF and CR, no lone surrogates, no U+FFFD
 *   (what a decoder makes of invalid UTF-8); a query value must be valid UTF-8 in its
 *   percent-encoding; a query parameter given twice is refused. A body nested deeper than
 *   MAX_BODY_DEPTH is refused too (no route takes one).
 */
import { createRequire } from 'node:module';
import type { FastifyInstance, FastifyRequest, FastifyServerOptions } from 'fastify';
import { apiError } from './errors.js';

type BuildValidator = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>;
// fastify's own validator compiler (its dependency; pinned by the lock file), built twice: with and without coercion.
const AjvCompiler = createRequire(import.meta.url)('@fastify/ajv-compiler') as () => BuildValidator;
const coercing = AjvCompiler();
const exact = AjvCompiler();

/**
 * fastify's validator, except that bodies are validated without type coercion (fastify's
 * default coerces "0.5" to 0.5 and "true" to true everywhere). Query strings, path
 * parameters and headers keep it: they are text, and strict.ts checks query numbers first.
 */
export const strictBodyValidator: BuildValidator = (externalSchemas, options) => {
  const custom = (options as { customOptions?: object } | undefined)?.customOptions ?? {};
  const text = coercing(externalSchemas, options);
  const body = exact(externalSchemas, { ...(options as object), customOptions: { ...custom, coerceTypes: false } } as typeof options);
  return (route) => (route.httpPart === 'body' ? body(route) : text(route));
};

/** fastify's validator options (app.ts, with strictBodyValidator); test/core-total.test.ts compiles route bodies with them too. */
export const AJV_OPTIONS = { customOptions: { removeAdditional: false } };

/** Deepest JSON nesting a body may have (no route's schema goes beyond a few levels). */
export const MAX_BODY_DEPTH = 32;

const CONTENT_TYPE_RE = /^application\/json(?:[ \t]*;[ \t]*charset[ \t]*=[ \t]*(?:utf-8|"utf-8"))?[ \t]*$/i;
const DECIMAL_RE = /^-?(?:0|[1-9][0-9]{0,14})$/;
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
const LONE_SURROGATE_RE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `s` is not acceptable text (a phrase after the field's name), or null. Body and query text alike. */
export function textProblem(s: string): string | null {
  const c = CONTROL_RE.exec(s);
  if (c) return `contains the control character U+${c[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}; send plain text`;
  if (LONE_SURROGATE_RE.test(s)) return 'contains a lone UTF-16 surrogate; send valid Unicode text';
  if (s.includes('\ufffd')) return 'contains U+FFFD (the mark of invalid UTF-8); send valid UTF-8';
  return null;
}

/** Whether a Content-Type header names JSON in UTF-8 as this API accepts it (see above). */
export function jsonContentTypeOk(value: string): boolean {
  return CONTENT_TYPE_RE.test(value);
}

interface RouteRules {
  body: boolean;
  /** The query parameters the route declares (none where it has no querystring schema). */
  query: Set<string>;
  /** Query parameters the schema types as integer or number. */
  integers: Set<string>;
}

function hasBody(request: FastifyRequest): boolean {
  const len = request.headers['content-length'];
  if (len !== undefined && len !== '0') return true;
  return request.headers['transfer-encoding'] !== undefined;
}

/** The raw query's parameters, percent-decoded strictly: [name, value | null when not valid UTF-8]. */
function rawQuery(url: string): [string, string | null][] {
  const q = url.indexOf('?');
  if (q < 0) return [];
  const out: [string, string | null][] = [];
  for (const part of url.slice(q + 1).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const dec = (s: string): string | null => {
      try {
        return decodeURIComponent(s.replace(/\+/g, ' '));
      } catch {
        return null;
      }
    };
    const name = dec(eq < 0 ? part : part.slice(0, eq)) ?? part.slice(0, eq < 0 ? undefined : eq);
    out.push([name, eq < 0 ? '' : dec(part.slice(eq + 1))]);
  }
  return out;
}

/** Walks a parsed JSON body (iteratively) for text and depth; throws the refusal (an ApiError naming the field). */
export function checkBody(body: unknown): void {
  const stack: { v: unknown; path: string; depth: number }[] = [{ v: body, path: 'body', depth: 0 }];
  let seen = 0;
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (++seen > 200_000) return; // bounded: the body limit bounds this anyway
    if (typeof v === 'string') {
      const p = textProblem(v);
      if (p) throw apiError('GSLB_ERR_VALIDATION', { field: path, problem: p }, { field: path });
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_BODY_DEPTH) throw apiError('GSLB_ERR_VALIDATION', { field: path, problem: `is nested deeper than ${MAX_BODY_DEPTH} levels` }, { field: path });
    if (Array.isArray(v)) v.forEach((x, i) => stack.push({ v: x, path: `${path}[${i}]`, depth: depth + 1 }));
    else {
      for (const [k, x] of Object.entries(v)) {
        const kp = /^[A-Za-z_$][\w$-]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k.slice(0, 40))}]`;
        const p = textProblem(k);
        if (p) throw apiError('GSLB_ERR_VALIDATION', { field: kp, problem: `(a key) ${p}` }, { field: kp });
        stack.push({ v: x, path: kp, depth: depth + 1 });
      }
    }
  }
}

/** Registers the rules above on `app` (before any route). */
export function registerStrictInputs(app: FastifyInstance): void {
  const rules = new Map<string, RouteRules>();
  const rulesOf = (request: FastifyRequest) => rules.get(`${request.method === 'HEAD' ? 'GET' : request.method} ${request.routeOptions.url ?? ''}`);
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ?? {}) as { body?: unknown; querystring?: { properties?: Record<string, { type?: unknown }> } };
    const integers = new Set<string>();
    for (const [name, s] of Object.entries(schema.querystring?.properties ?? {})) {
      const t = [s.type].flat();
      if (t.includes('integer') || t.includes('number')) integers.add(name);
    }
    const query = new Set(Object.keys(schema.querystring?.properties ?? {}));
    for (const m of [route.method].flat()) rules.set(`${m} ${route.url}`, { body: schema.body !== undefined, query, integers });
  });

  app.addHook('onRequest', async (request) => {
    let n = 0;
    const raw = request.raw.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === 'authorization') n++;
    if (n > 1) throw apiError('GSLB_ERR_BAD_REQUEST', { reason: `the Authorization header was sent ${n} times; send it once` }, { field: 'headers.authorization' });
  });

  // After the route's own onRequest hooks (auth), before a byte of the body is read.
  app.addHook('preParsing', async (request) => {
    const r = rulesOf(request);
    if (!r || !hasBody(request)) return;
    if (!r.body) throw apiError('GSLB_ERR_VALIDATION', { field: 'body', problem: `is not taken by ${request.method} ${request.routeOptions.url ?? ''}; send no body` }, { field: 'body' });
    const ct = request.headers['content-type'];
    if (ct !== undefined && !jsonContentTypeOk(ct)) {
      throw apiError('GSLB_ERR_UNSUPPORTED_MEDIA_TYPE', { contentType: JSON.stringify(ct.slice(0, 100)) }, { field: 'headers.content-type' });
    }
  });

  app.addHook('preValidation', async (request) => {
    const r = rulesOf(request);
    if (!r) return;
    const seen = new Set<string>();
    for (const [name, value] of rawQuery(request.raw.url ?? '')) {
      const field = `querystring.${name.slice(0, 60)}`;
      if (seen.has(name)) throw apiError('GSLB_ERR_VALIDATION', { field, problem: 'is given more than once; give it once' }, { field });
      seen.add(name);
      if (!r.query.has(name)) {
        const known = [...r.query].sort();
        throw apiError('GSLB_ERR_VALIDATION', { field, problem: `is not a known field of ${request.method} ${request.routeOptions.url ?? ''} (${known.length > 0 ? `known: ${known.join(', ')}` : 'it takes none'}); remove it` }, { field });
      }
      if (value === null) throw apiError('GSLB_ERR_VALIDATION', { field, problem: 'is not valid UTF-8 in its percent-encoding' }, { field });
      const p = textProblem(value) ?? textProblem(name);
      if (p) throw apiError('GSLB_ERR_VALIDATION', { field, problem: p }, { field });
      if (r.integers.has(name) && !DECIMAL_RE.test(value)) {
        throw apiError('GSLB_ERR_VALIDATION', { field, problem: `must be a decimal integer (digits only, e.g. 100; got ${JSON.stringify(value.slice(0, 40))})` }, { field });
      }
    }
    if (request.body !== undefined) checkBody(request.body);
  });
}
