/**
 * fast-check arbitraries for the signals the validators accept, built from the kinds' own
 * value schemas (gslb/model/kinds, through VALUE_SCHEMAS) and the envelope's (SignalEnvelope):
 * a schema's bound is the generator's bound, so a kind added to the registry, or a bound
 * changed, is generated without an edit here. Numbers favour the edges a schema allows: its
 * minimum and maximum, 0 and -0, the least positive double, 2^53 − 1 where in range, and
 * the largest and smallest doubles in range; instants favour the ends of the instant range.
 *
 * `validSignal` gives signals shaped to pass validation (the test keeps those that do and
 * checks that the others are refused with a SignalError, never another exception);
 * `mutatedSignal` breaks one valid signal one way (a field set to an extreme, a wrong type, a
 * field removed or added, a string for a number), for the validation side of the property.
 */
import fc from 'fast-check';
import { Kind, type TSchema } from '@sinclair/typebox';
import { VALUE_SCHEMAS } from '../../gslb/model/signals.js';
import { KIND_LIST } from '../../gslb/model/kinds/index.js';
import { INSTANT_MAX, INSTANT_MIN } from '../../gslb/model/domains.js';

type Schema = TSchema & Record<string | symbol, unknown>;

/** Doubles at the edges of [min, max] and within it. */
function edgeNumbers(min: number, max: number, integer: boolean): number[] {
  const c = [min, max, 0, -0, Number.MIN_VALUE, 1, 0.5, 2 ** 53 - 1, Number.MAX_SAFE_INTEGER + 2, Number.MAX_VALUE, -Number.MAX_VALUE, max - 1, min + 1, (min + max) / 2];
  return [...new Set(c.filter((x) => Number.isFinite(x) && x >= min && x <= max && (!integer || Number.isInteger(x))))];
}

/** An arbitrary of the values `schema` accepts (the TypeBox shapes the kinds use). */
export function arbitraryOf(schema: Schema): fc.Arbitrary<unknown> {
  const kind = schema[Kind] as string | undefined;
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.anyOf)) return fc.oneof(...(schema.anyOf as Schema[]).map(arbitraryOf));
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  switch (kind ?? schema.type) {
    case 'Integer':
    case 'integer': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : -(2 ** 31);
      const max = typeof schema.maximum === 'number' ? schema.maximum : 2 ** 31;
      const span = fc.double({ min: 0, max: 1, noNaN: true }).map((f) => Math.min(max, Math.max(min, Math.round(min + f * (max - min)))));
      return fc.oneof({ arbitrary: fc.constantFrom(...edgeNumbers(min, max, true)), weight: 2 }, { arbitrary: span, weight: 3 });
    }
    case 'Number':
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : -Number.MAX_VALUE;
      const max = typeof schema.maximum === 'number' ? schema.maximum : Number.MAX_VALUE;
      const inside = fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
      return fc.oneof({ arbitrary: fc.constantFrom(...edgeNumbers(min, max, false)), weight: 2 }, { arbitrary: inside, weight: 3 });
    }
    case 'Boolean':
    case 'boolean':
      return fc.boolean();
    case 'String':
    case 'string': {
      const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
      const maxLength = Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : 64, 64);
      if (typeof schema.pattern === 'string') {
        try {
          return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= minLength && s.length <= (schema.maxLength as number ?? Infinity));
        } catch {
          // A pattern fast-check cannot generate from (a lookahead): any text, which the schema mostly refuses.
          return fc.string({ minLength, maxLength });
        }
      }
      return fc.oneof(fc.string({ minLength, maxLength }), fc.constant('x'.repeat(Math.max(minLength, Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : 200, 2000)))));
    }
    case 'Object':
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set((schema.required as string[] | undefined) ?? []);
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, s] of Object.entries(props)) model[k] = arbitraryOf(s);
      return fc.record(model, { requiredKeys: [...required] as never[] });
    }
    case 'Array':
    case 'array': {
      const minLength = typeof schema.minItems === 'number' ? schema.minItems : 0;
      return fc.array(arbitraryOf(schema.items as Schema), { minLength, maxLength: Math.max(minLength, Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : 4, 4)) });
    }
    case 'Unknown':
      return fc.anything();
    default:
      throw new Error(`signal-arbitrary: no generator for schema kind ${String(kind ?? schema.type)}`);
  }
}

