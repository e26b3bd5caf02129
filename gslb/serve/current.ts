/**
 * What this node serves now: the prepared configuration with its plan and geo reference,
 * the geo table in force, and when the configuration was loaded. One owner (gslb/main.ts
 * wires it); every change goes through these methods, which recompute the served version
 * and hand the result to the answering processes (`publish`).
 */
import type { GeoTable } from '../geo/table.js';
import type { Plan } from '../model/types.js';
import { stateVersion, type Prepared } from './serving.js';

export class ServingHolder {
  /** The geo table in force; null until the first is loaded or compiled. */
  table: GeoTable | null = null;
  /** ms epoch of the configuration's load. */
  loadedAt = Date.now();
  /** Called after every change (set by the wiring to the answering processes' publish). */
  publish: () => void = () => undefined;

  constructor(public prepared: Prepared) {}

  /** A new geo table compiled from `file` is in force. */
  setTable(file: string, table: GeoTable): void {
    this.table = table;
    const p = this.prepared;
    const g = { ...p.state.geo, file, version: table.version };
    this.prepared = { ...p, state: { ...p.state, geo: g, version: stateVersion(p.state.plan, g) } };
    this.publish();
  }

  /** A new plan is in force (the geo table stays). */
  setPlan(plan: Plan): void {
    const p = this.prepared;
    const g = p.state.geo;
    this.prepared = { ...p, state: { ...p.state, plan, version: stateVersion(plan, g) } };
    this.publish();
  }

  /** A reloaded configuration is in force. */
  setConfig(next: Prepared): void {
    this.prepared = next;
    this.loadedAt = Date.now();
    this.publish();
  }
}
