/**
 * Schema helpers shared by the kinds' value schemas: the value domains of
 * gslb/model/domains.ts (instants 2000–2200, bounded durations, watts, counts, shares).
 * Units: times ms epoch, power W, energy Wh, shares in [0, 1].
 */
export { Instant, Duration, Share, Watts, WattHours, Count, Bounded } from '../domains.js';

export const strict = { additionalProperties: false } as const;
