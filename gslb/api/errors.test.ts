import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERRORS, ERROR_CODES, ApiError, apiError, formatMessage, toApiError, validationField, type ErrorCode } from './errors.js';

// dist/gslb/api/errors.test.js → repository root.
const DOC = new URL('../../../docs/errors.md', import.meta.url);

function documentedCodes(): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of readFileSync(DOC, 'utf8').split('\n')) {
    const m = /^\|\s*`(GSLB_ERR_[A-Z_]+)`\s*\|\s*(\d{3})\s*\|/.exec(line);
    if (m) {
      assert.ok(!out.has(m[1] as string), `docs/errors.md lists ${m[1]} twice`);
      out.set(m[1] as string, Number(m[2]));
    }
  }
  return out;
}

test('docs/errors.md documents exactly the codes of the table, with their status', () => {
  const doc = documentedCodes();
  const missing = ERROR_CODES.filter((c) => !doc.has(c));
  const extra = [...doc.keys()].filter((c) => !(c in ERRORS));
  assert.deepEqual(missing, [], `codes in gslb/api/errors.ts but not in docs/errors.md: ${missing.join(', ')}`);
  assert.deepEqual(extra, [], `codes in docs/errors.md but not in gslb/api/errors.ts: ${extra.join(', ')}`);
  for (const c of ERROR_CODES) assert.equal(doc.get(c), ERRORS[c].status, `${c}: status in docs/errors.md`);
});

test('the table: codes, statuses and messages follow the conventions', () => {
  const required: [ErrorCode, number][] = [
    ['GSLB_ERR_AUTH_REQUIRED', 401],
    ['GSLB_ERR_AUTH_INVALID', 401],
    ['GSLB_ERR_FORBIDDEN', 403],
    ['GSLB_ERR_VALIDATION', 400],
    ['GSLB_ERR_NOT_FOUND', 404],
    ['GSLB_ERR_CONFIG_INVALID', 422],
    ['GSLB_ERR_RATE_LIMITED', 429],
    ['GSLB_ERR_NOT_READY', 503],
    ['GSLB_ERR_INTERNAL', 500],
    ['GSLB_ERR_BODY_TOO_LARGE', 413],
    ['GSLB_ERR_UNSUPPORTED_MEDIA_TYPE', 415],
    ['GSLB_ERR_BAD_JSON', 400],
  ];
  for (const [code, status] of required) assert.equal(ERRORS[code].status, status, code);
  for (const c of ERROR_CODES) {
    assert.match(c, /^GSLB_ERR_[A-Z_]+$/);
    assert.ok(ERRORS[c].message.startsWith('api: '), `${c}: message starts with the module`);
    assert.ok(ERRORS[c].status >= 400 && ERRORS[c].status <= 599, c);
  }
});

test('formatMessage fills every placeholder', () => {
  assert.equal(
    formatMessage('GSLB_ERR_FORBIDDEN', { required: 'operator', name: 'grafana', role: 'viewer' }),
    'api: this request needs role operator; token "grafana" has role viewer',
  );
  const e = apiError('GSLB_ERR_VALIDATION', { field: 'body.reason', problem: 'is required' }, { field: 'body.reason' });
  assert.ok(e instanceof ApiError);
  assert.equal(e.statusCode, 400);
  assert.deepEqual(e.toBody(), { error: { code: 'GSLB_ERR_VALIDATION', message: 'api: body.reason is required', field: 'body.reason' } });
});

test('validationField names the field from instancePath and missing/additional property', () => {
  const cases: [string, { keyword: string; instancePath: string; params: Record<string, unknown> }, string][] = [
    ['body', { keyword: 'required', instancePath: '', params: { missingProperty: 'reason' } }, 'body.reason'],
    ['body', { keyword: 'required', instancePath: '/items/2', params: { missingProperty: 'name' } }, 'body.items[2].name'],
    ['body', { keyword: 'additionalProperties', instancePath: '/a', params: { additionalProperty: 'x' } }, 'body.a.x'],
    ['body', { keyword: 'type', instancePath: '/ramp', params: { type: 'integer' } }, 'body.ramp'],
    ['body', { keyword: 'type', instancePath: '', params: { type: 'object' } }, 'body'],
    ['querystring', { keyword: 'minimum', instancePath: '/limit', params: {} }, 'querystring.limit'],
    ['params', { keyword: 'pattern', instancePath: '/region', params: {} }, 'params.region'],
    ['body', { keyword: 'type', instancePath: '/a~1b/weird key', params: {} }, 'body["a/b"]["weird key"]'],
  ];
  for (const [part, e, want] of cases) assert.equal(validationField(part, e), want, JSON.stringify(e));
});

function fastifyError(code: string, statusCode: number, message = code): Error {
  return Object.assign(new Error(message), { code, statusCode });
}

test('toApiError maps fastify errors to the table; bad input is never a 5xx', () => {
  const ctx = { requestId: 'req-7', bodyLimit: 1048576, contentType: 'text/plain' };
  const validation = Object.assign(fastifyError('FST_ERR_VALIDATION', 400), {
    validation: [{ keyword: 'enum', instancePath: '/action', params: { allowedValues: ['drain', 'undrain'] }, message: 'x' }],
    validationContext: 'body',
  });
  const cases: [string, unknown, ErrorCode, number, string | undefined][] = [
    ['validation', validation, 'GSLB_ERR_VALIDATION', 400, 'body.action'],
    ['body too large', fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413), 'GSLB_ERR_BODY_TOO_LARGE', 413, 'body'],
    ['media type', fastifyError('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415), 'GSLB_ERR_UNSUPPORTED_MEDIA_TYPE', 415, 'headers.content-type'],
    ['empty json', fastifyError('FST_ERR_CTP_EMPTY_JSON_BODY', 400), 'GSLB_ERR_BAD_JSON', 400, 'body'],
    ['invalid json', fastifyError('FST_ERR_CTP_INVALID_JSON_BODY', 400), 'GSLB_ERR_BAD_JSON', 400, 'body'],
    ['content length', fastifyError('FST_ERR_CTP_INVALID_CONTENT_LENGTH', 400), 'GSLB_ERR_BAD_REQUEST', 400, undefined],
    ['bad url', fastifyError('FST_ERR_BAD_URL', 400), 'GSLB_ERR_BAD_REQUEST', 400, undefined],
    ['other fastify 4xx', fastifyError('FST_ERR_ROUTE_MISSING_CONTENT_TYPE', 400), 'GSLB_ERR_BAD_REQUEST', 400, undefined],
    ['plain error', new Error('boom'), 'GSLB_ERR_INTERNAL', 500, undefined],
    ['foreign 4xx is not trusted', Object.assign(new Error('upstream 404'), { statusCode: 404 }), 'GSLB_ERR_INTERNAL', 500, undefined],
    ['a thrown string', 'boom', 'GSLB_ERR_INTERNAL', 500, undefined],
  ];
  for (const [name, err, code, status, field] of cases) {
    const e = toApiError(err, ctx);
    assert.equal(e.code, code, name);
    assert.equal(e.statusCode, status, name);
    assert.equal(e.field, field, name);
    assert.ok(e.message.startsWith('api: '), name);
  }
  assert.equal(toApiError(validation, ctx).message, 'api: body.action must be one of: "drain", "undrain"');
  const internal = toApiError(new Error('secret detail'), ctx);
  assert.equal(internal.message, 'api: internal error (request req-7); the server log has the details');
  const own = apiError('GSLB_ERR_NOT_READY', { reason: 'x' });
  assert.equal(toApiError(own, ctx), own);
});
