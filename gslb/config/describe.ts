/**
 * Plain-words descriptions of configuration schemas: what a setting expects ("an integer
 * from 0 to 2147483647", '"auto" or an integer from 0 to 256'). Used by the loader for
 * error messages and by doc.ts for the reference, so both say the same thing.
 * Pure functions over JSON Schema objects (as TypeBox builds them); no I/O.
 */

/** The JSON Schema keywords read here (TypeBox schemas are plain JSON Schema). */
export interface SchemaLike {
  type?: string;
  const?: unknown;
  anyOf?: SchemaLike[];
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  items?: SchemaLike;
  properties?: Record<string, SchemaLike>;
  patternProperties?: Record<string, SchemaLike>;
  required?: string[];
  default?: unknown;
  description?: string;
  /** GridSteer annotation: a kind of string, singular ("DNS name"). */
  'x-type'?: string;
  /** GridSteer annotation: the accepted form in words, for strings checked by pattern or format. */
  'x-form'?: string;
}

const FORMATS: Record<string, string> = {
  ip: 'an IPv4 or IPv6 address, e.g. 192.0.2.1 or 2001:db8::1',
};

function range(s: SchemaLike): string {
  const lo = s.minimum;
  const hi = s.maximum;
  if (s.exclusiveMinimum !== undefined) return ` greater than ${s.exclusiveMinimum}${hi !== undefined ? ` and at most ${hi}` : ''}`;
  if (lo !== undefined && hi !== undefined) return ` from ${lo} to ${hi}`;
  if (lo !== undefined) return ` of at least ${lo}`;
  if (hi !== undefined) return ` of at most ${hi}`;
  return '';
}

/** True for a schema that accepts exactly one value (a TypeBox Literal). */
function isLiteral(s: SchemaLike): boolean {
  return s.const !== undefined;
}

/**
 * What a value must be, as a phrase that follows "must be": "an integer from 512 to 4096",
 * 'one of "A", "AAAA"', "a list of IPv4 or IPv6 addresses".
 */
export function expected(s: SchemaLike): string {
  if (s.anyOf) {
    if (s.anyOf.every(isLiteral)) return `one of ${s.anyOf.map((b) => JSON.stringify(b.const)).join(', ')}`;
    return s.anyOf.map(expected).join(' or ');
  }
  if (isLiteral(s)) return JSON.stringify(s.const);
  if (s.enum) return `one of ${s.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  switch (s.type) {
    case 'integer':
      return `an integer${range(s)}`;
    case 'number':
      return `a number${range(s)}`;
    case 'boolean':
      return 'true or false';
    case 'string':
      if (s['x-form']) return s['x-form'];
      if (s.format && FORMATS[s.format]) return FORMATS[s.format]!;
      return s.minLength ? 'a non-empty string' : 'a string';
    case 'array':
      return `${s.minItems === 1 ? 'a non-empty list' : s.minItems ? `a list of at least ${s.minItems}` : 'a list'} of ${plural(s.items ?? {})}`;
    case 'object':
      return s.patternProperties ? 'a mapping of names to strings' : 'a mapping (key: value)';
    default:
      return 'a value';
  }
}

/** The items of a list, as a plural noun phrase. */
function plural(s: SchemaLike): string {
  if (s.type === 'string') {
    if (s.format === 'ip') return 'IPv4 or IPv6 addresses';
    if (s['x-form']) return `strings, each ${s['x-form']}`;
    return s.minLength ? 'non-empty strings' : 'strings';
  }
  if (s.type === 'object') return 'mappings';
  if (s.type === 'integer') return 'integers';
  if (s.type === 'number') return 'numbers';
  return `values, each ${expected(s)}`;
}

/** The kind of a string for people: its `x-type`, "IP address", or undefined for plain strings. */
export function stringKind(s: SchemaLike): string | undefined {
  if (s.type !== 'string') return undefined;
  return s['x-type'] ?? (s.format === 'ip' ? 'IP address' : undefined);
}

/** The accepted form of a kind of string, in words. */
export function stringForm(s: SchemaLike): string | undefined {
  return s['x-form'] ?? (s.format ? FORMATS[s.format] : undefined);
}

/** A short type for a reference table: "integer 0 to 2147483647", "list of IP addresses", `"auto" or integer 0 to 256`. */
export function typeLabel(s: SchemaLike): string {
  if (s.anyOf) {
    if (s.anyOf.every(isLiteral)) return `one of ${s.anyOf.map((b) => JSON.stringify(b.const)).join(', ')}`;
    return s.anyOf.map(typeLabel).join(' or ');
  }
  if (isLiteral(s)) return JSON.stringify(s.const);
  const r = (): string => {
    if (s.exclusiveMinimum !== undefined) return ` > ${s.exclusiveMinimum}`;
    if (s.minimum !== undefined && s.maximum !== undefined) return ` ${s.minimum} to ${s.maximum}`;
    if (s.minimum !== undefined) return ` ≥ ${s.minimum}`;
    if (s.maximum !== undefined) return ` ≤ ${s.maximum}`;
    return '';
  };
  switch (s.type) {
    case 'integer':
      return `integer${r()}`;
    case 'number':
      return `number${r()}`;
    case 'boolean':
      return 'boolean';
    case 'string':
      return stringKind(s) ?? 'string';
    case 'array': {
      const item = s.items ?? {};
      const kind = stringKind(item);
      const noun = item.type === 'object' ? 'mappings' : kind ? kind + (kind.endsWith('s') ? 'es' : 's') : `${typeLabel(item)}s`;
      return `list of ${noun}${s.minItems ? ` (≥ ${s.minItems})` : ''}`;
    }
    case 'object':
      return s.patternProperties ? 'mapping of strings' : 'mapping';
    default:
      return 'any';
  }
}
