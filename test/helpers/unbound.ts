/**
 * Runs a real recursive resolver, Unbound (Debian package `unbound`), in the foreground
 * for a suite, with a config of its own in a temp dir (Debian's default config, its
 * trust anchor and its includes are never read):
 *
 * - listens on 127.0.0.1 at a free port;
 * - a stub-zone sends the test zone to our server on loopback;
 * - its root hints point at a loopback address where nothing listens, and outgoing
 *   queries leave from 127.0.0.1 only, so it can never reach a real root server;
 * - no trust anchor at all, so the test zone is insecure, not bogus;
 * - the subnetcache module sends ECS upstream (`send-client-subnet`).
 *
 * Readiness is Unbound's "start of service" log line, waited for with a bound.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from './dig.js';
import type { Endpoint } from './net.js';
import { freePort } from './ports.js';
import { requireTool } from './tools.js';

export interface UnboundOptions {
  /** Our authoritative server (UDP and TCP on the same port). */
  upstream: Endpoint;
  /** The zone to stub to `upstream`. Default gslb.example.com. */
  zone?: string;
  /** Bound on the wait for "start of service". Default 20 s. */
  readyTimeoutMs?: number;
}

export interface RunningUnbound {
  endpoint: Endpoint;
  dir: string;
  confFile: string;
  proc: ChildProcess;
  /** Unbound's log lines so far (stderr and stdout). */
  logs: string[];
  stop(): Promise<void>;
}

/** Unbound's config text for the given directory, port and upstream (exported for inspection). */
export function unboundConfig(dir: string, port: number, o: UnboundOptions): string {
  const zone = o.zone ?? 'gslb.example.com';
  return `# Written by test/helpers/unbound.ts for one test run; never touches /etc/unbound.
server:
  verbosity: 1
  num-threads: 1
  interface: 127.0.0.1
  port: ${port}
  outgoing-interface: 127.0.0.1
  do-ip4: yes
  do-ip6: no
  do-udp: yes
  do-tcp: yes
  access-control: 127.0.0.0/8 allow
  username: ""
  chroot: ""
  directory: "${dir}"
  pidfile: "${join(dir, 'unbound.pid')}"
  use-syslog: no
  logfile: ""
  log-time-ascii: yes
  root-hints: "${join(dir, 'root.hints')}"
  do-not-query-localhost: no
  module-config: "subnetcache validator iterator"
  send-client-subnet: ${o.upstream.host}
  client-subnet-always-forward: yes
  edns-buffer-size: 1232
  prefetch: no
  cache-min-ttl: 0
  so-reuseport: no

remote-control:
  control-enable: no

stub-zone:
  name: "${zone}."
  stub-addr: ${o.upstream.host}@${o.upstream.port}
`;
}

/** Root hints naming one root server on a loopback address where nothing listens. */
export const ROOT_HINTS = `; Test root hints: one root server on a loopback address where nothing listens,
; so that this resolver can never query the real root.
.                 3600000  NS  a.root-servers.invalid.
a.root-servers.invalid.  3600000  A   127.0.0.254
`;

/** Starts Unbound; throws (naming the Debian package) when it is not installed. */
export async function startUnbound(o: UnboundOptions): Promise<RunningUnbound> {
  const bin = requireTool('unbound');
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-unbound-'));
  const port = await freePort('127.0.0.1');
  const confFile = join(dir, 'unbound.conf');
  writeFileSync(join(dir, 'root.hints'), ROOT_HINTS);
  writeFileSync(confFile, unboundConfig(dir, port, o));

  const checkconf = requireTool('unbound-checkconf');
  const chk = await run(checkconf, [confFile], 20000);
  if (chk.code !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`unbound-checkconf rejected the test config:\n${chk.stdout}${chk.stderr}`);
  }

  const proc = spawn(bin, ['-d', '-c', confFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  // Never outlive the test process, even when it ends without running the suite's after().
  const killOnExit = () => proc.kill('SIGKILL');
  process.once('exit', killOnExit);
  proc.once('exit', () => process.removeListener('exit', killOnExit));
  const logs: string[] = [];
  let exited = false;
  const exitPromise = new Promise<void>((resolve) => proc.once('exit', () => ((exited = true), resolve())));
  const stop = async () => {
    if (!exited) {
      proc.kill('SIGTERM');
      const t = setTimeout(() => {
        if (!exited) proc.kill('SIGKILL');
      }, 5000);
      await exitPromise;
      clearTimeout(t);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const readyTimeoutMs = o.readyTimeoutMs ?? 20000;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`unbound: no "start of service" within ${readyTimeoutMs} ms:\n${logs.join('\n')}`)), readyTimeoutMs);
      for (const s of [proc.stdout, proc.stderr]) {
        s?.setEncoding('utf8');
        s?.on('data', (d: string) => {
          for (const line of d.split('\n')) if (line) logs.push(line);
          if (/start of service/.test(d)) {
            clearTimeout(timer);
            resolve();
          }
        });
      }
      void exitPromise.then(() => {
        clearTimeout(timer);
        reject(new Error(`unbound exited before "start of service":\n${logs.join('\n')}`));
      });
    });
  } catch (e) {
    await stop();
    throw e;
  }
  return { endpoint: { host: '127.0.0.1', port }, dir, confFile, proc, logs, stop };
}
