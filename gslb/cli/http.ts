/**
 * What the commands that talk to a running server share: where they write (injectable for
 * tests), the `--server` / `--token` / `--json` / `--help` options, one JSON request with a
 * bound, and the wording of the failures every such command reports alike (server
 * unreachable, an answer that is not JSON).
 */
import { readFileSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import type { ParseArgsConfig } from 'node:util';

/** Where the CLI writes, what it reads from the environment and how it asks; injectable for tests. */
export interface CliIo {
  out(s: string): void;
  err(s: string): void;
  env: NodeJS.ProcessEnv;
  fetch: typeof fetch;
  /** The clock for relative times (default: gslb/platform/clock.ts, Date.now unless GRIDSTEER_TEST_CLOCK is set). */
  now?: () => number;
  /** The terminal's width when stdout is one (long lines are cut), else undefined. */
  columns?: () => number | undefined;
}

export const defaultIo: CliIo = {
  out: (s) => void process.stdout.write(s),
  err: (s) => void process.stderr.write(s),
  env: process.env,
  fetch: (...a) => fetch(...a),
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
  (https with a private CA or mutual TLS: $GRIDSTEER_CA, $GRIDSTEER_CERT, $GRIDSTEER_KEY; docs/api.md)
`;
}

/** A server to ask: its base URL (no trailing slash) and the bearer token, if any. */
export interface Connection {
  server: string;
  token: string | undefined;
  /** How to ask it when TLS files are set (GRIDSTEER_CA, GRIDSTEER_CERT, GRIDSTEER_KEY); absent = io.fetch. */
  fetch?: typeof fetch;
}

/** The PEM files a TLS client reads from the environment: the CA to trust, the client certificate and its key. */
const TLS_ENV = { ca: 'GRIDSTEER_CA', cert: 'GRIDSTEER_CERT', key: 'GRIDSTEER_KEY' } as const;

/**
 * A fetch over node:https with its own CA and client certificate (the global fetch takes
 * neither). Enough for callApi: a URL, a method, string headers and body, a signal.
 */
export function tlsFetch(tls: { ca?: Buffer; cert?: Buffer; key?: Buffer }): typeof fetch {
  const agent = new Agent({ ...tls, keepAlive: false });
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const signal = init?.signal ?? undefined;
      const req = httpsRequest(new URL(input instanceof Request ? input.url : input), { method: init?.method ?? 'GET', headers: init?.headers as Record<string, string>, agent, signal }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 502;
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
          resolve(new Response([101, 204, 205, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers }));
        });
      });
      // Like fetch: a timeout rejects with the signal's reason, any other failure with a TypeError whose cause is the error.
      req.on('error', (e) => reject(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: e })));
      if (typeof init?.body === 'string') req.write(init.body);
      req.end();
    });
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
  const conn: Connection = { server, token: token === '' ? undefined : token };
  const tls: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
  for (const [k, name] of Object.entries(TLS_ENV) as [keyof typeof TLS_ENV, string][]) {
    const file = io.env[name];
    if (file === undefined || file === '') continue;
    try {
      tls[k] = readFileSync(file);
    } catch (e) {
      return `$${name} is ${file}, which cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): check the path`;
    }
  }
  if (Object.keys(tls).length === 0) return conn;
  if ((tls.cert === undefined) !== (tls.key === undefined)) return `a client certificate needs both $${TLS_ENV.cert} and $${TLS_ENV.key} (PEM files); set the one missing`;
  if (!server.startsWith('https:')) {
    const set = Object.values(TLS_ENV).filter((n) => io.env[n]).map((n) => `$${n}`).join(', ');
    return `${set} set, but the server ${server} is not https://: use --server https://… (or unset them)`;
  }
  return { ...conn, fetch: tlsFetch(tls) };
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
    res = await (conn.fetch ?? io.fetch)(url, init);
    text = await res.text();
  } catch (e) {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    const why = err.name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : (err.cause?.code ?? err.cause?.message ?? err.message);
    // Certificate and handshake failures: the server is there, the TLS settings are not right.
    const tls = conn.server.startsWith('https:') && /CERT|SSL|TLS|ECONNRESET|socket hang up/i.test(`${why} ${err.cause?.message ?? ''}`);
    // undici refuses the Fetch standard's "bad ports" (1, 6000, 6665-6669 …) before connecting.
    const badPort = why === 'bad port';
    const hint = badPort
      ? `port ${url.port} is one that fetch will not use (the Fetch standard's blocked ports): serve the API on another port`
      : tls
      ? 'the TLS handshake failed: check $GRIDSTEER_CA (the CA of the server certificate) and, for mutual TLS, $GRIDSTEER_CERT and $GRIDSTEER_KEY'
      : 'is the server running? (--server or $GRIDSTEER_SERVER)';
    io.err(`gridsteer: cannot reach the GridSteer API at ${conn.server} (${why}); ${hint}\n`);
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
