/**
 * The config of a region's drain hook (`drainHook` in a region file; docs/drain-hooks.md),
 * declared once as a schema with its static type. The runner is gslb/control/hooks.ts.
 */
import { Type, type Static } from '@sinclair/typebox';

const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$";
const ENV_NAME = '^[A-Za-z_][A-Za-z0-9_]{0,255}$';

/** A region's drain hook (`drainHook` in a region file). Unknown keys are errors. */
export const DrainHookSchema = Type.Object(
  {
    url: Type.String({
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^@/?#\\s]+([/?][^#\\s]*)?$',
      maxLength: 2048,
      'x-type': 'URL',
      'x-form': 'an http: or https: URL without user:password@ or #fragment, e.g. https://gw.us-va.example.com/gridsteer/drain',
      description: 'where the hook is POSTed (JSON, see docs/drain-hooks.md); redirects are not followed',
    }),
    tokenEnv: Type.Optional(
      Type.String({
        pattern: ENV_NAME,
        'x-type': 'environment variable name',
        'x-form': 'an environment variable name: letters, digits and _, not starting with a digit, e.g. GRIDSTEER_HOOK_US_VA',
        description: 'the environment variable holding the bearer token sent as Authorization: Bearer <token> (secrets never go in config files); unset or empty: no call is made and the call is reported as an error',
      }),
    ),
    headers: Type.Optional(
      Type.Record(Type.String({ pattern: HEADER_NAME }), Type.String({ maxLength: 4096, pattern: '^[^\\r\\n]*$', description: 'the header value' }), {
        additionalProperties: false,
        default: {},
        description: 'extra static request headers (name: value), e.g. a tenant or routing header; no secrets (use tokenEnv); Authorization, Content-Type, Content-Length, Host and Idempotency-Key are set by GridSteer and ignored here',
      }),
    ),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 60000, default: 2000, description: 'time one attempt may take (connect, request, response headers), ms' }),
    retries: Type.Integer({ minimum: 0, maximum: 10, default: 3, description: 'attempts after the first when one fails (network error, timeout, HTTP status not 2xx); a newer step of the region abandons the call' }),
    retryBaseMs: Type.Integer({ minimum: 10, maximum: 60000, default: 500, description: 'wait before the first retry, ms; doubled before each next one (at most 5 minutes)' }),
  },
  { additionalProperties: false, description: "the region's drain hook: a webhook (e.g. its API gateway) told at each step of the region's plan what share to shed and when to refuse new streams (docs/drain-hooks.md)" },
);

export type DrainHookConfig = Static<typeof DrainHookSchema>;
