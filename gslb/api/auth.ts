/**
 * API authentication: bearer tokens, each with one role.
 *
 * Roles: `viewer` reads; `operator` reads and changes (reload, later drain/undrain/force);
 * `ingest` only pushes signals. A role grants exactly what `roleGrants` says.
 *
 * Tokens come from a YAML file (`tokens: [{ name, role, sha256 }]`, only the SHA-256 hex of
 * each token is stored at rest) and/or the GRIDSTEER_TOKENS value (`role:name:token,…`),
 * whose tokens are hashed on load and never kept in clear. A presented token is hashed and
 * compared with every stored hash using crypto.timingSafeEqual, without early exit.
 *
 * With no token configured at all, routes that need `viewer` are open and every other
 * route answers 401 GSLB_ERR_AUTH_REQUIRED explaining how to configure tokens.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { LineCounter, isMap, isSeq, parseDocument } from 'yaml';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { apiError } from './errors.js';

export const ROLES = ['viewer', 'operator', 'ingest'] as const;
export type Role = (typeof ROLES)[number];

/** Who presented a valid token. `source` is the token file's path or `GRIDSTEER_TOKENS`. */
export interface TokenIdentity {
  name: string;
  role: Role;
  source: string;
}

/**
 * The configured tokens, by hash only. Immutable once loaded; safe to share.
 * `verify` does the same work for a wrong token as for a right one (one SHA-256 and one
 * constant-time comparison per stored token).
 */
export interface TokenStore {
  /** Number of configured tokens; 0 = authentication is not configured. */
  readonly size: number;
  /** The identity whose token this is, or null. Never throws. */
  verify(token: string): TokenIdentity | null;
  /** The configured identities (names, roles, sources), never hashes. */
  list(): TokenIdentity[];
}

/** Whether a token of role `have` may use a route that needs `need`. */
export function roleGrants(have: Role, need: Role): boolean {
  return have === need || (have === 'operator' && need === 'viewer');
}

/** SHA-256 of the token's UTF-8 bytes, lowercase hex: what a token file stores. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Shortest token accepted from GRIDSTEER_TOKENS (characters). */
export const MIN_TOKEN_LENGTH = 16;

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const SHA256_RE = /^[0-9a-fA-F]{64}$/;
const HOW_TO_HASH = 'store the token\'s SHA-256 as `sha256: <hex>` (printf %s "$TOKEN" | sha256sum)';
const ROLE_LIST = 'viewer, operator or ingest';

/** Thrown by loadTokens: every problem found, each naming its file or entry and the fix. */
export class TokenLoadError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`api: cannot load the API tokens (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` + problems.map((p) => `  ${p}`).join('\n'));
    this.name = 'TokenLoadError';
    this.problems = problems;
  }
}

interface Entry {
  identity: TokenIdentity;
  hash: Buffer;
  /** Where the entry was declared, for duplicate reports. */
  where: string;
}

function isRole(s: unknown): s is Role {
  return typeof s === 'string' && (ROLES as readonly string[]).includes(s);
}

