/**
 * The slow-start rule: a region whose every up endpoint turned up recently came back as a
 * whole (a cold start): it takes clients back in steps over `slowStartMs`.
 * Pure: no clock reads, no I/O.
 */
import { cameBackAt } from './health.js';
import { type ViewAcc, type ViewRule, capText, capWords } from './rule.js';
import { isoOf } from '../../model/domains.js';

export const slowStartRule: ViewRule = {
  name: 'slow start',
  module: 'rules/slow-start.ts',
  kinds: ['health.probe'],
  derived: ['tally'],
  reads: "health.probe's upSince (the health fold)",
  changesAt: 'each step of slowStartMs after the region came back (rampStepMs apart)',
  sets: 'cap k/n at step k of n (soft: spill with nowhere else to go comes back, ADR 0018)',
  instants(x, at): void {
    const s = x.s;
    if (s.slowStartMs <= 0) return;
    for (const r of x.rr.byKind['health.probe']) {
      if (r.fold.kind !== 'health') continue;
      if (r.fold.upSince !== undefined) slowStartInstants(r.fold.upSince, s.slowStartMs, s.rampStepMs, at);
      // Up by its last probe but not yet by rise: after a known outage that one probe is enough
      // (the health rule, ADR 0019), and the slow start runs from it.
      if (!r.fold.stableUp && r.fold.lastUp) slowStartInstants(r.signal.observedAt, s.slowStartMs, s.rampStepMs, at);
    }
  },
  apply(a: ViewAcc): void {
    const s = a.s;
    if (a.down || s.slowStartMs <= 0) return;
    const back = cameBackAt(a.rr.tally);
    const t = a.t;
    if (Number.isNaN(back) || !(t >= back && t < back + s.slowStartMs)) return;
    const n = Math.max(1, Math.ceil(s.slowStartMs / s.rampStepMs));
    const k = Math.min(n, Math.floor(((t - back) * n) / s.slowStartMs) + 1);
    const texts = a.ctx.texts;
    const owner = a.rr.tally;
    capText(a, k / n, texts.get(owner, `${back}/${k}`) ?? texts.put(owner, `${back}/${k}`, capWords(a.region.id, k / n, `slow start after coming back up at ${isoOf(back)}, step ${k}/${n}`)), true);
  },
};

/** The instants of a slow start after `upSince` (every step, and its end). */
export function slowStartInstants(upSince: number, slowStartMs: number, rampStepMs: number, at: (t: number) => void): void {
  const n = Math.max(1, Math.ceil(slowStartMs / rampStepMs));
  for (let i = 0; i <= n; i++) at(upSince + Math.ceil((i * slowStartMs) / n));
}
