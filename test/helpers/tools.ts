/**
 * External programs the suites drive (dig, kdig, unbound). A missing tool fails the test
 * that needs it with the Debian package to install; it never skips.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

const DEBIAN_PACKAGE: Record<string, string> = {
  dig: 'bind9-dnsutils',
  kdig: 'knot-dnsutils',
  unbound: 'unbound',
  'unbound-checkconf': 'unbound',
  'redis-server': 'redis-server',
  'redis-sentinel': 'redis-server',
  'redis-cli': 'redis-tools',
  mosquitto: 'mosquitto',
  mosquitto_passwd: 'mosquitto',
  openssl: 'openssl',
};

/** The absolute path of `name` in PATH (plus /usr/sbin and /sbin), or null. */
export function findTool(name: string): string | null {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/sbin', '/usr/bin'];
  for (const d of dirs) {
    if (!d) continue;
    const p = join(d, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // keep looking
    }
  }
  return null;
}

/** The path of a required tool; throws naming the Debian package when it is missing. */
export function requireTool(name: string): string {
  const p = findTool(name);
  if (p) return p;
  const pkg = DEBIAN_PACKAGE[name] ?? name;
  throw new Error(`${name} is not installed: this test needs it. Install the Debian package: apt-get install -y ${pkg}`);
}
