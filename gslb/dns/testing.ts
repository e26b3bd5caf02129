/**
 * Shared fixtures for the DNS unit tests (not a test file itself): a small zone that has
 * one of every kind of node, a responder over it, and a query builder.
 */
import { Responder } from './respond.js';
import { compileZones, type ZoneSnapshot } from './zone.js';
import { encodeMessage, type Edns, type Message } from './message.js';
import { FLAG } from './constants.js';
import { initialPlan } from '../policy/decide.js';
import { defaultTable } from '../geo/table.js';

export const SNAP: ZoneSnapshot = {
  zones: [
    {
      name: 'gslb.example.com',
      ttl: 3600,
      soa: { rname: 'hostmaster.example.com.', serial: 1, refresh: 3600, retry: 600, expire: 1209600, minimum: 60, ttl: 300 },
      nameservers: [
        { name: 'ns1', addresses: ['192.0.2.53', '2001:db8::53'] },
        { name: 'ns.example.net.', addresses: [] },
      ],
      records: [
        { name: 'www', type: 'CNAME', data: 'api' },
        { name: 'alias', type: 'CNAME', data: 'www' },
        { name: 'dangling', type: 'CNAME', data: 'missing' },
        { name: 'outside', type: 'CNAME', data: 'api.example.org.' },
        { name: '@', type: 'TXT', data: 'v=spf1 -all' },
        { name: 'big', type: 'TXT', data: Array.from({ length: 8 }, (_, i) => `${i}`.repeat(200)) },
        { name: 'deep.a.b', type: 'A', data: '192.0.2.99' },
        { name: '@', type: 'MX', data: '10 mail' },
        { name: 'mail', type: 'A', data: '192.0.2.25' },
        { name: 'sub', type: 'NS', data: ['ns.sub', 'ns.example.net.'] },
        { name: 'ns.sub', type: 'A', data: '192.0.2.77' },
        { name: '_https._tcp', type: 'SRV', data: '10 5 443 api' },
        { name: '@', type: 'CAA', data: '0 issue "ca.example.net"' },
      ],
    },
  ],
  names: [
    { name: 'api.gslb.example.com', ttl: 30 },
    { name: 'v4only.gslb.example.com', ttl: 20, regions: ['b'] },
  ],
  regions: [
    { id: 'a', endpoints: [{ address: '192.0.2.10' }, { address: '2001:db8:a::1' }] },
    { id: 'b', endpoints: [{ address: '198.51.100.20' }] },
  ],
};

export const OPTS = { udpPayloadMax: 1232, minTtl: 5 };

/** A responder whose every client is at a default location ranked `ranking` (no GeoIP table). */
export function makeResponder(snap: ZoneSnapshot = SNAP, ranking = ['a', 'b'], plan = initialPlan('test')): Responder {
  return new Responder({ zones: compileZones(snap), plan, geo: defaultTable(ranking, 'test'), opts: OPTS, version: 'v1' });
}

export const EDNS: Edns = { udpSize: 1232, extRcode: 0, version: 0, flags: 0, options: [] };

export function query(name: string, type: number, o: { edns?: Edns | null; flags?: number; id?: number } = {}): Buffer {
  const m: Message = {
    id: o.id ?? 0x1234,
    flags: o.flags ?? FLAG.RD,
    questions: [{ name, type, class: 1 }],
    answers: [],
    authority: [],
    additional: [],
    edns: o.edns === null ? undefined : o.edns ?? EDNS,
  };
  return encodeMessage(m);
}

