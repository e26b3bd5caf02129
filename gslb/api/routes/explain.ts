/**
 * Explain route:
 * - GET /v1/explain?client=…&name=…[&type=A|AAAA][&subnet=…] (viewer): why that client gets
 *   the answer it gets — where it is placed, each region's distance, bias, weight and
 *   admission draw, and decide's answer and reasons (gslb/serve/explain.ts).
 * Bad input answers 400 GSLB_ERR_VALIDATION naming `querystring.<field>`: a client that is not
 * an IP address, a subnet that is not a CIDR, a name that is not steered (the message lists the
 * steered names), a type other than A or AAAA. Before the first geo table the answer comes from
 * the default table, and the result says so.
 */
import { apiError } from '../errors.js';
import type { ApiDeps } from '../deps.js';
import { ExplainQuerySchema, ExplainResultSchema, errorResponses, type ApiPlugin } from '../schemas.js';
import { ExplainError } from '../../serve/explain.js';

export interface ExplainRoutesOptions extends Record<string, unknown> {
  explain: ApiDeps['explain'];
}

export const explainRoutes: ApiPlugin<ExplainRoutesOptions> = async (app, opts) => {
  app.get(
    '/v1/explain',
    {
      onRequest: app.requireRole('viewer'),
      schema: { querystring: ExplainQuerySchema, response: { 200: ExplainResultSchema, ...errorResponses } },
    },
    async (request) => {
      const q = request.query;
      try {
        return await opts.explain({ client: q.client, name: q.name, type: q.type ?? 'A', ...(q.subnet === undefined ? {} : { subnet: q.subnet }) });
      } catch (e) {
        if (!(e instanceof ExplainError)) throw e;
        const field = `querystring.${e.field}`;
        throw apiError('GSLB_ERR_VALIDATION', { field, problem: e.problem }, { field });
      }
    },
  );
};
