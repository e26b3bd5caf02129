/**
 * Probe routes, open without a token (orchestrators and Prometheus call them):
 * - GET /healthz: 200 `{status:"ok"}` whenever the process runs and the event loop turns.
 * - GET /readyz:  200 when every check is ok, else 503; the body lists every check.
 * - GET /metrics: Prometheus text, already aggregated across processes by the caller.
 */
import type { ReadinessCheck } from '../deps.js';
import { HealthSchema, MetricsSchema, ReadinessSchema, errorResponses, type ApiPlugin } from '../schemas.js';

export interface ProbeRoutesOptions extends Record<string, unknown> {
  readiness(): { ready: boolean; checks: ReadinessCheck[] };
  metrics(): Promise<{ contentType: string; body: string }>;
  /** True once the API is shutting down: /readyz then answers 503. */
  closing(): boolean;
}

export const probeRoutes: ApiPlugin<ProbeRoutesOptions> = async (app, opts) => {
  app.get('/healthz', { schema: { response: { 200: HealthSchema, ...errorResponses } } }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', { schema: { response: { 200: ReadinessSchema, 503: ReadinessSchema, ...errorResponses } } }, async (_request, reply) => {
    let state: { ready: boolean; checks: ReadinessCheck[] };
    try {
      state = opts.readiness();
    } catch (e) {
      // A readiness function that throws means "cannot tell": not ready, never a 500.
      state = { ready: false, checks: [{ name: 'readiness', ok: false, detail: `api: the readiness check failed: ${(e as Error).message}` }] };
    }
    const checks = [...state.checks];
    if (opts.closing()) checks.push({ name: 'api', ok: false, detail: 'api: shutting down' });
    const ready = state.ready && checks.every((c) => c.ok);
    return reply.code(ready ? 200 : 503).send({ ready, checks });
  });

  app.get('/metrics', { schema: { response: { 200: MetricsSchema, ...errorResponses } } }, async (_request, reply) => {
    const m = await opts.metrics();
    return reply.type(m.contentType).send(m.body);
  });
};
