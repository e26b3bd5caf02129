/**
 * The drain hooks of a node (docs/drain-hooks.md): one node of the fleet calls the regions'
 * gateways, the one holding the store lease `hooks`; the others keep their runner idle.
 * Nothing to run (null) when no region has a hook.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { DrainHookConfig } from '../config/drain-hook.js';
import type { Plan, RegionId } from '../model/types.js';
import { now as clockNow, realMs } from '../platform/clock.js';
import { LeaseRunner } from '../state/lease.js';
import type { StateStore } from '../state/store.js';
import { DrainHookRunner } from './hooks.js';

export interface DrainHooksOptions {
  hooks: ReadonlyMap<RegionId, DrainHookConfig>;
  store: StateStore;
  /** This node's id (the lease holder's name). */
  node: string;
  plan: () => Plan;
  log: Logger;
  registry: Registry;
  env: Readonly<Record<string, string | undefined>>;
}

export interface DrainHooks {
  runner: DrainHookRunner;
  close(): Promise<void>;
}

export function startDrainHooks(o: DrainHooksOptions): DrainHooks | null {
  if (o.hooks.size === 0) return null;
  let leader = false;
  const lease = new LeaseRunner({
    store: o.store,
    name: 'hooks',
    holder: o.node,
    ttlMs: 15_000,
    log: (level, msg) => o.log[level]({ module: 'hooks' }, msg),
    start: () => {
      leader = true;
      return () => {
        leader = false;
      };
    },
  });
  lease.run();
  const runner = new DrainHookRunner({ hooks: o.hooks, plan: o.plan, clock: clockNow, realMs, log: o.log, registry: o.registry, env: o.env, active: () => leader, activeCheckMs: 1000 });
  runner.start();
  return {
    runner,
    async close() {
      await runner.close();
      await lease.stop();
    },
  };
}
