/**
 * The compute rule: reported capacity, thermal throttling and saturation. A saturated region
 * (the inference extension's endpoint picker: more than `saturation.queueWaiting` requests
 * waiting or KV-cache use above `saturation.kvCacheUse`; GPU memory is not a sign, servers
 * preallocate it) takes no spill. Pure: no clock reads, no I/O.
 */
import type { KindValue } from '../../model/kinds/index.js';
import { phaseAt, round } from '../settings.js';
import { type ViewAcc, type ViewRule, capText, capWords, noSpill, staleCap } from './rule.js';

/** In the order their records are read (record order: a kind's records follow the one before's). */
const COMPUTE_KINDS = ['capacity', 'load.metrics'] as const;

export const computeRule: ViewRule = {
  name: 'compute capacity',
  module: 'rules/compute.ts',
  kinds: COMPUTE_KINDS,
  reads: 'capacity, load.metrics',
  changesAt: "a record's expiry and stale point",
  sets: 'cap (capacity, throttling); no spill (saturated)',
  apply(a: ViewAcc): void {
    const { region, rr, t, s } = a;
    const id = region.id;
    const texts = a.ctx.texts;
    for (const kind of COMPUTE_KINDS) for (const r of rr.byKind[kind]) {
      const pol = s.stale[kind];
      const ph = phaseAt(r, t, pol);
      if (ph === 'stale') {
        staleCap(a, r, kind, pol);
        continue;
      }
      if (kind === 'capacity' && r.fold.kind === 'applied') {
        const v = r.fold.value as KindValue<'capacity'>;
        let c = v.fraction ?? 1;
        if (v.units !== undefined && region.capacityUnits) c = Math.min(c, v.units / region.capacityUnits);
        if (c < 1) capText(a, c, texts.get(r, 'capacity') ?? texts.put(r, 'capacity', capWords(id, c, `capacity ${round(c)} reported by ${r.signal.source}`)));
      } else if (kind === 'load.metrics') {
        const v = r.signal.value as KindValue<'load.metrics'>;
        const waiting = v.queueDepth ?? 0;
        const kv = v.kvCacheUse ?? 0;
        const saturated = waiting > s.saturation.queueWaiting || kv > s.saturation.kvCacheUse;
        if (v.throttledShare !== undefined && v.throttledShare > 0) {
          // Throttled and saturated: the sessions already running exceed what the throttle
          // left, and long ones take minutes to end; admit fewer new ones until it is not.
          const left = 1 - v.throttledShare;
          const lost = v.throttledShare;
          if (saturated && s.saturation.throttledFactor < 1) {
            const c = left * s.saturation.throttledFactor;
            capText(
              a,
              c,
              texts.get(r, 'throttled, saturated') ??
                texts.put(r, 'throttled, saturated', capWords(id, c, `${Math.round(lost * 100)} % of GPUs throttled and saturated (${r.signal.source}): ${s.saturation.throttledFactor} of what is left until the load is back under it`)),
            );
          } else capText(a, left, texts.get(r, 'throttled') ?? texts.put(r, 'throttled', capWords(id, left, `${Math.round(lost * 100)} % of GPUs throttled (${r.signal.source})`)));
        }
        if (saturated) noSpill(a, texts.get(r, 'saturated') ?? texts.put(r, 'saturated', `${id}: saturated (${waiting} requests waiting, KV cache at ${Math.round(kv * 100)} %, ${r.signal.source}): takes no spill`));
      }
    }
  },
};
