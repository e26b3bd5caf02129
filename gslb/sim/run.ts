/**
 * One simulation: a scenario, a seed and a scale → the world, then each policy in turn on
 * the same world and the same sessions → a SimReport. Deterministic and bounded (time only
 * moves forward, to the window's end); reads no clock and does no I/O.
 */
import { eventsOf, runPolicy, timeline, type EventRt, type PolicyResult, type Timeline } from './engine.js';
import { POLICY_NAMES, type PolicyName } from './policies.js';
import type { Scenario } from './scenario.js';
import { buildWorld, type World } from './world.js';

export interface RunOptions {
  /** Overrides the scenario's seed. */
  seed?: number;
  /** Multiplies sessions per hour, /24s and resolvers (default 1). */
  scale?: number;
  /** Simulate only this long (ms); see timeline(). */
  hoursMs?: number;
  /** Which policies, in this order (default all three). */
  policies?: readonly PolicyName[];
  /** Progress over the whole run, 0–1 (called often; keep it cheap). */
  onProgress?: (fraction: number, policy: PolicyName) => void;
}

export interface SimReport {
  scenario: Scenario;
  seed: number;
  scale: number;
  timeline: Timeline;
  world: World;
  events: EventRt[];
  results: PolicyResult[];
}

export function runScenario(sc: Scenario, o: RunOptions = {}): SimReport {
  const seed = o.seed ?? sc.seed;
  const scale = o.scale ?? 1;
  const world = buildWorld(sc, seed, scale);
  const tl = timeline(sc, o.hoursMs);
  const policies = o.policies ?? POLICY_NAMES;
  const results: PolicyResult[] = [];
  policies.forEach((name, i) => {
    const progress = o.onProgress ? (done: number, total: number) => o.onProgress!((i + done / total) / policies.length, name) : undefined;
    results.push(runPolicy(world, name, tl, progress));
  });
  return { scenario: sc, seed, scale, timeline: tl, world, events: eventsOf(world), results };
}
