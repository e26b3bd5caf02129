/**
 * DNS names: presentation ↔ wire form, and the lookup key used by the zone tables.
 *
 * A *key* is the lowercased wire form of an absolute name (length-prefixed labels,
 * without the final zero byte) read as a latin1 string; the root's key is ''.
 * Keys never collide for distinct names (a label containing a dot stays one label),
 * and the hot path computes one from the query buffer without building labels.
 */

export const MAX_NAME = 255;
export const MAX_LABEL = 63;

/** Thrown for names that cannot be encoded; `message` says which rule was broken. */
export class NameError extends Error {}

/** Splits a presentation name (absolute or not, no escapes) into labels; '' or '.' is the root. */
export function labelsOf(name: string): string[] {
  const n = name.endsWith('.') ? name.slice(0, -1) : name;
  if (n === '') return [];
  const labels = n.split('.');
  for (const l of labels) {
    if (l.length === 0) throw new NameError(`empty label in "${name}"`);
    if (Buffer.byteLength(l, 'latin1') > MAX_LABEL) throw new NameError(`label "${l.slice(0, 20)}…" is longer than ${MAX_LABEL} bytes`);
  }
  return labels;
}

/** Uncompressed wire form (with the final zero byte) of a presentation name. */
export function nameToWire(name: string): Buffer {
  const labels = labelsOf(name);
  const parts: Buffer[] = [];
  for (const l of labels) {
    const b = Buffer.from(l, 'latin1');
    parts.push(Buffer.from([b.length]), b);
  }
  parts.push(Buffer.from([0]));
  const wire = Buffer.concat(parts);
  if (wire.length > MAX_NAME) throw new NameError(`name "${name.slice(0, 40)}…" is longer than ${MAX_NAME} bytes in wire form`);
  return wire;
}

/** ASCII-only lowercase (DNS case-insensitivity, RFC 4343): bytes A–Z only. */
export function asciiLower(s: string): string {
  let needs = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) {
      needs = true;
      break;
    }
  }
  if (!needs) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    out += c >= 65 && c <= 90 ? String.fromCharCode(c + 32) : s[i];
  }
  return out;
}

/** The lookup key of a presentation name. */
export function nameKey(name: string): string {
  const wire = nameToWire(name);
  return asciiLower(wire.toString('latin1', 0, wire.length - 1));
}

/**
 * The key of the wire name in `buf` from `start` to `end` (end = offset of its zero byte).
 * Only for uncompressed names (the question of a query).
 */
export function keyFromWire(buf: Buffer, start: number, end: number): string {
  return asciiLower(buf.toString('latin1', start, end));
}

/** Presentation form (lowercase as stored, trailing dot) of a key. */
export function keyToName(key: string): string {
  if (key === '') return '.';
  let out = '';
  let i = 0;
  while (i < key.length) {
    const len = key.charCodeAt(i);
    out += escapeLabel(key.slice(i + 1, i + 1 + len)) + '.';
    i += 1 + len;
  }
  return out;
}

/** The key of the parent of `key` ('' for a single label); undefined for the root. */
export function parentKey(key: string): string | undefined {
  if (key === '') return undefined;
  return key.slice(key.charCodeAt(0) + 1);
}

/** Escapes a label for display (RFC 1035 §5.1): dots and non-printables as \DDD. */
export function escapeLabel(l: string): string {
  let out = '';
  for (let i = 0; i < l.length; i++) {
    const c = l.charCodeAt(i);
    if (c === 0x2e || c === 0x5c) out += '\\' + l[i];
    else if (c <= 0x20 || c >= 0x7f) out += '\\' + String(c).padStart(3, '0');
    else out += l[i];
  }
  return out;
}

/** True when `key` is `zoneKey` or below it. */
export function isSubdomainKey(key: string, zoneKey: string): boolean {
  if (zoneKey === '') return true;
  if (key.length < zoneKey.length || !key.endsWith(zoneKey)) return false;
  if (key.length === zoneKey.length) return true;
  // The suffix must start at a label boundary: walk labels from the front.
  let i = 0;
  const target = key.length - zoneKey.length;
  while (i < target) i += key.charCodeAt(i) + 1;
  return i === target;
}

/** Makes a configured name absolute: '@' → zone, 'x' → 'x.zone', 'x.' → 'x'. Lowercased, no trailing dot. */
export function absoluteName(name: string, zone: string): string {
  const z = zone.replace(/\.$/, '').toLowerCase();
  if (name === '@') return z;
  if (name.endsWith('.')) return name.slice(0, -1).toLowerCase();
  return (z === '' ? name : `${name}.${z}`).toLowerCase();
}