/** Instants favouring the ends of the range and the neighbourhood of `now`. */
export function instantNear(now: number): fc.Arbitrary<number> {
  return fc.oneof(
    fc.constantFrom(INSTANT_MIN, INSTANT_MAX, INSTANT_MIN + 1, INSTANT_MAX - 1, now),
    fc.integer({ min: -86_400_000, max: 86_400_000 }).map((d) => Math.min(INSTANT_MAX, Math.max(INSTANT_MIN, now + d))),
    fc.double({ min: 0, max: 1, noNaN: true }).map((f) => Math.round(INSTANT_MIN + f * (INSTANT_MAX - INSTANT_MIN))),
  );
}

/** The sources signals come from: the example fleet's collectors and a bound grid source. */
export const SOURCES = ['openadr3/vtn.utility.example', 'openadr3/vtn.other.example', 'grid-alerts/ercot', 'health/node-a', 'health/node-b', 'prometheus/main', 'mqtt/site-1', 'carbon/electricitymaps', 'manual'];

/** A signal shaped to pass validation at `now` (validation may still refuse it: the caller checks). */
export function validSignal(regions: readonly string[], now: number): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .record({
      kind: fc.constantFrom(...KIND_LIST.map((k) => k.name)),
      region: fc.constantFrom(...regions),
      source: fc.constantFrom(...SOURCES),
      key: fc.constantFrom('k1', 'k2', 'fleet'),
      observedAt: fc.oneof({ arbitrary: fc.integer({ min: -3_600_000, max: 5_000 }).map((d) => now + d), weight: 4 }, { arbitrary: fc.constantFrom(INSTANT_MIN, now - 30 * 86_400_000), weight: 1 }),
      life: fc.oneof(fc.constantFrom(1, 1000, 60_000, 86_400_000, 7 * 86_400_000, 31 * 86_400_000, 400 * 86_400_000), fc.integer({ min: 1, max: 3_600_000 })),
      seed: fc.integer(),
    })
    .chain((e) => {
      const kind = KIND_LIST.find((k) => k.name === e.kind)!;
      return arbitraryOf(VALUE_SCHEMAS[kind.name] as Schema).map((value) => {
        const v = value as Record<string, unknown>;
        // The checks beyond the schema, met most of the time: an event's key is its id, it ends after it starts.
        if (kind.name === 'grid.event' && typeof v === 'object' && v !== null) {
          if (e.seed % 5 !== 0 && typeof v.start === 'number' && typeof v.end === 'number' && v.end <= v.start) [v.start, v.end] = [Math.min(v.start, now), Math.max(v.start, now) + 3_600_000];
          if (e.seed % 3 === 0 && typeof v.start === 'number') v.end = Math.min(INSTANT_MAX, v.start + 1 + (Math.abs(e.seed) % 86_400_000));
          if (v.type === 'simple' && v.level === undefined) v.level = Math.abs(e.seed) % 4;
          if (v.type === 'cap' && v.cap === undefined) v.cap = 0.5;
          if ((v.type === 'import-capacity-limit' || v.type === 'dispatch-setpoint') && v.limitW === undefined) v.limitW = 1e6;
        }
        const key = kind.name === 'grid.event' && typeof v?.id === 'string' ? v.id : e.key;
        const expiresAt = Math.min(INSTANT_MAX, e.observedAt + Math.min(e.life, kind.maxValidityMs));
        return { region: e.region, kind: kind.name, source: e.source, key, observedAt: e.observedAt, expiresAt, value };
      });
    });
}

/** One way of breaking a signal: a path and what goes there (undefined = removed). */
const EXTREMES: unknown[] = [9e15, 1e300, -1, -0, 0, 2 ** 53 - 1, 2 ** 53 + 2, Number.MAX_VALUE, Number.MIN_VALUE, INSTANT_MIN - 1, INSTANT_MAX + 1, 1, '0.5', '1e3', 'NaN', 'Infinity', null, true, [], {}, '', 'x'.repeat(5000), undefined];

/** A valid signal broken one way (validation must refuse it with a SignalError, or accept it and the core plan it). */
export function mutatedSignal(regions: readonly string[], now: number): fc.Arbitrary<Record<string, unknown>> {
  return fc.tuple(validSignal(regions, now), fc.nat(), fc.constantFrom(...EXTREMES), fc.boolean()).map(([s, pick, v, inValue]) => {
    const out = structuredClone(s) as Record<string, unknown>;
    const target = inValue && typeof out.value === 'object' && out.value !== null ? (out.value as Record<string, unknown>) : out;
    const keys = Object.keys(target);
    const key = pick % 7 === 0 ? 'unknownField' : keys[pick % Math.max(1, keys.length)] ?? 'value';
    if (v === undefined) delete target[key];
    else target[key] = v;
    return out;
  });
}
