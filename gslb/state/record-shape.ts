/**
 * The least shape a stored record must have to be handed to the planner (ADR 0020): what a
 * store checks on read, so that a value written by hand, by another program or torn is
 * reported as unreadable (and quarantined) instead of reaching the planner or stopping the
 * read. Not validation of content: a record of the right shape whose values make planning
 * fail is found by the quarantine search (gslb/control/quarantine.ts).
 */
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why `x` is not a signal record stored under `id`; null when it is one. */
export function recordShapeProblem(x: unknown, id: string): string | null {
  if (!isObject(x)) return 'not a JSON object';
  if (x.id !== id) return `its id ${JSON.stringify(x.id)?.slice(0, 80)} is not the field it is stored under`;
  const s = x.signal;
  if (!isObject(s)) return 'signal is not an object';
  for (const f of ['kind', 'region', 'source', 'key'] as const) if (typeof s[f] !== 'string') return `signal.${f} is not a string`;
  for (const f of ['observedAt', 'expiresAt'] as const) if (typeof s[f] !== 'number' || !Number.isFinite(s[f])) return `signal.${f} is not a finite number`;
  if (!isObject(x.fold) || typeof x.fold.kind !== 'string') return 'fold is not an object with a kind';
  for (const f of ['principal', 'grant'] as const) if (x[f] !== undefined && typeof x[f] !== 'string') return `${f} is not a string`;
  return null;
}

/** Why `x` is not a live override stored under `id`; null when it is one. */
export function overrideShapeProblem(x: unknown, id: string): string | null {
  if (!isObject(x)) return 'not a JSON object';
  if (x.id !== id) return `its id ${JSON.stringify(x.id)?.slice(0, 80)} is not the field it is stored under`;
  for (const f of ['region', 'action', 'actor', 'reason'] as const) if (typeof x[f] !== 'string') return `${f} is not a string`;
  if (typeof x.start !== 'number' || !Number.isFinite(x.start)) return 'start is not a finite number';
  return null;
}
