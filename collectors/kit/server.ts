/**
 * The one listener factory of the collectors' receivers (prometheus-remote-write's receiver,
 * the openadr3 webhook). Each receiver keeps its own port and its own credentials — remote-write
 * senders and OpenADR VTNs cannot present GridSteer API tokens — so it is not mounted on the
 * API; what they share is here: listen parsing (gslb/platform/listen.ts), plain HTTP or HTTPS with
 * optional mutual TLS, server timeouts and connection caps, a bounded body reader, a health
 * path, and a debug line per request.
 *
 * Contract:
 * - startReceiver resolves once listening, or rejects with an Error naming `listen` (a form
 *   that does not parse, a TLS file that cannot be read, an address in use). It never throws
 *   afterwards: a handler that throws or rejects is answered 500 and logged; a request the HTTP
 *   parser refuses is answered 400 and its connection closed; the server keeps serving.
 * - `healthPath` (when set) answers GET and HEAD with 200 `ok` before the handler and without
 *   credentials: it says only that the listener is up.
 * - close() stops accepting, ends open connections, and resolves when the server is closed;
 *   calling it again returns the same promise.
 */
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { BodyTooLarge, collect } from './body.js';
import { formatListen, parseListenWith, type ListenAddress } from '../../gslb/platform/listen.js';

/** A receiver's optional `tls` config section (the same keys as the API's `http.tls`). */
export const ReceiverTlsSchema = Type.Object(
  {
    cert: Type.String({ minLength: 1, description: 'PEM file of the server certificate, with any intermediates after it' }),
    key: Type.String({ minLength: 1, description: "PEM file of the certificate's private key (unencrypted)" }),
    clientCa: Type.Optional(Type.String({ minLength: 1, description: 'mutual TLS: PEM file of the CA certificate(s) a client certificate must be signed by; a client without one is refused at the handshake' })),
  },
  { additionalProperties: false, description: 'serve HTTPS (optionally with mutual TLS) instead of plain HTTP; absent = plain HTTP' },
);
export type ReceiverTls = Static<typeof ReceiverTlsSchema>;

export interface ReceiverOptions {
  /** `collectors/<name>`: what log lines and messages start with. */
  module: string;
  /** What the listener is within the collector, for messages (`webhook`); omit for the collector itself. */
  what?: string;
  /** The config key of `listen`, for messages: `listen`, `webhook.listen`. */
  listenKey: string;
  /** `host:port` (a host name, an IPv4 address or `[IPv6]`; port 0: any free port). */
  listen: string;
  /** A form shown when `listen` does not parse, e.g. `0.0.0.0:9091`. */
  example: string;
  tls?: ReceiverTls;
  log: Logger;
  /** GET/HEAD here answer 200 `ok` (no credentials asked). */
  healthPath?: string;
  /** Server timeouts, ms: all headers, the whole request. */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  maxHeaderSize?: number;
  maxConnections?: number;
  /** Answers one request; must end the response. A throw or rejection is answered 500. */
  handle(req: http.IncomingMessage, res: http.ServerResponse): void | Promise<void>;
}

export interface Receiver {
  /** Where it listens: the real port when `listen` asked for 0. */
  address: string;
  port: number;
  /** `host:port`, IPv6 in brackets. */
  shown: string;
  /** `http` or `https`. */
  scheme: 'http' | 'https';
  close(): Promise<void>;
}

/** Parses a receiver's `listen`: a host name, an IPv4 address or `[IPv6]`, then the port. */
export function parseReceiverListen(listen: string, module: string, listenKey: string, example: string): ListenAddress {
  return parseListenWith(listen, { hosts: 'name', label: `${module}: ${listenKey}: `, example });
}

function readPem(module: string, key: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new Error(`${module}: ${key} ${file}: ${(e as Error).message}`);
  }
}

