/**
 * A DNS worker process (forked by the primary through node:cluster). It only answers DNS:
 * it receives what to serve from the primary, swaps it in atomically, acknowledges the
 * version, and reports its metrics on request. It exits when the primary goes away.
 *
 * IPC: the worker says {t:'hello'} once it listens for messages (anything sent before
 * would be lost). Primary → worker: {t:'serve', state, listen, tcp} once, then {t:'state', state},
 * {t:'metrics', id}, {t:'demand', id}. Worker → primary: {t:'bound', addresses, version},
 * {t:'ack', version}, {t:'metrics', id, data}, {t:'demand', id, data}, {t:'fatal', message}.
 */
import { processLogger } from '../platform/log.js';
import { Responder } from '../dns/respond.js';
import type { DemandCounts } from '../model/snapshot.js';
import { startDnsServer, type ListenAddress, type TcpLimits } from '../dns/server.js';
import { servingState, type ServeState } from './serving.js';
import { createRegistry } from './metrics.js';

export type ToWorker =
  | { t: 'serve'; state: ServeState; listen: ListenAddress[]; tcp: TcpLimits; logLevel: string; processes: number }
  | { t: 'state'; state: ServeState }
  | { t: 'metrics'; id: number }
  | { t: 'demand'; id: number };

export type FromWorker =
  | { t: 'hello' }
  | { t: 'bound'; addresses: string[]; version: string }
  | { t: 'ack'; version: string }
  | { t: 'metrics'; id: number; data: unknown }
  | { t: 'demand'; id: number; data: DemandCounts }
  | { t: 'fatal'; message: string };

function send(m: FromWorker): void {
  process.send?.(m);
}

let responder: Responder | undefined;
const registry = createRegistry(() => responder?.stats);

process.on('disconnect', () => process.exit(0));
process.on('message', (m: ToWorker) => {
  void (async () => {
    try {
      switch (m.t) {
        case 'serve': {
          const log = processLogger(m.logLevel, 'dns-worker');
          const queryLog = log.child({ module: 'querylog' });
          const rrlLog = log.child({ module: 'ratelimit' });
          responder = new Responder(servingState(m.state), {
            queryLog: (e) => queryLog.info(e, 'query'),
            rateLimitLog: (e) => rrlLog.warn(e, e.mode === 'log' ? 'dns: client prefix over its rate (log only)' : 'dns: client prefix rate limited'),
            // The node's rates are divided among its DNS processes (docs/dns.md).
            processes: m.processes,
          });
          const server = await startDnsServer(m.listen, responder, m.tcp, log);
          send({ t: 'bound', addresses: server.addresses, version: m.state.version });
          break;
        }
        case 'state':
          if (!responder) return;
          responder.swap(servingState(m.state));
          send({ t: 'ack', version: m.state.version });
          break;
        case 'metrics':
          send({ t: 'metrics', id: m.id, data: await registry.getMetricsAsJSON() });
          break;
        case 'demand':
          send({ t: 'demand', id: m.id, data: responder?.takeDemand() ?? {} });
          break;
      }
    } catch (e) {
      send({ t: 'fatal', message: (e as Error).message });
      setTimeout(() => process.exit(1), 50);
    }
  })();
});
send({ t: 'hello' });
