/**
 * The token table: bearer tokens, each with one role and, for ingest tokens, the grants it
 * speaks under (ADR 0021). One module for every layer that authenticates (the HTTP API today;
 * its fastify hook is gslb/api/auth.ts): a new consumer adds a role or a kind of grant here,
 * not a second file format.
 *
 * Roles: `viewer` reads; `operator` reads and changes; `ingest` only pushes signals. A role
 * grants exactly what `roleGrants` says.
 *
 * Tokens come from a YAML file (`tokens: [{ name, role, sha256, grants? }]`, only the SHA-256
 * hex of each token is stored at rest) and/or the GRIDSTEER_TOKENS value
 * (`role:name:token` or `role:name[grants]:token`, comma-separated), whose tokens are hashed
 * on load and never kept in clear. A presented token is hashed and compared with every stored
 * hash using crypto.timingSafeEqual, without early exit.
 *
 * Grants (`ercot/`, or `{ source: ercot/, regions: [us-tx] }`; in GRIDSTEER_TOKENS
 * `ercot/=us-tx+us-east|caiso/`): the source prefixes an ingest token may post under. They
 * never overlap across tokens, nor cover a reserved namespace (`manual/`, a configured
 * collector's prefix): the load refuses, naming both.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { LineCounter, isMap, isSeq, parseDocument } from 'yaml';
import { MANUAL_PREFIX, grantText, grantsOverlap, type Grant } from '../model/principal.js';

export const ROLES = ['viewer', 'operator', 'ingest'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Who presented a valid token. `source` is the token file's path or `GRIDSTEER_TOKENS`.
 * `grants`: an ingest token's source prefixes (optionally per region) it may speak for; absent
 * = no grant (it may post outside every granted and reserved namespace, and is never trusted
 * for a physical loss: ADR 0021). Another layer that authenticates (xDS, a webhook) adds a
 * role, or a kind of grant, to this one table.
 */
export interface TokenIdentity {
  name: string;
  role: Role;
  source: string;
  grants?: readonly Grant[];
}