/** Starts the listener (see the module contract). */
export async function startReceiver(o: ReceiverOptions): Promise<Receiver> {
  const { host, port } = parseReceiverListen(o.listen, o.module, o.listenKey, o.example);
  const tlsKey = `${o.listenKey.replace(/listen$/, '')}tls`;
  const serverOptions: http.ServerOptions = { requestTimeout: o.requestTimeoutMs, headersTimeout: o.headersTimeoutMs, ...(o.maxHeaderSize ? { maxHeaderSize: o.maxHeaderSize } : {}) };
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const t0 = performance.now();
    res.on('finish', () =>
      o.log.debug({ method: req.method, path: (req.url ?? '').split('?')[0]?.slice(0, 200), status: res.statusCode, ms: Math.round(performance.now() - t0), remote: req.socket.remoteAddress }, `${o.module}: request`),
    );
    const path = (req.url ?? '').split('?')[0];
    if (o.healthPath !== undefined && path === o.healthPath && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('ok\n');
      return;
    }
    const failed = (e: unknown) => {
      o.log.error({ err: (e as Error)?.message ?? String(e) }, `${o.module}: internal error`);
      answer(res, 500, 'internal error\n', { connection: 'close' });
    };
    try {
      const p = o.handle(req, res);
      if (p) p.catch(failed);
    } catch (e) {
      failed(e);
    }
  };
  let server: http.Server;
  if (o.tls) {
    const cert = readPem(o.module, `${tlsKey}.cert`, o.tls.cert);
    const key = readPem(o.module, `${tlsKey}.key`, o.tls.key);
    const ca = o.tls.clientCa !== undefined ? readPem(o.module, `${tlsKey}.clientCa`, o.tls.clientCa) : undefined;
    try {
      server = https.createServer({ ...serverOptions, cert, key, ...(ca ? { ca, requestCert: true, rejectUnauthorized: true } : {}) }, onRequest);
    } catch (e) {
      throw new Error(`${o.module}: ${tlsKey}: ${(e as Error).message}`);
    }
    server.on('tlsClientError', (e: Error, socket: net.Socket) => {
      o.log.debug({ err: e.message, remote: socket.remoteAddress }, `${o.module}: TLS handshake refused`);
      socket.destroy();
    });
  } else server = http.createServer(serverOptions, onRequest);
  if (o.maxConnections) server.maxConnections = o.maxConnections;
  server.on('clientError', (e: NodeJS.ErrnoException, socket: net.Socket) => {
    // A request the parser refuses (bad framing, headers too large, a timeout): a plain 4xx, then close.
    // As node does by default: only when no response is under way on this socket (else a 4xx
    // after a `connection: close` answer would be garbage to the client).
    const current = (socket as net.Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && e.code !== 'ECONNRESET' && !current?.headersSent) {
      const status = e.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : e.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request';
      socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    }
    socket.destroy();
  });
  const what = o.what ? `${o.what}: ` : '';
  await new Promise<void>((resolve, reject) => {
    const onError = (e: Error) => reject(new Error(`${o.module}: ${what}cannot listen on ${o.listen}: ${e.message}`));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', (e) => o.log.error({ err: e.message }, `${o.module}: ${what}server error`));
  const a = server.address() as net.AddressInfo;
  let closed: Promise<void> | null = null;
  return {
    address: a.address,
    port: a.port,
    shown: formatListen({ host: a.address, port: a.port }),
    scheme: o.tls ? 'https' : 'http',
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

export { BodyTooLarge };

/**
 * Reads a request body of at most `max` bytes: a declared Content-Length above it, or more
 * bytes read, reject with BodyTooLarge (nothing past the cap is kept); a client that closes
 * before the end rejects with an Error. Whatever follows a refusal is drained by the caller's
 * `req.resume()` or closed with the connection.
 */
export function readBody(req: http.IncomingMessage, max: number): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? NaN) > max) return Promise.reject(new BodyTooLarge(max));
  return collect(req, max, { message: req, closedWhy: 'the client closed the connection before the body ended' });
}

/** Answers once: nothing when the response was already sent or its socket is gone. */
export function answer(res: http.ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, text ? { 'content-type': 'text/plain; charset=utf-8', ...headers } : headers).end(text);
}
