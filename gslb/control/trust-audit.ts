/**
 * Trust decisions become audit entries (issue 28, ADR 0021): the node leading the store lease
 * `trust-audit` compares each plan's trust decisions (Plan.trust, the same on every node) with
 * the last it audited and appends one entry per change: `trust.trusted`, `trust.waiting`,
 * `trust.untrusted`, `trust.distrusted`, `trust.cancelled`, target
 * `loss:<region>:<source>:<event id>`, actor `planner`, naming the claim's principal. On taking
 * the lease it reads back the newest entries, so a new leader does not audit again what the
 * last one did. An audit write that fails is retried with the next plan (never lost silently:
 * it is logged).
 */
import type { Logger } from 'pino';
import type { Plan, TrustDecision } from '../model/types.js';
import { LeaseRunner } from '../state/lease.js';
import type { StateStore } from '../state/store.js';

export interface TrustAuditOptions {
  store: StateStore;
  node: string;
  log: Logger;
  clock: () => number;
  /** Lease length, ms (default 15 s). */
  leaseMs?: number;
}

/** How many of the newest audit entries a new leader reads back (the last status of each claim). */
const READ_BACK = 2000;

export const trustTarget = (d: Pick<TrustDecision, 'region' | 'source' | 'eventId'>): string => `loss:${d.region}:${d.source}:${d.eventId}`;

export class TrustAudit {
  private leader = false;
  /** The last audited status per target; null until read back after taking the lease. */
  private known: Map<string, string> | null = null;
  private latest: Plan | null = null;
  private busy: Promise<void> | null = null;
  private readonly lease: LeaseRunner;

  constructor(private readonly o: TrustAuditOptions) {
    this.lease = new LeaseRunner({
      store: o.store,
      name: 'trust-audit',
      holder: o.node,
      ttlMs: o.leaseMs ?? 15_000,
      log: (level, msg) => o.log[level]({ module: 'trust-audit' }, msg),
      start: () => {
        this.leader = true;
        this.known = null;
        this.kick();
        return () => {
          this.leader = false;
          this.known = null;
        };
      },
    });
  }

  start(): void {
    this.lease.run();
  }

  async stop(): Promise<void> {
    await this.lease.stop();
    await this.busy;
  }

  /** Every plan adopted on this node (cheap when nothing changed). */
  onPlan(plan: Plan): void {
    this.latest = plan;
    this.kick();
  }

  /** For tests: resolves when the audit of the latest plan is written. */
  async settled(): Promise<void> {
    while (this.busy) await this.busy;
  }

  private kick(): void {
    if (!this.leader || this.busy || !this.latest) return;
    this.busy = this.run().finally(() => {
      this.busy = null;
    });
  }

  private async run(): Promise<void> {
    try {
      for (let plan = this.latest; plan && this.leader; ) {
        if (this.known === null) this.known = await this.readBack();
        const now = this.o.clock();
        for (const d of plan.trust ?? []) {
          const target = trustTarget(d);
          const before = this.known.get(target);
          if (before === d.status) continue;
          await this.o.store.appendAudit({
            at: now,
            actor: 'planner',
            action: `trust.${d.status}`,
            target,
            reason: d.why,
            before: before === undefined ? null : { status: before },
            after: { status: d.status, principal: d.principal, source: d.source, region: d.region, eventId: d.eventId, at: d.at },
          });
          this.known.set(target, d.status);
        }
        plan = this.latest === plan ? null : this.latest;
      }
    } catch (e) {
      this.o.log.warn({ module: 'trust-audit', err: (e as Error).message }, 'trust-audit: could not write the audit of a trust decision; retried with the next plan');
    }
  }

  private async readBack(): Promise<Map<string, string>> {
    const known = new Map<string, string>();
    // Newest first: the first entry seen per target is its last status.
    for (const e of await this.o.store.audit(READ_BACK)) {
      if (!e.action.startsWith('trust.') || known.has(e.target)) continue;
      known.set(e.target, e.action.slice('trust.'.length));
    }
    return known;
  }
}
