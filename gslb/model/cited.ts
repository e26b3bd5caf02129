/**
 * Override ids as the plan's reasons and alerts cite them (`[ov-…]`, both stores' ids), and
 * what an operator's view makes of one the store no longer holds: the plan in force may be
 * older than the store (a data loss held, a plan still being made, planning failing), so
 * `gridsteer status`, GET /v1/status, `gridsteer explain` and GET /v1/explain say `[ended]`
 * instead of citing an id nobody can look up.
 */

/** An override id as the plan's reasons and alerts cite it: `[ov-…]`. */
const CITED_OVERRIDE = /\[(ov-[0-9a-z-]+)\]/g;

/** `text` with every override it cites that is not in `live` (ended, or gone with a data loss) said `[ended]` instead of its id. */
export function citeLive(text: string, live: ReadonlySet<string>): string {
  return text.replace(CITED_OVERRIDE, (cited, id: string) => (live.has(id) ? cited : '[ended]'));
}
