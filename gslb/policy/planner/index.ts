/**
 * The planner: pure `plan(input) → Plan`. It reads no clock: every time-based effect (a
 * signal's expiry, a stale policy taking over, a drain ramp step, an override's end, a grid
 * event's start and end) becomes a step at an absolute instant, and `decide` picks the step
 * in force from `now`. Two nodes holding the same store snapshot and config produce
 * byte-identical plans (the version is the hash of the inputs).
 *
 * Per region and instant it works out (docs/design.md "Rule order", strongest first):
 *   operator force-down > health down (majority of vantages; operator force-up overrides
 *   health alone) > operator drain / weight > grid obligations (events, alert levels) >
 *   power budget > compute capacity.
 * Caps combine by minimum into the region's admission share a ∈ [0, 1]; every home admits
 * into the region with w[home][region] = a (times the configured static weight). Each region
 * has a schedule of its own (ADR 0006), so a plan grows with the changes, not with
 * regions × instants. A region
 * whose model servers are saturated (the inference extension's endpoint picker: more than
 * `saturation.queueWaiting` requests waiting or KV-cache use above `saturation.kvCacheUse`) takes no
 * spill: w[h][r] = 0 for every home h ≠ r, its own clients unaffected.
 *
 * The package's parts, one job each: view.ts (one region at one instant: the rules of
 * ../rules/ combined in their written order), instants.ts (when a region is evaluated),
 * memo.ts (plan reuse, ADR 0009) and plan.ts (the pass over a snapshot, the plan-wide passes
 * and the version). The rules themselves, one module each, and their order are in
 * ../rules/index.ts; the settings and their defaults in ../settings.ts. This file is the
 * planner's public face: other modules import the planner from here.
 */

export { DEFAULT_DRAIN, DEFAULT_STALE, defaultSettings, settingsFromPolicy } from '../settings.js';
export type { StaleThen, StalePolicy, PlannerRegion, PlannerSettings, DrainSettings, PlanInput } from '../settings.js';
export { operatorShareAt } from '../rules/operator.js';
export { healthAt } from '../rules/health.js';
export type { HealthTally } from '../rules/health.js';
export { matchGridRule } from '../rules/grid.js';
export { regionPowerAt } from '../rules/power.js';
export type { RegionPower } from '../rules/power.js';
export { DEMAND_WINDOW_BUCKETS, SPILL_SETTLE_MS, demandPerHome } from '../rules/spill.js';
export { plan, planCounting, gridSharesAt } from './plan.js';
