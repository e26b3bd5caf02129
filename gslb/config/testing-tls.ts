/**
 * Test certificates, made with the `openssl` command (Debian package openssl) into a folder:
 * a CA with a server certificate for 127.0.0.1 and a client certificate, and a second CA
 * with a client certificate of its own. EC P-256 keys, valid two days. For tests only
 * (gslb/config/tls.test.ts, test/https-api.test.ts).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Absolute paths of the PEM files made. */
export interface TestCerts {
  dir: string;
  /** The CA that signs the server and the good client certificate. */
  ca: string;
  /** subjectAltName IP:127.0.0.1, signed by `ca`. */
  serverCert: string;
  serverKey: string;
  /** CN=alice, clientAuth, signed by `ca`. */
  clientCert: string;
  clientKey: string;
  /** Another CA, which the server does not trust. */
  otherCa: string;
  /** CN=mallory, clientAuth, signed by `otherCa`. */
  otherClientCert: string;
  otherClientKey: string;
  /** A key that belongs to no certificate here. */
  strayKey: string;
}

function openssl(dir: string, args: string[]): void {
  const r = spawnSync('openssl', args, { cwd: dir, timeout: 20000 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error('openssl is not installed: this test needs it. Install the Debian package: apt-get install -y openssl');
  }
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed (exit ${r.status}): ${r.stderr?.toString()}`);
}

/** Makes the certificates in `dir` (which must exist). */
export function makeTestCerts(dir: string): TestCerts {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const caExt = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'];
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  const sign = (name: string, cn: string, ca: string, ext: string) => {
    openssl(dir, ['req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
    openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-set_serial', String(Math.floor(Math.random() * 1e12)), '-out', `${name}.crt`, '-days', '2', '-extfile', ext]);
  };
  openssl(dir, ['req', '-x509', ...ec, ...caExt, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=gridsteer test CA']);
  openssl(dir, ['req', '-x509', ...ec, ...caExt, '-keyout', 'other-ca.key', '-out', 'other-ca.crt', '-days', '2', '-subj', '/CN=another CA']);
  sign('server', '127.0.0.1', 'ca', 'server.ext');
  sign('client', 'alice', 'ca', 'client.ext');
  sign('other-client', 'mallory', 'other-ca', 'client.ext');
  openssl(dir, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'stray.key']);
  const p = (f: string) => join(dir, f);
  return {
    dir,
    ca: p('ca.crt'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
    otherCa: p('other-ca.crt'),
    otherClientCert: p('other-client.crt'),
    otherClientKey: p('other-client.key'),
    strayKey: p('stray.key'),
  };
}
