/**
 * Configuration routes:
 * - GET  /v1/config         (viewer):   what is in force — version, file, load time, zones, names, regions.
 * - POST /v1/config/reload  (operator): re-reads the files; 200 `{version, changed}`, or 422
 *   GSLB_ERR_CONFIG_INVALID with every issue (the running configuration then stays in force).
 * Reloads run one at a time, in arrival order.
 */
import { apiError } from '../errors.js';
import type { ApiDeps } from '../deps.js';
import {
  ConfigInfoSchema,
  ConfigInvalidBodySchema,
  ReloadResultSchema,
  errorResponses,
  type ApiPlugin,
  type ConfigIssueBody,
} from '../schemas.js';

export interface ConfigRoutesOptions extends Record<string, unknown> {
  configInfo: ApiDeps['configInfo'];
  reload: ApiDeps['reload'];
}

/** The issues of a ConfigError-like error (an Error with an `issues` array), else null. */
export function configIssuesOf(e: unknown): ConfigIssueBody[] | null {
  if (!(e instanceof Error)) return null;
  const issues = (e as { issues?: unknown }).issues;
  if (!Array.isArray(issues)) return null;
  return issues.map((i: Record<string, unknown>) => {
    const out: ConfigIssueBody = {
      file: String(i?.file ?? ''),
      path: String(i?.path ?? ''),
      message: String(i?.message ?? ''),
    };
    if (typeof i?.line === 'number' && i.line >= 1) out.line = i.line;
    if (typeof i?.column === 'number' && i.column >= 1) out.column = i.column;
    return out;
  });
}

export const configRoutes: ApiPlugin<ConfigRoutesOptions> = async (app, opts) => {
  app.get(
    '/v1/config',
    { onRequest: app.requireRole('viewer'), schema: { response: { 200: ConfigInfoSchema, ...errorResponses } } },
    async () => opts.configInfo(),
  );

  let queue: Promise<unknown> = Promise.resolve();
  const serialized = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn, fn);
    queue = run.catch(() => undefined);
    return run;
  };

  app.post(
    '/v1/config/reload',
    {
      onRequest: app.requireRole('operator'),
      schema: { response: { 200: ReloadResultSchema, 422: ConfigInvalidBodySchema, ...errorResponses } },
    },
    async (request) => {
      const actor = request.identity?.name ?? null;
      try {
        const result = await serialized(() => opts.reload());
        request.log.info({ actor, version: result.version, changed: result.changed }, 'api: configuration reloaded');
        return { version: result.version, changed: result.changed };
      } catch (e) {
        const issues = configIssuesOf(e);
        if (issues === null) throw e;
        request.log.warn({ actor, issues }, 'api: configuration reload refused: the files have problems');
        throw apiError('GSLB_ERR_CONFIG_INVALID', { count: issues.length }, { details: { issues } });
      }
    },
  );
};
