/**
 * The automation limits: the automation's safety floor (the safety pass, rules/safety.ts) or
 * the operator's freeze acts on gridPolicy's discretionary share — what every automation
 * obligation before it left (grid facts, tariff windows, practice runs: ViewAcc.auto) — and
 * lifts automation's refusal where it holds the share up. Measured power and compute, and a
 * trusted physical loss, are facts no switch makes untrue: the loss acts whatever the limits
 * say. Runs after every rule that lowers gridPolicy's share (rules/index.ts).
 * A rule of the planner (gslb/policy/rules/, listed in rules/index.ts): pure, no clock reads, no I/O.
 */
import { round } from '../settings.js';
import type { ViewAcc, ViewRule } from './rule.js';

export const limitsRule: ViewRule = {
  name: 'automation limits',
  module: 'rules/limits.ts',
  kinds: [],
  reads: "gridPolicy's share the automation obligations left; the operator's freeze; the safety pass's floor; the trusted losses' share",
  changesAt: "a freeze's start and end; a safety floor's segments (the safety pass plans the region again at them)",
  sets: "gridPolicy's share in force (held by a freeze or the floor, never above a trusted loss); lifts automation's refusal; GOAWAY (an obligation to take nothing, from the instant the weight reaches 0); cap",
  instants(x, at): void {
    for (const o of x.ctx.freezes) {
      at(o.start);
      if (o.end !== undefined) at(o.end);
    }
  },
  apply(a: ViewAcc): void {
    const id = a.region.id;
    const t = a.t;
    const reasons = a.reasons;
    let grid = a.auto;
    let gridFirm = a.autoFirm;
    const lossCap = a.loss;
    a.gridRaw = Math.min(grid, lossCap);
    a.lossRaw = lossCap;
    const freezes = a.ctx.freezes;
    const fr = freezes.length === 0 ? undefined : freezes.find((o) => o.start <= t && (o.end === undefined || t < o.end));
    let lifted = '';
    if (fr) {
      const held = fr.hold?.[id] ?? 1;
      if (held !== grid) reasons.push(`${id}: automation frozen by ${fr.actor} (${fr.reason}) [${fr.id}]: gridPolicy held at ${held}${grid < 1 ? `, not ${grid}` : ' (it would lift)'}`);
      grid = held;
      gridFirm = held;
      if (held > 0) a.autoLifted = true;
      lifted = `automation frozen by ${fr.actor} [${fr.id}]`;
    } else {
      const fl = a.ctx.floor?.(t);
      if (fl && fl.floor > grid) {
        reasons.push(`${id}: ${fl.why}: gridPolicy held at ${round(fl.floor)}, not ${grid}`);
        grid = round(fl.floor);
        gridFirm = Math.max(gridFirm, grid);
        a.autoLifted = true;
        lifted = 'the safety limits';
      }
    }
    if (lossCap < grid) {
      if (lifted) reasons.push(`${id}: the physical loss acts although ${lifted} would hold it (gridsteer distrust ${a.lossSources} stops it)`);
      grid = lossCap;
    }
    const goaway = Math.min(a.autoGoaway, a.lossGoaway);
    a.grid = grid;
    // GOAWAY where the share reaches 0 ahead of a refusal; the view drops it where new streams are refused already.
    if (grid === 0 && Number.isFinite(goaway) && (a.goawayBy === undefined || goaway < a.goawayBy)) a.goawayBy = goaway;
    if (grid < a.share) a.share = grid;
    gridFirm = Math.min(gridFirm, a.lossFirm);
    if (gridFirm < a.firm) a.firm = gridFirm;
  },
};
