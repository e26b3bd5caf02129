/** The API shapes the dashboard reads (docs/api.md; the server's schemas are the truth). */

export interface SignalView {
  kind: string;
  source: string;
  /** Who wrote it: token:<name> or collector:<name> (absent: an earlier build's record). */
  principal?: string;
  /** The grant it was written under (absent with a principal: none). */
  grant?: string;
  key: string;
  observedAt: number;
  expiresAt: number;
  ageMs: number;
  expired: boolean;
  summary: string;
}

export interface RegionView {
  id: string;
  name: string;
  location?: { lat: number; lon: number; country?: string; city?: string };
  capacityUnits?: number;
  power: { site?: string; balancingAuthority?: string; importLimitW?: number; fullLoadW?: number; availableW?: number; drawW?: number; headroomW?: number; source?: string; ageMs?: number };
  share: number;
  down: boolean;
  refuse: boolean;
  /** gslb/model/region-state.ts: the server's word for it. */
  state: 'up' | 'draining' | 'drained' | 'restoring' | 'refusing' | 'down';
  ttlCap?: number;
  /** The TTL an answer naming it carries now, s, at most (GET /v1/regions). */
  ttl?: number;
  reasons: string[];
  next?: { at: number; share: number; down: boolean; ifNotRefreshed?: true };
  traffic: number;
  health?: { up: number; total: number };
  signals: SignalView[];
}

export interface GridEventView {
  region: string;
  kind: 'grid.event' | 'grid.alert';
  source: string;
  principal?: string;
  key: string;
  type: string;
  level?: number;
  start?: number;
  end?: number;
  cancelled: boolean;
  /** gslb/model/grid-event-phase.ts: the server's word for where it stands now; over = history. */
  phase: 'in-force' | 'announced' | 'over' | 'cancelled';
  /** Learned when its end had already passed (a collector replaying history): never acted on. */
  replay: boolean;
  program?: string;
  message?: string;
  learnedAt: number;
}

export interface Fleet {
  now: number;
  planVersion: string;
  revision: number;
  unplaced: number;
  regions: RegionView[];
  events: GridEventView[];
  /** A data loss of the state store the node holds its last plan for (GET /v1/store). */
  storeLoss?: { detectedAt: number; seenRevision: number; why: string } | null;
}

export interface PlanStep {
  at: number;
  share: number;
  down: boolean;
  ttlCap?: number;
  refuse?: boolean;
  goawayBy?: number;
  reasons: string[];
}

/** An alert of the plan (ADR 0014). */
export interface PlanAlert {
  id: string;
  severity: 'critical' | 'warning';
  kind: string;
  regions: string[];
  events: string[];
  at: number;
  actBy?: number;
  message: string;
}

export interface Plan {
  version: string;
  regions: Record<string, PlanStep[]>;
  unplaced?: Record<string, number>;
  alerts?: PlanAlert[];
  /** Recurring windows' occurrences over the plan's horizon (docs/schedules.md). */
  windows?: WindowOccurrence[];
}

export interface WindowOccurrence {
  window: string;
  kind: 'maintenance' | 'tariff' | 'practice';
  regions: string[];
  start: number;
  end: number;
  cap: number;
  reason: string;
  source: 'config' | 'api';
  skipped?: string;
  aborted?: { at: number; why: string };
}

export interface Override {
  id: string;
  region: string;
  action: string;
  value?: number;
  ramp: number;
  actor: string;
  reason: string;
  start: number;
  end?: number;
}

export interface Status {
  frozen: Override | null;
}

export interface Preview {
  current: string;
  changed: string[];
  shares: { at: number; regions: Record<string, number>; unplaced: number }[];
}

export interface Explain {
  steeredName: string;
  subnetKey: string;
  usedEcs: boolean;
  located: { address: string; lat: number; lon: number; country?: string; city?: string } | null;
  cell: { description: string; ranking: string[] };
  candidates: { region: string; rank: number | null; distanceKm: number | null; weight: number; down: boolean; admitted: boolean | null; answered: boolean; why: string }[];
  answer: { region: string | null; addresses: string[]; ttl: number; ecsScope: number | null; rcode: string };
  reasons: string[];
  notes: string[];
}
