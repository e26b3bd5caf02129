/**
 * Record data from configuration (zone-file presentation format) to RData.
 * Throws RDataError with a message that says what form is expected.
 */
import { isIP } from 'node:net';
import { QTYPE } from './constants.js';
import { ipBytes, type RData } from './message.js';
import { absoluteName, labelsOf, NameError, nameToWire } from './name.js';

export class RDataError extends Error {}

function u16(s: string | undefined, what: string): number {
  if (s === undefined || !/^\d{1,5}$/.test(s) || Number(s) > 65535) throw new RDataError(`${what} must be an integer 0–65535 (got ${JSON.stringify(s)})`);
  return Number(s);
}

function target(s: string | undefined, zone: string, what: string): string {
  if (!s) throw new RDataError(`${what} is missing`);
  if (s !== '.' && !/^[A-Za-z0-9_.-]+$/.test(s)) throw new RDataError(`${what} "${s}" is not a host name`);
  const abs = s === '.' ? '' : absoluteName(s, zone);
  try {
    nameToWire(abs);
    labelsOf(abs);
  } catch (e) {
    throw new RDataError(`${what}: ${(e as NameError).message}`);
  }
  return abs === '' ? '.' : abs + '.';
}

/** Splits text into character-strings of at most 255 bytes (RFC 1035 §3.3.14). */
function txtBytes(text: string): Buffer {
  const raw = Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  for (let i = 0; i < raw.length || i === 0; i += 255) {
    const chunk = raw.subarray(i, Math.min(i + 255, raw.length));
    parts.push(Buffer.from([chunk.length]), chunk);
    if (raw.length === 0) break;
  }
  return Buffer.concat(parts);
}

/** Parses one record's data for `type` in zone `zone` (absolute, no trailing dot). */
export function parseRData(type: number, data: string, zone: string): RData {
  const fields = data.trim().split(/\s+/);
  switch (type) {
    case QTYPE.A:
      if (isIP(data) !== 4) throw new RDataError(`A data must be an IPv4 address like 192.0.2.1 (got ${JSON.stringify(data)})`);
      return { kind: 'raw', bytes: ipBytes(data) };
    case QTYPE.AAAA:
      if (isIP(data) !== 6) throw new RDataError(`AAAA data must be an IPv6 address like 2001:db8::1 (got ${JSON.stringify(data)})`);
      return { kind: 'raw', bytes: ipBytes(data) };
    case QTYPE.CNAME:
    case QTYPE.NS:
    case QTYPE.PTR:
      if (fields.length !== 1) throw new RDataError(`data must be one host name (got ${JSON.stringify(data)})`);
      return { kind: 'name', name: target(fields[0], zone, 'target') };
    case QTYPE.TXT:
      return { kind: 'raw', bytes: txtBytes(data) };
    case QTYPE.MX:
      if (fields.length !== 2) throw new RDataError(`MX data must be "preference exchange", e.g. "10 mail" (got ${JSON.stringify(data)})`);
      return { kind: 'mx', preference: u16(fields[0], 'MX preference'), exchange: target(fields[1], zone, 'MX exchange') };
    case QTYPE.SRV: {
      if (fields.length !== 4) throw new RDataError(`SRV data must be "priority weight port target", e.g. "10 5 443 api" (got ${JSON.stringify(data)})`);
      const t = nameToWire(target(fields[3], zone, 'SRV target'));
      const b = Buffer.alloc(6);
      b.writeUInt16BE(u16(fields[0], 'SRV priority'), 0);
      b.writeUInt16BE(u16(fields[1], 'SRV weight'), 2);
      b.writeUInt16BE(u16(fields[2], 'SRV port'), 4);
      return { kind: 'raw', bytes: Buffer.concat([b, t]) };
    }
    case QTYPE.CAA: {
      const m = /^(\d{1,3})\s+([A-Za-z0-9]+)\s+"([^"]*)"$/.exec(data.trim());
      if (!m || Number(m[1]) > 255) throw new RDataError(`CAA data must be 'flags tag "value"', e.g. '0 issue "ca.example.net"' (got ${JSON.stringify(data)})`);
      const tag = Buffer.from(m[2]!, 'ascii');
      if (tag.length > 15) throw new RDataError('CAA tag is longer than 15 characters');
      return { kind: 'raw', bytes: Buffer.concat([Buffer.from([Number(m[1]), tag.length]), tag, Buffer.from(m[3]!, 'utf8')]) };
    }
    default:
      throw new RDataError(`type ${type} is not supported in configuration`);
  }
}
