/**
 * The subscription callback: a listener from the kit (collectors/kit/server.ts; HTTPS and
 * optional mutual TLS with `webhook.tls`), on the leader only, while the poller runs,
 * for VTN notifications. It authenticates the subscription's bearer token, reads the
 * notification in either spelling (3.0.1 operations GET/POST/PUT/DELETE, 3.1
 * CREATE/READ/UPDATE/DELETE) and, for a write on an event or a program, asks for a poll now. It
 * never trusts the body for facts: the poll of /events decides. It answers 200 to an accepted
 * notification, 401 without the right token, 400 to a body it cannot read, 404 off its path,
 * 405 to other methods, 413 past the body cap, 200 to GET /healthz; it never throws.
 */
import type http from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Openadr3Stats } from './client.js';
import { BodyTooLarge, readBody, startReceiver, type ReceiverTls } from '../kit/server.js';
import { notificationWantsPoll, readNotification, type Notification } from './parse.js';

/** Most bytes of a notification body (it carries the whole event). */
export const MAX_NOTIFICATION_BYTES = 4 * 1024 * 1024;

export interface WebhookConfig {
  listen: string;
  path: string;
  bearerToken: string;
  tls?: ReceiverTls;
}

/** GET/HEAD here answer 200 without the token, unless `path` is this. */
export const HEALTH_PATH = '/healthz';

export interface Webhook {
  /** Where it listens (the port is the real one when `listen` asked for port 0). */
  address: string;
  port: number;
  close(): Promise<void>;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Starts the listener; rejects if it cannot listen (address in use, not local). */
export async function startWebhook(cfg: WebhookConfig, log: Logger, onNotify: (n: Notification) => void, stats: Pick<Openadr3Stats, 'notifications' | 'notificationsRefused'>): Promise<Webhook> {
  const want = digest(`Bearer ${cfg.bearerToken}`);
  let lastRefusal = '';
  const refuse = (res: http.ServerResponse, status: number, why: string, extra: Record<string, string> = {}) => {
    stats.notificationsRefused++;
    if (why !== lastRefusal) {
      lastRefusal = why;
      log.warn({ status }, `collectors/openadr3: webhook: refused a request: ${why}`);
    }
    if (!res.headersSent) {
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close', ...extra });
      res.end(JSON.stringify({ title: why, status }));
    }
  };
  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    try {
      const path = (req.url ?? '').split('?')[0];
      if (path !== cfg.path) return refuse(res, 404, `path ${JSON.stringify(path?.slice(0, 80))} is not ${cfg.path}`);
      if (req.method !== 'POST' && req.method !== 'PUT') return refuse(res, 405, `method ${req.method} (POST or PUT only)`, { allow: 'POST, PUT' });
      const got = digest(String(req.headers.authorization ?? '').trim());
      if (!timingSafeEqual(got, want)) return refuse(res, 401, 'no or wrong bearer token', { 'www-authenticate': 'Bearer' });
      readBody(req, MAX_NOTIFICATION_BYTES).then(
        (raw) => {
          let body: unknown;
          try {
            body = JSON.parse(raw.toString('utf8'));
          } catch {
            return refuse(res, 400, 'the body is not valid JSON');
          }
          const n = readNotification(body);
          if (typeof n === 'string') return refuse(res, 400, `not a notification: ${n}`);
          stats.notifications++;
          if (lastRefusal !== '') {
            lastRefusal = '';
            log.info('collectors/openadr3: webhook: accepting notifications again');
          }
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{}');
          log.debug({ objectType: n.objectType, operation: n.operation, objectId: n.objectId }, 'collectors/openadr3: webhook: notification');
          if (notificationWantsPoll(n)) onNotify(n);
        },
        (e: unknown) => {
          // A body past the cap is refused; a client gone before the end gets no answer.
          if (!(e instanceof BodyTooLarge)) return;
          refuse(res, 413, `body larger than ${MAX_NOTIFICATION_BYTES} bytes`);
          req.destroy();
        },
      );
    } catch (e) {
      refuse(res, 500, `internal error: ${(e as Error).message}`);
    }
  };
  const server = await startReceiver({
    module: 'collectors/openadr3',
    what: 'webhook',
    listenKey: 'webhook.listen',
    listen: cfg.listen,
    example: '0.0.0.0:8443',
    tls: cfg.tls,
    log,
    healthPath: cfg.path === HEALTH_PATH ? undefined : HEALTH_PATH,
    headersTimeoutMs: 5_000,
    requestTimeoutMs: 10_000,
    maxHeaderSize: 16 * 1024,
    maxConnections: 64,
    handle,
  });
  return { address: server.address, port: server.port, close: () => server.close() };
}
