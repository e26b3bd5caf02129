/**
 * Free loopback ports for peers the tests start themselves (e.g. Unbound), free for
 * both UDP and TCP. Our own server is started on port 0 and reports its port instead.
 */
import dgram from 'node:dgram';
import net from 'node:net';

function bindUdp(host: string, port: number): Promise<dgram.Socket | null> {
  return new Promise((resolve) => {
    const s = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
    s.once('error', () => {
      s.close();
      resolve(null);
    });
    s.bind(port, host, () => resolve(s));
  });
}

function listenTcp(host: string, port: number): Promise<net.Server | null> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(null));
    srv.listen({ host, port, exclusive: true }, () => resolve(srv));
  });
}

/**
 * Returns a port that was free on `host` for UDP and TCP at the time of the call
 * (both sockets are closed again before returning). Tries at most 50 candidates.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const udp = await bindUdp(host, 0);
    if (!udp) continue;
    const port = udp.address().port;
    const tcp = await listenTcp(host, port);
    udp.close();
    if (tcp) {
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
      return port;
    }
  }
  throw new Error(`ports: no port free for both UDP and TCP on ${host} after 50 tries`);
}
