/**
 * The JSON logger of every GridSteer process, the primary and each DNS worker: pino, one line
 * per entry on stdout, with `time` an ISO 8601 string (as docs/dns.md and docs/operations.md
 * show) and the process's `pid` and `role` on every line. Made here once so that a line reads
 * the same whichever process wrote it.
 */
import pino, { type Logger } from 'pino';

export type ProcessRole = 'primary' | 'dns-worker';

export function processLogger(level: string, role: ProcessRole): Logger {
  return pino({ level, base: { pid: process.pid, role }, timestamp: pino.stdTimeFunctions.isoTime });
}
