/** The hot-path counters' labels: case table of (transport, qtype, rcode) → labels counted. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DnsStats, TRANSPORT_TCP, TRANSPORT_UDP } from './stats.js';

test('every (transport, qtype, rcode) lands under the right labels', () => {
  const cases: [transport: number, qtype: number, rcode: number, labels: string][] = [
    [TRANSPORT_UDP, 1, 0, 'udp A NOERROR'],
    [TRANSPORT_TCP, 28, 3, 'tcp AAAA NXDOMAIN'],
    [TRANSPORT_UDP, 257, 0, 'udp CAA NOERROR'],
    [TRANSPORT_UDP, 252, 5, 'udp AXFR REFUSED'],
    [TRANSPORT_UDP, 255, 0, 'udp ANY NOERROR'],
    [TRANSPORT_UDP, 65535, 0, 'udp other NOERROR'],
    [TRANSPORT_UDP, 99, 4, 'udp other NOTIMP'],
    [TRANSPORT_UDP, -1, 1, 'udp none FORMERR'],
    [TRANSPORT_TCP, 1, 16, 'tcp A BADVERS'],
    // An rcode without its own label counts as SERVFAIL.
    [TRANSPORT_UDP, 1, 9, 'udp A SERVFAIL'],
  ];
  for (const [transport, qtype, rcode, labels] of cases) {
    const s = new DnsStats();
    s.count(transport, qtype, rcode);
    s.count(transport, qtype, rcode);
    const got = s.snapshot().queries.map((c) => `${c.transport} ${c.qtype} ${c.rcode} ×${c.value}`);
    assert.deepEqual(got, [`${labels} ×2`], `count(${transport}, ${qtype}, ${rcode})`);
  }
});
