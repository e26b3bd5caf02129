/**
 * API authentication: the fastify hook over the token table (gslb/config/tokens.ts).
 *
 * With no token configured at all, routes that need `viewer` are open and every other
 * route answers 401 GSLB_ERR_AUTH_REQUIRED explaining how to configure tokens.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { apiError } from './errors.js';
import { roleGrants, type Role, type TokenIdentity, type TokenStore } from '../config/tokens.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Hook factory (use as `onRequest`, so that unauthenticated requests are refused before
     * their body is read): passes requests whose bearer token's role grants `role`, and sets
     * `request.identity`; otherwise fails with GSLB_ERR_AUTH_REQUIRED, GSLB_ERR_AUTH_INVALID
     * or GSLB_ERR_FORBIDDEN.
     */
    requireRole(role: Role): (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  }
  interface FastifyRequest {
    /** Who is calling: set by requireRole; null on open routes and before authentication. */
    identity: TokenIdentity | null;
  }
}

const NOT_CONFIGURED_HOW =
  'no API tokens are configured: set http.tokensFile in gridsteer.yaml or GRIDSTEER_TOKENS=operator:<name>:<token>, then restart (docs/api.md)';

/**
 * The hook behind `app.requireRole(role)`, for a given store. Throws (rejects with) an ApiError;
 * never touches the reply itself.
 */
export function requireRole(tokens: TokenStore, role: Role): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async (request) => {
    if (tokens.size === 0) {
      if (role === 'viewer') return;
      throw apiError('GSLB_ERR_AUTH_REQUIRED', { role, how: NOT_CONFIGURED_HOW }, { field: 'headers.authorization' });
    }
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') {
      throw apiError(
        'GSLB_ERR_AUTH_REQUIRED',
        { role, how: 'send the header `Authorization: Bearer <token>`' },
        { field: 'headers.authorization', headers: { 'www-authenticate': 'Bearer realm="gridsteer"' } },
      );
    }
    const m = /^Bearer +(\S+) *$/i.exec(header);
    if (!m) {
      throw apiError(
        'GSLB_ERR_AUTH_INVALID',
        { reason: 'the Authorization header must be `Bearer <token>`' },
        { field: 'headers.authorization', headers: { 'www-authenticate': 'Bearer realm="gridsteer", error="invalid_request"' } },
      );
    }
    const identity = tokens.verify(m[1] as string);
    if (identity === null) {
      throw apiError(
        'GSLB_ERR_AUTH_INVALID',
        { reason: 'no configured token matches; check the token, or ask for one' },
        { field: 'headers.authorization', headers: { 'www-authenticate': 'Bearer realm="gridsteer", error="invalid_token"' } },
      );
    }
    if (!roleGrants(identity.role, role)) {
      throw apiError(
        'GSLB_ERR_FORBIDDEN',
        { required: role, name: identity.name, role: identity.role },
        { headers: { 'www-authenticate': `Bearer realm="gridsteer", error="insufficient_scope", scope="${role}"` } },
      );
    }
    request.identity = identity;
  };
}

/**
 * Decorates `app` (call on the root instance, before routes are added) with
 * `app.requireRole(role)` bound to `tokens`, and every request with `identity = null`.
 */
export function registerAuth(app: FastifyInstance, tokens: TokenStore): void {
  app.decorateRequest('identity', null);
  // The hook carries its role, so the OpenAPI description can name it (app.ts).
  app.decorate('requireRole', (role: Role) => Object.assign(requireRole(tokens, role), { role }));
}
