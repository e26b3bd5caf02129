/** The API's HTTPS in the log at start: the certificate in use, client-certificate mode, expiry. */
import type { Logger } from 'pino';
import type { HttpTls } from '../config/tls.js';

export function logHttps(log: Logger, t: HttpTls, now = Date.now()): void {
  log.info(
    { module: 'api', cert: t.files.cert, subject: t.subject, subjectAltName: t.subjectAltName, validTo: t.validTo.toISOString(), clientCa: t.files.clientCa },
    `api: HTTPS${t.requireClientCert ? ', client certificates required (mutual TLS)' : t.requestCert ? ', client certificates optional' : ''}`,
  );
  if (t.validTo.getTime() < now) log.warn({ module: 'api', cert: t.files.cert, validTo: t.validTo.toISOString() }, 'api: the HTTPS certificate has expired: clients will refuse it; renew it and restart');
}
