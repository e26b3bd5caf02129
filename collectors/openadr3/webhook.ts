/**
 * The subscription callback: a node:http listener (on the leader only, while the poller runs)
 * for VTN notifications. It authenticates the subscription's bearer token, reads the
 * notification in either spelling (3.0.1 operations GET/POST/PUT/DELETE, 3.1
 * CREATE/READ/UPDATE/DELETE) and, for a write on an event or a program, asks for a poll now. It
 * never trusts the body for facts: the poll of /events decides. It answers 200 to an accepted
 * notification, 401 without the right token, 400 to a body it cannot read, 404 off its path,
 * 405 to other methods, 413 past the body cap; it never throws.
 */
import http from 'node:http';
import type net from 'node:net';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import { openadr3Stats } from './client.js';
import { notificationWantsPoll, readNotification, type Notification } from './parse.js';

/** Most bytes of a notification body (it carries the whole event). */
export const MAX_NOTIFICATION_BYTES = 4 * 1024 * 1024;

export interface WebhookConfig {
  listen: string;
  path: string;
  bearerToken: string;
}

export interface Webhook {
  /** Where it listens (the port is the real one when `listen` asked for port 0). */
  address: string;
  port: number;
  close(): Promise<void>;
}

/** Splits `host:port` (`[v6]:port` for IPv6). */
export function splitListen(listen: string): { host: string; port: number } {
  const i = listen.lastIndexOf(':');
  const host = listen.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(listen.slice(i + 1)) };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Starts the listener; rejects if it cannot listen (address in use, not local). */
export async function startWebhook(cfg: WebhookConfig, log: Logger, onNotify: (n: Notification) => void): Promise<Webhook> {
  const want = digest(`Bearer ${cfg.bearerToken}`);
  let lastRefusal = '';
  const refuse = (res: http.ServerResponse, status: number, why: string, extra: Record<string, string> = {}) => {
    openadr3Stats.notificationsRefused++;
    if (why !== lastRefusal) {
      lastRefusal = why;
      log.warn({ status }, `collectors/openadr3: webhook: refused a request: ${why}`);
    }
    if (!res.headersSent) {
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close', ...extra });
      res.end(JSON.stringify({ title: why, status }));
    }
  };
  const server = http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000, maxHeaderSize: 16 * 1024 }, (req, res) => {
    try {
      const path = (req.url ?? '').split('?')[0];
      if (path !== cfg.path) return refuse(res, 404, `path ${JSON.stringify(path?.slice(0, 80))} is not ${cfg.path}`);
      if (req.method !== 'POST' && req.method !== 'PUT') return refuse(res, 405, `method ${req.method} (POST or PUT only)`, { allow: 'POST, PUT' });
      const got = digest(String(req.headers.authorization ?? '').trim());
      if (!timingSafeEqual(got, want)) return refuse(res, 401, 'no or wrong bearer token', { 'www-authenticate': 'Bearer' });
      const declared = Number(req.headers['content-length'] ?? 0);
      if (declared > MAX_NOTIFICATION_BYTES) {
        refuse(res, 413, `body larger than ${MAX_NOTIFICATION_BYTES} bytes`);
        req.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      let over = false;
      req.on('data', (c: Buffer) => {
        if (over) return;
        size += c.length;
        if (size > MAX_NOTIFICATION_BYTES) {
          over = true;
          refuse(res, 413, `body larger than ${MAX_NOTIFICATION_BYTES} bytes`);
          req.destroy();
          return;
        }
        chunks.push(c);
      });
      req.on('error', () => undefined);
      req.on('end', () => {
        if (over) return;
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return refuse(res, 400, 'the body is not valid JSON');
        }
        const n = readNotification(body);
        if (typeof n === 'string') return refuse(res, 400, `not a notification: ${n}`);
        openadr3Stats.notifications++;
        if (lastRefusal !== '') {
          lastRefusal = '';
          log.info('collectors/openadr3: webhook: accepting notifications again');
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
        log.debug({ objectType: n.objectType, operation: n.operation, objectId: n.objectId }, 'collectors/openadr3: webhook: notification');
        if (notificationWantsPoll(n)) onNotify(n);
      });
    } catch (e) {
      refuse(res, 500, `internal error: ${(e as Error).message}`);
    }
  });
  server.maxConnections = 64;
  server.on('clientError', (_e, socket: net.Socket) => socket.destroy());
  const { host, port } = splitListen(cfg.listen);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (e) => log.warn({ err: e.message }, `collectors/openadr3: webhook: ${e.message}`));
  const addr = server.address() as net.AddressInfo;
  return {
    address: addr.address,
    port: addr.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
