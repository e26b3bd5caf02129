#!/usr/bin/env node
// No-logic DNS responder: the ceiling of the Node platform for bench/dns-qps.sh.
//
// For every datagram it copies the query, sets QR (and AA), and appends one
// fixed A record (192.0.2.10, TTL 30, name compressed to the question) right
// after the question. It does no parsing beyond finding the end of the
// question and drops any OPT record the query carried (ARCOUNT = 0), so it does
// strictly less work than any real server: no name lookup, no ECS, no policy.
//
// usage: node bench/null-responder.mjs [--listen 127.0.0.1:15355]
// Prints one JSON line {"msg":"ready",...} on stdout once bound.
import dgram from 'node:dgram';

const args = process.argv.slice(2);
let listen = '127.0.0.1:15355';
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--listen' && args[i + 1]) listen = args[++i];
}
const sep = listen.lastIndexOf(':');
const host = listen.slice(0, sep).replace(/^\[|\]$/g, '');
const port = Number(listen.slice(sep + 1));
if (!(host === '::1' || host.startsWith('127.'))) {
  console.error(`null-responder: refusing non-loopback address ${host}`);
  process.exit(2);
}

// name pointer to offset 12, TYPE A, CLASS IN, TTL 30, RDLENGTH 4, 192.0.2.10
const ANSWER = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 192, 0, 2, 10]);

const sock = dgram.createSocket({ type: host.includes(':') ? 'udp6' : 'udp4' });
sock.on('message', (q, rinfo) => {
  if (q.length < 17) return;
  let o = 12;
  while (o < q.length && q[o] !== 0) o += q[o] + 1; // skip question labels
  o += 5; // root label + QTYPE + QCLASS
  if (o > q.length) return;
  const r = Buffer.allocUnsafe(o + ANSWER.length);
  q.copy(r, 0, 0, o);
  r[2] = 0x84 | (q[2] & 0x01); // QR, AA, keep RD
  r[3] = 0;
  r[6] = 0; r[7] = 1; // ANCOUNT 1
  r[8] = 0; r[9] = 0; r[10] = 0; r[11] = 0; // NSCOUNT, ARCOUNT 0
  ANSWER.copy(r, o);
  sock.send(r, rinfo.port, rinfo.address);
});
sock.on('error', (err) => {
  console.error(`null-responder: ${err.message}`);
  process.exit(1);
});
sock.bind(port, host, () => {
  const a = sock.address();
  console.log(JSON.stringify({ msg: 'ready', address: a.address, port: a.port, pid: process.pid }));
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { sock.close(); process.exit(0); });
