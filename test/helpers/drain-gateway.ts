/**
 * A loopback stand-in for a region's API gateway receiving drain hook calls
 * (docs/drain-hooks.md): a real node:http server on 127.0.0.1 (port 0) that records every
 * request and answers as the test scripts it — 2xx, another status, never (hang) or a reset
 * connection. It also models the gateway side of the contract: per region it applies a call
 * only when its id differs from the last id applied (the idempotency rule), and keeps what it
 * would enforce (share, shed, refuse new streams).
 */
import http from 'node:http';
import type net from 'node:net';

/** One request as received. `body` is the parsed JSON, or undefined when it did not parse. */
export interface GatewayCall {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: Record<string, unknown> | undefined;
}

/** How the gateway answers a request: a status code, `hang` (never answer) or `reset` (destroy the connection). */
export type Reaction = number | 'hang' | 'reset';

/** What the gateway enforces for a region after the calls it applied. */
export interface Enforced {
  id: string;
  share: number;
  shed: number;
  refuseNewStreams: boolean;
  /** Calls applied for the region (duplicates of the last id are not counted). */
  applied: number;
}

export interface DrainGateway {
  url: string;
  /** Every request received, in order. */
  calls: GatewayCall[];
  /** Per region, what the gateway enforces now. */
  enforced: Map<string, Enforced>;
  /** Chooses the reaction to the n-th request (0-based); default: 204 to every one. */
  react: (call: GatewayCall, n: number) => Reaction;
  close(): Promise<void>;
}

/** Starts a gateway on 127.0.0.1 (a free port); `path` is the hook path in `url`. */
export async function startDrainGateway(path = '/gridsteer/drain'): Promise<DrainGateway> {
  const sockets = new Set<net.Socket>();
  const gw: DrainGateway = {
    url: '',
    calls: [],
    enforced: new Map(),
    react: () => 204,
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= 65536) chunks.push(c);
    });
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown> | undefined;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        body = undefined;
      }
      const call: GatewayCall = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, body };
      const n = gw.calls.length;
      gw.calls.push(call);
      const reaction = gw.react(call, n);
      if (reaction === 'hang') return;
      if (reaction === 'reset') {
        req.socket.destroy();
        return;
      }
      if (reaction >= 200 && reaction < 300 && body && typeof body.region === 'string' && typeof body.id === 'string') {
        const prev = gw.enforced.get(body.region);
        if (prev?.id !== body.id) {
          gw.enforced.set(body.region, {
            id: body.id,
            share: Number(body.share),
            shed: Number(body.shed),
            refuseNewStreams: body.refuseNewStreams === true,
            applied: (prev?.applied ?? 0) + 1,
          });
        }
      }
      res.statusCode = reaction;
      res.setHeader('content-type', 'text/plain');
      res.end(reaction >= 200 && reaction < 300 ? '' : `gateway says ${reaction}`);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
  gw.url = `http://127.0.0.1:${port}${path}`;
  gw.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  };
  return gw;
}

/** A port on 127.0.0.1 where nothing listens (bound, then closed). */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
  await new Promise((r) => server.close(r));
  return port;
}
