/**
 * What the commands that talk to a running server share: where they write (injectable for
 * tests), the `--server` / `--token` / `--json` / `--help` options, one JSON request with a
 * bound, and the wording of the failures every such command reports alike (server
 * unreachable, an answer that is not JSON).
 */
import type { ParseArgsConfig } from 'node:util';

/** Where the CLI writes, what it reads from the environment and how it asks; injectable for tests. */
export interface CliIo {
  out(s: string): void;
  err(s: string): void;
  env: NodeJS.ProcessEnv;
  fetch: typeof fetch;
  /** The clock for relative times (default Date.now). */
  now?: () => number;
  /** The terminal's width when stdout is one (long lines are cut), else undefined. */
  columns?: () => number | undefined;
}

export const defaultIo: CliIo = {
  out: (s) => void process.stdout.write(s),
  err: (s) => void process.stderr.write(s),
  env: process.env,
  fetch: (...a) => fetch(...a),
  now: () => Date.now(),
  columns: () => (process.stdout.isTTY ? process.stdout.columns : undefined),
};

export const DEFAULT_SERVER = 'http://127.0.0.1:8053';

/** How long one request may take before the command gives up (ms). */
export const REQUEST_TIMEOUT_MS = 10_000;

/** The options of every command that asks a server. */
export const CONNECTION_OPTIONS = {
  server: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

/** The usage lines for CONNECTION_OPTIONS, `role` being what the command needs. */
export function connectionUsage(role: 'viewer' | 'operator'): string {
  return `  --server URL       the server's HTTP API (default: $GRIDSTEER_SERVER or ${DEFAULT_SERVER})
  --token T          API token with role ${role} (default: $GRIDSTEER_TOKEN)
  --json             print the server's JSON instead of the text
`;
}

/** A server to ask: its base URL (no trailing slash) and the bearer token, if any. */
export interface Connection {
  server: string;
  token: string | undefined;
}

/** `--server` / `--token` with their environment defaults; a string is the usage error. */
export function connection(values: { server?: string | undefined; token?: string | undefined }, io: CliIo): Connection | string {
  const server = (values.server ?? io.env.GRIDSTEER_SERVER ?? DEFAULT_SERVER).replace(/\/+$/, '');
  try {
    const u = new URL(server);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http');
  } catch {
    return `--server "${server}" is not a URL like ${DEFAULT_SERVER}`;
  }
  const token = values.token ?? io.env.GRIDSTEER_TOKEN;
  return { server, token: token === '' ? undefined : token };
}

/** The body of an API error (docs/errors.md). */
export interface ApiErrorBody {
  code?: string;
  message?: string;
  field?: string;
}

/**
 * What a request came to. `failed`: the server could not be reached or did not answer JSON;
 * the message has been written already. `refused`: it answered 4xx/5xx with its error body.
 */
export type ApiOutcome =
  | { kind: 'ok'; status: number; body: unknown }
  | { kind: 'refused'; status: number; error: ApiErrorBody | undefined; text: string }
  | { kind: 'failed' };

export interface ApiRequest {
  method?: 'GET' | 'POST' | 'DELETE';
  /** Path below the server, e.g. `/v1/status`. */
  path: string;
  query?: Record<string, string | undefined>;
  /** Sent as JSON when present. */
  body?: unknown;
}

/** One request with a bound of REQUEST_TIMEOUT_MS; never throws. */
export async function callApi(io: CliIo, conn: Connection, req: ApiRequest): Promise<ApiOutcome> {
  const url = new URL(`${conn.server}${req.path}`);
  for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (conn.token) headers.authorization = `Bearer ${conn.token}`;
  const init: RequestInit = { method: req.method ?? 'GET', headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) };
  if (req.body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(req.body);
  }
  let res: Response;
  let text: string;
  try {
    res = await io.fetch(url, init);
    text = await res.text();
  } catch (e) {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    const why = err.name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : (err.cause?.code ?? err.cause?.message ?? err.message);
    io.err(`gridsteer: cannot reach the GridSteer API at ${conn.server} (${why}); is the server running? (--server or $GRIDSTEER_SERVER)\n`);
    return { kind: 'failed' };
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    io.err(`gridsteer: ${conn.server} answered HTTP ${res.status} with something that is not JSON; is --server the GridSteer HTTP API?\n`);
    return { kind: 'failed' };
  }
  if (!res.ok) {
    const error = body !== null && typeof body === 'object' ? (body as { error?: ApiErrorBody }).error : undefined;
    return { kind: 'refused', status: res.status, error, text };
  }
  return { kind: 'ok', status: res.status, body };
}
