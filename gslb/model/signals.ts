/**
 * Signal payloads per kind (declared with each kind in gslb/model/kinds/), and the signal
 * envelope, as TypeBox schemas with their static types: the one declaration of what a fact looks like, read by collectors (to build
 * values), the state layer (to validate them), the planner (to read them) and the API (to
 * describe them). Declarations only; validation is gslb/state/signals.ts.
 *
 * Units: times ms epoch, power W, energy Wh, shares in [0, 1].
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { KIND_LIST, type SignalKind } from './kinds/index.js';
// A kind's value type is KindValue<'<kind>'> (kinds/index.ts): nothing to re-export here per kind.
import { Instant, strict } from './kinds/schema.js';

/** Each kind's value schema (from the kinds' registry, gslb/model/kinds/). */
export const VALUE_SCHEMAS = Object.fromEntries(KIND_LIST.map((k) => [k.name, k.value])) as unknown as Record<SignalKind, TSchema>;

export const SIGNAL_KINDS: SignalKind[] = KIND_LIST.map((k) => k.name);

/** Each kind's longest validity (expiresAt − observedAt), ms (from the registry). */
export const MAX_VALIDITY_MS = Object.fromEntries(KIND_LIST.map((k) => [k.name, k.maxValidityMs])) as unknown as Record<SignalKind, number>;

/** The longest a grid event may last (value.end − value.start), ms: a year and a day. */
export const MAX_EVENT_MS = 366 * 86_400_000;

/** How far in the future observedAt may be (clock skew between a source and us). */
export const MAX_FUTURE_MS = 5000;

export const SignalEnvelope = Type.Object(
  {
    region: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'a region id: lowercase letters, digits and -, e.g. eu-west' }),
    kind: Type.Union(SIGNAL_KINDS.map((k) => Type.Literal(k)), { description: 'what the fact is about; it selects the schema of value' }),
    source: Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:/@-]+$', description: 'collector and instance, e.g. health/node-a' }),
    key: Type.String({ maxLength: 200, description: 'tells apart facts of one source about one region' }),
    observedAt: Instant('when the fact was true at its source'),
    expiresAt: Instant('when the fact stops being known'),
    value: Type.Unknown({ description: 'kind-specific payload' }),
  },
  { ...strict, description: 'a fact about one region at one time' },
);
