/**
 * A loopback VTN for the tests, built from the OpenADR 3.0.1 and 3.1.1 definitions (see
 * fixtures/README.md): POST /auth/token (client credentials, form body or HTTP Basic),
 * GET /auth/server (3.1 only), GET /programs and GET /events with skip/limit, programID and
 * the version's target filter, bearer checks. `fault` lets a test make any answer hostile.
 * Listens on 127.0.0.1 port 0; close() closes every connection. Test support only.
 */
import http from 'node:http';
import type net from 'node:net';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// dist/collectors/openadr3 → the source fixtures three levels up.
export const FIXTURES = fileURLToPath(new URL('../../../collectors/openadr3/fixtures/', import.meta.url));
export const fixture = <T = unknown>(name: string): T => JSON.parse(readFileSync(`${FIXTURES}${name}`, 'utf8')) as T;

export interface VtnRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  authorization?: string;
  body: string;
}

/** A hostile answer: return true when it answered (or hung up). */
export type Fault = (route: string, req: http.IncomingMessage, res: http.ServerResponse) => boolean;

export class TestVtn {
  programs: unknown[] = [];
  events: unknown[] = [];
  readonly requests: VtnRequest[] = [];
  readonly tokens = new Set<string>();
  tokenCount = 0;
  expiresIn: number | undefined = 3600;
  fault: Fault | null = null;
  private server: http.Server | null = null;
  private sockets = new Set<net.Socket>();
  url = '';
  origin = '';

  constructor(
    readonly version: '3.0.1' | '3.1',
    readonly clientId = 'ven-client-1',
    readonly clientSecret = 'ven-secret-1',
  ) {}

  async start(): Promise<this> {
    const s = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    s.on('connection', (sock) => {
      this.sockets.add(sock);
      sock.on('close', () => this.sockets.delete(sock));
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    this.server = s;
    this.origin = `http://127.0.0.1:${(s.address() as net.AddressInfo).port}`;
    this.url = `${this.origin}/openadr3/${this.version}`;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server?.close(r));
  }

  /** Every issued token stops working (the VTN restarted, or rotated its keys). */
  revokeTokens(): void {
    this.tokens.clear();
  }

  count(path: string): number {
    return this.requests.filter((r) => r.path === path).length;
  }

  private json(res: http.ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  private problem(res: http.ServerResponse, status: number, title: string): void {
    this.json(res, status, { type: 'about:blank', title, status, detail: title });
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
    const u = new URL(req.url ?? '/', this.origin);
    const prefix = `/openadr3/${this.version}`;
    const route = u.pathname.startsWith(prefix) ? u.pathname.slice(prefix.length) : u.pathname;
    this.requests.push({ method: req.method ?? '', path: route, query: u.searchParams, ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}), body });
    if (this.fault?.(route, req, res)) return;
    if (route === '/auth/token' && req.method === 'POST') return this.token(req, res, body);
    if (route === '/auth/server' && req.method === 'GET') {
      if (this.version === '3.0.1') return this.problem(res, 404, 'Not Found');
      return this.json(res, 200, { tokenURL: `${this.url}/auth/token` });
    }
    if ((route === '/programs' || route === '/events') && req.method === 'GET') {
      const auth = req.headers.authorization ?? '';
      if (!auth.startsWith('Bearer ') || !this.tokens.has(auth.slice(7))) return this.problem(res, 401, 'Unauthorized');
      const skip = Number(u.searchParams.get('skip') ?? 0);
      const limit = Number(u.searchParams.get('limit') ?? 50);
      if (!Number.isInteger(skip) || skip < 0 || !Number.isInteger(limit) || limit < 0 || limit > 50) return this.problem(res, 400, 'Bad Request: skip/limit');
      const all = route === '/programs' ? this.programs : this.events.filter((e) => this.selected(e as Record<string, unknown>, u.searchParams));
      return this.json(res, 200, all.slice(skip, skip + limit));
    }
    this.problem(res, 404, 'Not Found');
  }

  private token(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
    const form = new URLSearchParams(body);
    if (!/^application\/x-www-form-urlencoded/.test(req.headers['content-type'] ?? '')) return this.json(res, 400, { error: 'invalid_request' });
    if (form.get('grant_type') !== 'client_credentials') return this.json(res, 400, { error: 'unsupported_grant_type' });
    let id = form.get('client_id');
    let secret = form.get('client_secret');
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
    if (basic) {
      const [a, b] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
      id = decodeURIComponent((a ?? '').replace(/\+/g, ' '));
      secret = decodeURIComponent((b ?? '').replace(/\+/g, ' '));
    }
    if (id !== this.clientId || secret !== this.clientSecret) return this.json(res, 401, { error: 'invalid_client', error_description: 'unknown client or wrong secret' });
    const tok = `tok-${++this.tokenCount}`;
    this.tokens.add(tok);
    this.json(res, 200, { access_token: tok, token_type: 'Bearer', ...(this.expiresIn !== undefined ? { expires_in: this.expiresIn } : {}), scope: form.get('scope') ?? 'read_all' });
  }

  /** The definitions' filters: programID; 3.0.1 targetType + targetValues; 3.1 targets. An event without targets passes. */
  private selected(e: Record<string, unknown>, q: URLSearchParams): boolean {
    const pid = q.get('programID');
    if (pid !== null && e.programID !== pid) return false;
    const targets = Array.isArray(e.targets) ? (e.targets as unknown[]) : [];
    if (targets.length === 0) return true;
    if (this.version === '3.0.1') {
      const type = q.get('targetType');
      const values = q.getAll('targetValues');
      if (type === null) return true;
      return targets.some((t) => {
        const vm = t as { type?: unknown; values?: unknown };
        return vm.type === type && Array.isArray(vm.values) && vm.values.some((v) => values.includes(String(v)));
      });
    }
    const want = q.getAll('targets');
    if (want.length === 0) return true;
    return targets.some((t) => typeof t === 'string' && want.includes(t));
  }
}

/** POSTs a notification to a callback (as a VTN does for a subscription); resolves with the status. */
export function notify(callbackUrl: string, bearer: string | null, body: string, method = 'POST'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      callbackUrl,
      { method, headers: { 'content-type': 'application/json', ...(bearer !== null ? { authorization: `Bearer ${bearer}` } : {}) }, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