/** A namespace no ingest grant may cover, and who holds it: `manual/` (the operator route), each configured collector's prefix. */
export interface ReservedNamespace {
  prefix: string;
  /** Who holds it, in words: `the operator route (manual/<token name>)`, `collector openadr3`. */
  by: string;
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
/** A grant's source prefix: the characters of a signal source (gslb/model/signals.ts). */
const PREFIX_RE = /^[A-Za-z0-9._:/@-]{1,200}$/;
const REGION_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;
const MAX_GRANTS = 100;
const HOW_TO_GRANT = 'a grant is a source prefix (`ercot/`) or { source: ercot/, regions: [us-tx] } (docs/api.md, Grants)';
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

/** A token's grants (a list of prefixes or { source, regions }), or null after adding its problems. */
function parseGrants(v: unknown, where: string, problems: string[]): Grant[] | null {
  if (!Array.isArray(v)) {
    problems.push(`${where}: expected a list of grants; ${HOW_TO_GRANT}`);
    return null;
  }
  if (v.length === 0 || v.length > MAX_GRANTS) {
    problems.push(`${where}: expected 1 to ${MAX_GRANTS} grants (leave grants out for a token without one); ${HOW_TO_GRANT}`);
    return null;
  }
  const out: Grant[] = [];
  let ok = true;
  v.forEach((g, j) => {
    const at = `${where}[${j}]`;
    const item = typeof g === 'string' ? { source: g } : g;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      ok = false;
      problems.push(`${at}: ${HOW_TO_GRANT}`);
      return;
    }
    const rec = item as Record<string, unknown>;
    const unknown = Object.keys(rec).filter((k) => k !== 'source' && k !== 'regions');
    if (unknown.length > 0) {
      ok = false;
      problems.push(`${at}.${unknown[0]}: unknown key; a grant has only source and regions`);
      return;
    }
    if (typeof rec.source !== 'string' || !PREFIX_RE.test(rec.source)) {
      ok = false;
      problems.push(`${at}.source: must be a source prefix of 1-200 characters of letters, digits and . _ : / @ - (e.g. ercot/)`);
      return;
    }
    if (rec.regions !== undefined && (!Array.isArray(rec.regions) || rec.regions.length === 0 || !rec.regions.every((r) => typeof r === 'string' && REGION_RE.test(r)))) {
      ok = false;
      problems.push(`${at}.regions: must be a non-empty list of region ids (lowercase letters, digits and -); leave it out for every region`);
      return;
    }
    out.push(rec.regions === undefined ? { source: rec.source } : { source: rec.source, regions: [...new Set(rec.regions as string[])].sort() });
  });
  return ok ? out : null;
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
      if (key === 'name' || key === 'role' || key === 'sha256' || key === 'grants') continue;
      ok = false;
      if (key === 'token') {
        problems.push(`${at(['tokens', i, key])}: tokens[${i}].token: tokens are not stored in clear; remove it and ${HOW_TO_HASH}`);
      } else {
        problems.push(`${at(['tokens', i, key])}: tokens[${i}].${key}: unknown key; an entry has only name, role, sha256 and grants`);
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
    const grants = rec.grants === undefined ? undefined : parseGrants(rec.grants, `${at(['tokens', i, 'grants'])}: tokens[${i}].grants`, problems);
    if (grants === null) ok = false;
    if (!ok) return;
    entries.push({
      identity: { name: name as string, role: role as Role, source: file, ...(grants ? { grants } : {}) },
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
    // The name may carry grants in brackets (no bracket is a character of a name or a source):
    // ingest:ercot-bridge[ercot/=us-tx+us-east|caiso/]:<token>.
    const open = c1 < 0 ? -1 : part.indexOf('[', c1 + 1);
    const firstColon = c1 < 0 ? -1 : part.indexOf(':', c1 + 1);
    const bracketed = open >= 0 && (firstColon < 0 || open < firstColon);
    const close = bracketed ? part.indexOf(']', open + 1) : -1;
    const c2 = bracketed ? (close >= 0 && part[close + 1] === ':' ? close + 1 : -1) : firstColon;
    if (c1 < 0 || c2 < 0) {
      problems.push(`${where}: expected role:name:token or role:name[grants]:token (e.g. operator:alice:<token>, ingest:bridge[ercot/=us-tx|caiso/]:<token>); entries are separated by commas`);
      return;
    }
    const role = part.slice(0, c1);
    const name = part.slice(c1 + 1, bracketed ? open : c2);
    const token = part.slice(c2 + 1);
    let ok = true;
    let grants: Grant[] | undefined;
    if (bracketed) {
      const list = part.slice(open + 1, close).split('|').map((g) => {
        const eq = g.indexOf('=');
        return eq < 0 ? g : { source: g.slice(0, eq), regions: g.slice(eq + 1).split('+') };
      });
      const parsed = parseGrants(list, `${where}: the grants`, problems);
      if (parsed === null) ok = false;
      else grants = parsed;
    }
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
    entries.push({ identity: { name, role: role as Role, source: 'GRIDSTEER_TOKENS', ...(grants ? { grants } : {}) }, hash: Buffer.from(hashToken(token), 'hex'), where });
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
export function loadTokens(opts: { file?: string; env?: string; reserved?: readonly ReservedNamespace[]; regions?: ReadonlySet<string> }): TokenStore {
  const problems: string[] = [];
  const entries: Entry[] = [];
  if (opts.file !== undefined) entries.push(...parseFile(opts.file, problems));
  if (opts.env !== undefined) entries.push(...parseEnv(opts.env, problems));
  problems.push(...grantProblems(entries, opts.reserved ?? [{ prefix: MANUAL_PREFIX, by: 'the operator route (manual/<token name>)' }], opts.regions));
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

/**
 * Grants that cannot stand: on a token that does not ingest, naming a region not in the fleet,
 * covering a reserved namespace, or overlapping another token's grant (each named with both).
 */
function grantProblems(entries: readonly Entry[], reserved: readonly ReservedNamespace[], regions: ReadonlySet<string> | undefined): string[] {
  const problems: string[] = [];
  const seen: { g: Grant; e: Entry }[] = [];
  for (const e of entries) {
    const grants = e.identity.grants;
    if (grants === undefined) continue;
    if (e.identity.role !== 'ingest') {
      problems.push(`${e.where}: grants are for ingest tokens; a ${e.identity.role} token posts no signals: remove its grants`);
      continue;
    }
    for (const g of grants) {
      const unknown = regions === undefined ? [] : (g.regions ?? []).filter((r) => !regions.has(r));
      if (unknown.length > 0) problems.push(`${e.where}: the grant ${grantText(g)} names ${unknown.join(', ')}, not a region of this fleet (known: ${[...regions!].sort().join(', ')})`);
      for (const r of reserved) {
        if (g.source.startsWith(r.prefix) || r.prefix.startsWith(g.source)) problems.push(`${e.where}: the grant ${grantText(g)} covers ${r.prefix}, reserved for ${r.by}: grant a prefix outside it`);
      }
      for (const o of seen) {
        if (grantsOverlap(g, o.g)) problems.push(`${e.where}: the grant ${grantText(g)} of token "${e.identity.name}" overlaps the grant ${grantText(o.g)} of token "${o.e.identity.name}" (${o.e.where}): grants may not overlap, so that one principal speaks for each source`);
      }
      seen.push({ g, e });
    }
  }
  return problems;
}

function makeStore(entries: Entry[]): TokenStore {
  const frozen = entries.map((e) => ({ identity: Object.freeze({ ...e.identity, ...(e.identity.grants ? { grants: Object.freeze(e.identity.grants.map((g) => Object.freeze({ ...g }))) } : {}) }), hash: e.hash }));
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


/**
 * The namespaces no ingest grant may cover: `manual/` (the operator route writes
 * `manual/<token name>`) and the source prefix of every configured collector.
 */
export function reservedNamespaces(configured: readonly { name: string; sources: string }[]): ReservedNamespace[] {
  return [{ prefix: MANUAL_PREFIX, by: 'the operator route (manual/<token name>)' }, ...configured.map((c) => ({ prefix: c.sources, by: `collector ${c.name}` }))];
}
