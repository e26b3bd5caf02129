/**
 * The planner's defaults are declared once, in the config schema's `policy:` section
 * (gslb/model/policy.ts PolicySchema). `defaultSettings()` (what the simulator and the
 * benchmarks plan with) maps those defaults, and `plannerSettings()` (what a server plans
 * with) maps a loaded configuration, through the same `settingsFromPolicy()`. Written first as
 * a characterisation of the two default sets that existed before (issue "the house,
 * redesigned (2 of 3)"), it pins that every policy setting agrees for a configuration that
 * sets no policy, and that what differs is only what a configuration describes and the
 * defaults cannot know (the names, TTL0 from the names' TTLs), listed one by one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadConfig } from '../config/load.js';
import { baseFiles, tempFleet } from '../config/testing.js';
import { Value } from '@sinclair/typebox/value';
import { PolicySchema } from '../model/policy.js';
import { defaultSettings, settingsFromPolicy } from '../policy/planner/index.js';
import { plannerSettings } from './setup.js';

test("a configuration without a policy section plans with defaultSettings()'s policy; the differences are what a config describes", (t) => {
  const dir = tempFleet(t, baseFiles());
  const loaded = loadConfig(join(dir, 'gridsteer.yaml'));
  const fromConfig = plannerSettings(loaded.config, loaded.regions);
  const fromDefaults = defaultSettings(fromConfig.regions);
  const { names, drain: d1, regions: r1, ...policy1 } = fromConfig;
  const { drain: d2, regions: r2, ...policy2 } = fromDefaults;
  // Every policy setting but the drain's: equal.
  assert.deepEqual(policy1, { ...policy2 });
  // The drain settings: equal but for TTL0 (the largest TTL of the configured names; 30 s here,
  // and the default's 30 s is the shipped names' TTL).
  assert.deepEqual({ ...d1, ttl0S: 'from the names' }, { ...d2, ttl0S: 'from the names' });
  assert.equal(d1.ttl0S, Math.max(...loaded.config.names.map((n) => n.ttl)));
  // The same regions (defaultSettings takes them as given).
  assert.equal(r1, r2);
  // What only a configuration knows: the names and the regions serving each.
  assert.deepEqual(names, [
    { name: 'api.gslb.example.com', regions: loaded.regions.map((r) => r.id) },
    { name: 'eu.gslb.example.com', regions: ['eu-ie'] },
  ]);
  assert.equal('names' in fromDefaults, false, 'defaultSettings has no names: one name served by every region');
});

test('defaultSettings() is the config schema\'s defaults through the one mapping (the simulator plans with it)', () => {
  const regions = [{ id: 'a', capacityUnits: 10 }, { id: 'b' }];
  assert.deepEqual(defaultSettings(regions), settingsFromPolicy(Value.Default(PolicySchema, {}) as never, regions));
  // A policy setting changed in the schema's defaults would reach both: the defaults are data of the schema.
  assert.equal(defaultSettings([]).drain.holdMs, (PolicySchema.properties.drain.properties.holdMs as { default: number }).default);
});
