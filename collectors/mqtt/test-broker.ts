/**
 * A real Mosquitto broker for the tests of this folder: its own process on a free loopback
 * port, with a generated config in a temp dir (never the broker on 1883). Tests only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const MOSQUITTO = '/usr/sbin/mosquitto';

/** A free TCP port on 127.0.0.1 (bound, read and released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** Resolves once something accepts connections on 127.0.0.1:port, within `ms`. */
async function reachable(port: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const ok = await new Promise<boolean>((r) => {
      const c = net.connect({ host: '127.0.0.1', port });
      c.once('connect', () => {
        c.destroy();
        r(true);
      });
      c.once('error', () => r(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

export interface BrokerOptions {
  /** user → password; when given, anonymous clients are refused. */
  users?: Record<string, string>;
  /** Listen with TLS: a CA and a server certificate for IP 127.0.0.1 are generated (openssl); the CA is `caFile`. */
  tls?: boolean;
}

function openssl(dir: string, args: string[]): void {
  const r = spawnSync('openssl', args, { cwd: dir, timeout: 10000 });
  if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr?.toString()}`);
}

/** One Mosquitto process; stop() and start() again keep its port and config (a restart). */
export class TestBroker {
  readonly dir: string;
  private proc: ChildProcess | null = null;
  private log = '';
  private tls = false;

  private constructor(
    readonly port: number,
    o: BrokerOptions,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'gs-mosquitto-'));
    // Mosquitto run as root reads its files as the mosquitto user: let it.
    chmodSync(this.dir, 0o755);
    const conf = [`listener ${port} 127.0.0.1`, 'persistence false', 'log_type error', 'log_type warning'];
    if (o.tls) {
      const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
      openssl(this.dir, ['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=gridsteer test CA']);
      openssl(this.dir, ['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
      writeFileSync(join(this.dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
      openssl(this.dir, ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'ext.cnf']);
      for (const f of ['ca.crt', 'server.crt', 'server.key']) chmodSync(join(this.dir, f), 0o644);
      conf.push(`cafile ${join(this.dir, 'ca.crt')}`, `certfile ${join(this.dir, 'server.crt')}`, `keyfile ${join(this.dir, 'server.key')}`);
      this.tls = true;
    }
    if (o.users) {
      const pw = join(this.dir, 'passwd');
      writeFileSync(pw, '');
      for (const [u, p] of Object.entries(o.users)) {
        const r = spawnSync('mosquitto_passwd', ['-b', pw, u, p], { timeout: 5000 });
        if (r.status !== 0) throw new Error(`mosquitto_passwd failed: ${r.stderr?.toString()}`);
      }
      chmodSync(pw, 0o644);
      conf.push('allow_anonymous false', `password_file ${pw}`);
    } else {
      conf.push('allow_anonymous true');
    }
    writeFileSync(join(this.dir, 'mosquitto.conf'), conf.join('\n') + '\n');
    chmodSync(join(this.dir, 'mosquitto.conf'), 0o644);
  }

  /** Starts a broker on a free loopback port; resolves once it accepts connections. */
  static async create(o: BrokerOptions = {}): Promise<TestBroker> {
    const b = new TestBroker(await freePort(), o);
    await b.start();
    return b;
  }

  get url(): string {
    return `${this.tls ? 'mqtts' : 'mqtt'}://127.0.0.1:${this.port}`;
  }

  /** With `tls`: the PEM file of the CA that signed the broker's certificate. */
  get caFile(): string {
    return join(this.dir, 'ca.crt');
  }

  /** What the broker printed (for assertion messages). */
  output(): string {
    return this.log.slice(-4000);
  }

  async start(): Promise<void> {
    if (this.proc) return;
    const p = spawn(MOSQUITTO, ['-c', join(this.dir, 'mosquitto.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.proc = p;
    p.stderr!.on('data', (d: Buffer) => {
      this.log = (this.log + d.toString()).slice(-16000);
    });
    p.once('exit', () => {
      if (this.proc === p) this.proc = null;
    });
    if (!(await reachable(this.port, 5000))) {
      await this.stop();
      throw new Error(`mosquitto did not listen on 127.0.0.1:${this.port} within 5 s: ${this.output()}`);
    }
  }

  /** Kills the broker (SIGKILL: no clean shutdown, like a crash) and waits for it to exit. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.proc;
    if (!p) return;
    this.proc = null;
    if (p.exitCode !== null || p.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 3000);
      p.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      p.kill(signal);
    });
  }

  /** Stops the broker and removes its temp dir. */
  async close(): Promise<void> {
    await this.stop('SIGTERM');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
