/**
 * From configuration to the state layer's parts: the planner's settings and the store the
 * config names. Paths are relative to the config file's folder.
 */
import { dirname, resolve } from 'node:path';
import type { Config, RegionConfig } from '../config/schema.js';
import { settingsFromPolicy, type PlannerSettings } from '../policy/planner/index.js';
import { checkWindow, safetyFactsOf } from '../config/windows.js';
import type { PlannerWindow } from '../model/windows.js';
import type { ReduceRules } from '../state/reducer.js';
import { MemoryStore } from '../state/memory-store.js';
import type { StateStore } from '../state/store.js';

export function plannerSettings(c: Config, regions: RegionConfig[]): PlannerSettings {
  const allIds = regions.map((r) => r.id);
  const names = c.names.map((n) => ({ name: n.name, regions: n.regions ?? allIds, ttl: n.ttl }));
  // TTL0 per region for drain planning: the largest TTL of the names it serves.
  const ttl0 = (id: string) => Math.max(0, ...names.filter((n) => n.regions.includes(id)).map((n) => n.ttl));
  const s = settingsFromPolicy(
    c.policy,
    regions.map((r) => ({
      ttl0S: ttl0(r.id),
      id: r.id,
      location: { lat: r.location.lat, lon: r.location.lon },
      bias: r.bias,
      ...(r.capacity?.units !== undefined ? { capacityUnits: r.capacity.units } : {}),
      ...(r.power?.importLimitW !== undefined ? { importLimitW: r.power.importLimitW } : {}),
      ...(r.power?.fullLoadW !== undefined ? { fullLoadW: r.power.fullLoadW } : {}),
      ...(r.power?.minServingW !== undefined ? { minServingW: r.power.minServingW } : {}),
    })),
    names,
  );
  // Recurring windows, parsed by node-cron here (the planner reads plain data); the config
  // loader has reported any problem already.
  const safety = safetyFactsOf(c, regions);
  const ids = new Set(allIds);
  const windows = (c.windows ?? []).map((w) => checkWindow(w, ids, safety, 'config').window).filter((w): w is PlannerWindow => w !== undefined);
  return windows.length > 0 ? { ...s, windows } : s;
}

export function reduceRules(c: Config): ReduceRules {
  return { rise: c.policy.health.rise, fall: c.policy.health.fall, hysteresis: c.policy.hysteresis };
}

/** The store the configuration names (not started); `log` gets the store's own messages. */
export async function storeFor(c: Config, configFile: string, log: (level: 'info' | 'warn' | 'error', msg: string) => void): Promise<StateStore> {
  const rules = reduceRules(c);
  if (c.state.store === 'redis') {
    const { RedisStore } = await import('../state/redis-store.js');
    return new RedisStore({
      url: c.state.redis.url,
      prefix: c.state.redis.prefix,
      rules,
      waitReplicas: c.state.redis.waitReplicas,
      waitTimeoutMs: c.state.redis.waitTimeoutMs,
      onLoss: c.state.redis.onLoss,
      log,
    });
  }
  return new MemoryStore({ file: resolve(dirname(configFile), c.state.file), rules, warn: (msg) => log('warn', msg) });
}
