/**
 * One listen parser for the project (gslb/platform/listen.ts). This table pins what each of the
 * three parsers it replaced accepted and refused — `parseListen` of gslb/dns/server.ts (DNS and
 * the HTTP API), `parseListen` of collectors/prometheus-remote-write, `splitListen` of
 * collectors/openadr3/webhook.ts — with their messages, so that unifying them changes nothing
 * a config relies on. One row changed on purpose: the webhook's schema lets ports 65536–99999
 * through, which splitListen passed on to listen() (a RangeError, then "polling only"); the
 * one parser refuses them by name, with the same outcome.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseListen as dnsParse } from '../dns/server.js';
import { parseListen as rwParse } from '../../collectors/prometheus-remote-write/index.js';
import { parseReceiverListen } from '../../collectors/kit/server.js';

/** The openadr3 webhook's parse since the kit (before: splitListen, which never refused). */
const oadrParse = (s: string) => parseReceiverListen(s, 'collectors/openadr3', 'webhook.listen', '0.0.0.0:8443');
const oadrNot = (s: string) => `collectors/openadr3: webhook.listen: ${JSON.stringify(s)} is not host:port (e.g. 0.0.0.0:8443)`;

type Want = { host: string; port: number } | string;

/** The openadr3 webhook's `listen` pattern (its config schema): what never reaches its parser. */
const OADR_PATTERN = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$/;
/** `schema`: openadr3's config schema refuses the input before any parser sees it. */
const SCHEMA = 'schema';

const dnsNot = (s: string) => `dns: "${s}" is not host:port (e.g. 127.0.0.1:5353 or [::1]:5353)`;
const dnsNotIp = (h: string, s: string) => `dns: "${h}" in "${s}" is not an IP address`;
const rwNot = (s: string) => `collectors/prometheus-remote-write: listen: ${JSON.stringify(s)} is not host:port (e.g. 0.0.0.0:9091)`;

// input, dns, remote-write, openadr3 webhook
const CASES: Array<[string, Want, Want, Want]> = [
  ['127.0.0.1:53', { host: '127.0.0.1', port: 53 }, { host: '127.0.0.1', port: 53 }, { host: '127.0.0.1', port: 53 }],
  ['0.0.0.0:0', { host: '0.0.0.0', port: 0 }, { host: '0.0.0.0', port: 0 }, { host: '0.0.0.0', port: 0 }],
  ['127.0.0.1:00053', { host: '127.0.0.1', port: 53 }, { host: '127.0.0.1', port: 53 }, { host: '127.0.0.1', port: 53 }],
  ['1.2.3.4:65535', { host: '1.2.3.4', port: 65535 }, { host: '1.2.3.4', port: 65535 }, { host: '1.2.3.4', port: 65535 }],
  ['[::1]:5353', { host: '::1', port: 5353 }, { host: '::1', port: 5353 }, { host: '::1', port: 5353 }],
  ['[::]:0', { host: '::', port: 0 }, { host: '::', port: 0 }, { host: '::', port: 0 }],
  ['[2001:DB8::53]:53', { host: '2001:DB8::53', port: 53 }, { host: '2001:DB8::53', port: 53 }, { host: '2001:DB8::53', port: 53 }],
  ['[::ffff:127.0.0.1]:53', { host: '::ffff:127.0.0.1', port: 53 }, { host: '::ffff:127.0.0.1', port: 53 }, { host: '::ffff:127.0.0.1', port: 53 }],
  ['localhost:53', { host: '127.0.0.1', port: 53 }, { host: 'localhost', port: 53 }, { host: 'localhost', port: 53 }],
  ['example.com:9091', dnsNot('example.com:9091'), { host: 'example.com', port: 9091 }, { host: 'example.com', port: 9091 }],
  ['999.1.1.1:53', dnsNotIp('999.1.1.1', '999.1.1.1:53'), { host: '999.1.1.1', port: 53 }, { host: '999.1.1.1', port: 53 }],
  ['[1::2::3]:53', dnsNotIp('1::2::3', '[1::2::3]:53'), { host: '1::2::3', port: 53 }, { host: '1::2::3', port: 53 }],
  ['host_1:80', dnsNot('host_1:80'), { host: 'host_1', port: 80 }, SCHEMA],
  ['1.2.3.4:65536', dnsNot('1.2.3.4:65536'), rwNot('1.2.3.4:65536'), oadrNot('1.2.3.4:65536')],
  ['1.2.3.4:99999', dnsNot('1.2.3.4:99999'), rwNot('1.2.3.4:99999'), oadrNot('1.2.3.4:99999')],
  ['9091', dnsNot('9091'), rwNot('9091'), SCHEMA],
  [':9091', dnsNot(':9091'), rwNot(':9091'), SCHEMA],
  ['::1:9091', dnsNot('::1:9091'), rwNot('::1:9091'), SCHEMA],
  ['[zz]:53', dnsNot('[zz]:53'), rwNot('[zz]:53'), SCHEMA],
  ['[::1]', dnsNot('[::1]'), rwNot('[::1]'), SCHEMA],
  ['127.0.0.1:', dnsNot('127.0.0.1:'), rwNot('127.0.0.1:'), SCHEMA],
  ['127.0.0.1:123456', dnsNot('127.0.0.1:123456'), rwNot('127.0.0.1:123456'), SCHEMA],
  ['127.0.0.1:http', dnsNot('127.0.0.1:http'), rwNot('127.0.0.1:http'), SCHEMA],
  [' 127.0.0.1:53', dnsNot(' 127.0.0.1:53'), rwNot(' 127.0.0.1:53'), SCHEMA],
  ['127.0.0.1:53 ', dnsNot('127.0.0.1:53 '), rwNot('127.0.0.1:53 '), SCHEMA],
  ['a b:53', dnsNot('a b:53'), rwNot('a b:53'), SCHEMA],
  ['', dnsNot(''), rwNot(''), SCHEMA],
];

function check(what: string, parse: (s: string) => { host: string; port: number }, input: string, want: Want): void {
  if (typeof want === 'string') assert.throws(() => parse(input), (e: unknown) => (e as Error).message === want, `${what} ${JSON.stringify(input)}: throws ${want}`);
  else assert.deepEqual({ ...parse(input) }, want, `${what} ${JSON.stringify(input)}`);
}

test('listen: the forms each parser accepts and refuses, with its messages', () => {
  for (const [input, dns, rw, oadr] of CASES) {
    check('dns', dnsParse, input, dns);
    check('prometheus-remote-write', rwParse, input, rw);
    if (oadr === SCHEMA) assert.doesNotMatch(input, OADR_PATTERN, `openadr3 ${JSON.stringify(input)}: its config schema refuses it`);
    else {
      assert.match(input, OADR_PATTERN, `openadr3 ${JSON.stringify(input)}: its config schema lets it through`);
      check('openadr3', oadrParse, input, oadr);
    }
  }
});