function parseFile(file: string, problems: string[]): Entry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    problems.push(`${file}: cannot read the tokens file (${(e as NodeJS.ErrnoException).code ?? String(e)}): check http.tokensFile`);
    return [];
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    for (const err of doc.errors) {
      problems.push(`${file}:${lines.linePos(err.pos[0]).line}: YAML syntax: ${err.message.split('\n')[0]}`);
    }
    return [];
  }
  const at = (path: (string | number)[]): string => {
    const node = doc.getIn(path, true) as { range?: [number, number, number] } | undefined;
    return node?.range ? `${file}:${lines.linePos(node.range[0]).line}` : file;
  };
  const root = doc.contents;
  if (root === null) {
    problems.push(`${file}: the file is empty; expected \`tokens:\` followed by a list of { name, role, sha256 } (docs/api.md)`);
    return [];
  }
  if (!isMap(root)) {
    problems.push(`${at([])}: expected a mapping with a \`tokens\` list (docs/api.md)`);
    return [];
  }
  let data: Record<string, unknown>;
  try {
    data = doc.toJS({ maxAliasCount: 0 }) as Record<string, unknown>;
  } catch (e) {
    problems.push(`${file}: ${(e as Error).message}: write every entry out (YAML aliases are not allowed here)`);
    return [];
  }
  for (const key of Object.keys(data)) {
    if (key !== 'tokens') problems.push(`${at([key])}: unknown key "${key}": the file holds only \`tokens\``);
  }
  const list = data.tokens;
  if (list === undefined || list === null) return [];
  if (!isSeq(doc.get('tokens', true))) {
    problems.push(`${at(['tokens'])}: tokens: expected a list of { name, role, sha256 }`);
    return [];
  }
  const entries: Entry[] = [];
  (list as unknown[]).forEach((item, i) => {
    const where = `${at(['tokens', i])}: tokens[${i}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      problems.push(`${where}: expected a mapping { name, role, sha256 }`);
      return;
    }
    const rec = item as Record<string, unknown>;
    let ok = true;
    for (const key of Object.keys(rec)) {
      if (key === 'name' || key === 'role' || key === 'sha256') continue;
      ok = false;
      if (key === 'token') {
        problems.push(`${at(['tokens', i, key])}: tokens[${i}].token: tokens are not stored in clear; remove it and ${HOW_TO_HASH}`);
      } else {
        problems.push(`${at(['tokens', i, key])}: tokens[${i}].${key}: unknown key; an entry has only name, role and sha256`);
      }
    }
    const { name, role, sha256 } = rec;
    if (name === undefined) {
      ok = false;
      problems.push(`${where}: name is missing: add a name that identifies who holds the token (e.g. alice, grafana)`);
    } else if (typeof name !== 'string' || !NAME_RE.test(name)) {
      ok = false;
      problems.push(`${at(['tokens', i, 'name'])}: tokens[${i}].name: must be 1-64 characters of letters, digits, . _ @ - (starting with a letter or digit)`);
    }
    if (role === undefined) {
      ok = false;
      problems.push(`${where}: role is missing: add role: ${ROLE_LIST}`);
    } else if (!isRole(role)) {
      ok = false;
      problems.push(`${at(['tokens', i, 'role'])}: tokens[${i}].role: ${JSON.stringify(role)} is not a role; use ${ROLE_LIST}`);
    }
    if (sha256 === undefined) {
      ok = false;
      problems.push(`${where}: sha256 is missing: ${HOW_TO_HASH}`);
    } else if (typeof sha256 !== 'string' || !SHA256_RE.test(sha256)) {
      ok = false;
      problems.push(`${at(['tokens', i, 'sha256'])}: tokens[${i}].sha256: must be 64 hex digits (a SHA-256, not the token): ${HOW_TO_HASH}`);
    }
    if (!ok) return;
    entries.push({
      identity: { name: name as string, role: role as Role, source: file },
      hash: Buffer.from((sha256 as string).toLowerCase(), 'hex'),
      where,
    });
  });
  return entries;
}

function parseEnv(value: string, problems: string[]): Entry[] {
  const parts = value.split(',');
  const entries: Entry[] = [];
  parts.forEach((raw, i) => {
    const part = raw.trim();
    if (part === '') return; // tolerates a trailing comma or blank entries
    // Never quote the entry itself: it holds a token.
    const where = `GRIDSTEER_TOKENS entry ${i + 1}`;
    const c1 = part.indexOf(':');
    const c2 = c1 < 0 ? -1 : part.indexOf(':', c1 + 1);
    if (c1 < 0 || c2 < 0) {
      problems.push(`${where}: expected role:name:token (e.g. operator:alice:<token>); entries are separated by commas`);
      return;
    }
    const role = part.slice(0, c1);
    const name = part.slice(c1 + 1, c2);
    const token = part.slice(c2 + 1);
    let ok = true;
    if (!isRole(role)) {
      ok = false;
      const shown = /^[A-Za-z_-]{1,20}$/.test(role) ? `"${role}" ` : '';
      problems.push(`${where}: the role ${shown}is not a role; use ${ROLE_LIST} (format role:name:token)`);
    }
    if (!NAME_RE.test(name)) {
      ok = false;
      problems.push(`${where}: the name must be 1-64 characters of letters, digits, . _ @ - (format role:name:token)`);
    }
    if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
      ok = false;
      problems.push(
        `${where}: the token must be at least ${MIN_TOKEN_LENGTH} characters without spaces; generate one with: openssl rand -hex 32`,
      );
    }
    if (!ok) return;
    entries.push({ identity: { name, role: role as Role, source: 'GRIDSTEER_TOKENS' }, hash: Buffer.from(hashToken(token), 'hex'), where });
  });
  return entries;
}

/**
 * Loads the API tokens from `file` (a YAML tokens file) and/or `env` (the value of
 * GRIDSTEER_TOKENS; this function never reads process.env itself). Either may be absent;
 * both absent or both empty gives an empty store (authentication not configured).
 * Names must be unique across both sources and no token may appear twice.
 * Throws TokenLoadError listing every problem; never returns a partial store.
 */
export function loadTokens(opts: { file?: string; env?: string }): TokenStore {
  const problems: string[] = [];
  const entries: Entry[] = [];
  if (opts.file !== undefined) entries.push(...parseFile(opts.file, problems));
  if (opts.env !== undefined) entries.push(...parseEnv(opts.env, problems));
  const byName = new Map<string, Entry>();
  const byHash = new Map<string, Entry>();
  for (const e of entries) {
    const sameName = byName.get(e.identity.name);
    if (sameName) problems.push(`${e.where}: the name "${e.identity.name}" is already used by ${sameName.where}; names must be unique`);
    else byName.set(e.identity.name, e);
    const hex = e.hash.toString('hex');
    const sameHash = byHash.get(hex);
    if (sameHash) problems.push(`${e.where}: the same token as ${sameHash.where}; give every holder its own token`);
    else byHash.set(hex, e);
  }
  if (problems.length > 0) throw new TokenLoadError(problems);
  return makeStore(entries);
}

function makeStore(entries: Entry[]): TokenStore {
  const frozen = entries.map((e) => ({ identity: Object.freeze({ ...e.identity }), hash: e.hash }));
  return Object.freeze({
    size: frozen.length,
    verify(token: string): TokenIdentity | null {
      const presented = createHash('sha256').update(token, 'utf8').digest();
      let found: TokenIdentity | null = null;
      for (const e of frozen) {
        if (timingSafeEqual(presented, e.hash) && found === null) found = e.identity;
      }
      return found;
    },
    list(): TokenIdentity[] {
      return frozen.map((e) => ({ ...e.identity }));
    },
  });
}

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
