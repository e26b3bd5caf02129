/**
 * The force rule: an operator's force-down takes a region out whatever else holds; a
 * force-up (always with an expiry) is noted here and overrides health alone (the health rule
 * reads it), like gdnsd's forced state. Pure: no clock reads, no I/O.
 */
import { type ViewAcc, type ViewRule, markDown } from './rule.js';

export const forceRule: ViewRule = {
  name: 'operator force',
  module: 'rules/force.ts',
  kinds: [],
  reads: 'force-down and force-up overrides',
  changesAt: "an override's start and end",
  sets: 'down (force-down); force-up lets the health rule keep a region up',
  instants(x, at): void {
    for (const o of x.ovs) {
      if (o.action !== 'force-down' && o.action !== 'force-up') continue;
      at(o.start);
      if (o.end !== undefined) at(o.end);
    }
  },
  apply(a: ViewAcc): void {
    const t = a.t;
    for (const o of a.ovs) {
      if (!(o.start <= t && (o.end === undefined || t < o.end))) continue;
      if (o.action === 'force-down') a.forceDown ??= o;
      else if (o.action === 'force-up') a.forceUp ??= o;
    }
    const f = a.forceDown;
    if (f) markDown(a, `${a.region.id}: forced down by ${f.actor} (${f.reason}) [${f.id}]`);
  },
};
