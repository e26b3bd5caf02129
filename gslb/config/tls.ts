/**
 * The HTTP API's TLS files (`http.tls`): reading and checking the server certificate, its
 * key and the CA of client certificates, for the configuration loader (every problem a
 * ConfigIssue at `http.tls.*`, so check-config, serve and a reload report them alike) and
 * for the server (the options of node:https, read once at start).
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ServerOptions } from 'node:https';
import type { Config } from './schema.js';

export type HttpTlsConfig = NonNullable<Config['http']['tls']>;

/** One problem with `http.tls.<key>`: the message says what is wrong and how to fix it. */
export interface TlsProblem {
  key: 'cert' | 'key' | 'clientCa' | 'requireClientCert';
  message: string;
}

/** What the files hold once read and checked. */
export interface HttpTls {
  /** The options of https.createServer: cert, key and, with clientCa, the client-certificate checks. */
  options: ServerOptions;
  /** Client certificates are asked for (clientCa set). */
  requestCert: boolean;
  /** A connection without a valid client certificate is refused at the handshake. */
  requireClientCert: boolean;
  /** Absolute paths of the files, for the log. */
  files: { cert: string; key: string; clientCa?: string };
  /** The server certificate's subject, subjectAltName and expiry, for the log. */
  subject: string;
  subjectAltName: string | undefined;
  validTo: Date;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** A read error in words, with what to do about it. */
function whyUnreadable(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'it does not exist';
  if (code === 'EISDIR') return 'it is a folder, not a file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied: make it readable by the user GridSteer runs as';
  return code ?? (e as Error).message;
}

/** The certificates of a PEM file, in order; a string is the problem. */
function certificates(pem: string): X509Certificate[] | string {
  const blocks = pem.match(PEM_CERT) ?? [];
  if (blocks.length === 0) return 'holds no PEM certificate (no "-----BEGIN CERTIFICATE-----" block)';
  const out: X509Certificate[] = [];
  for (const [i, b] of blocks.entries()) {
    try {
      out.push(new X509Certificate(b));
    } catch (e) {
      return `holds a certificate that does not parse (block ${i + 1}: ${(e as Error).message})`;
    }
  }
  return out;
}

/**
 * Reads and checks the files of `http.tls`, relative to `baseDir` (the folder of
 * gridsteer.yaml): each exists and is readable, the certificate and the CA file hold PEM
 * certificates, the key is an unencrypted PEM private key that belongs to the (first)
 * certificate, and requireClientCert comes with clientCa. Never throws.
 */
export function readHttpTls(tls: HttpTlsConfig, baseDir: string): { tls: HttpTls | null; problems: TlsProblem[] } {
  const problems: TlsProblem[] = [];
  const files = { cert: resolve(baseDir, tls.cert), key: resolve(baseDir, tls.key), ...(tls.clientCa === undefined ? {} : { clientCa: resolve(baseDir, tls.clientCa) }) };
  const what = { cert: 'the server certificate (PEM, with any intermediates after it)', key: "the server certificate's private key (PEM)", clientCa: 'the CA certificate(s) that sign client certificates (PEM)' };
  const read = (k: 'cert' | 'key' | 'clientCa'): string | null => {
    const file = files[k]!;
    try {
      return readFileSync(file, 'utf8');
    } catch (e) {
      problems.push({
        key: k,
        message: `cannot read ${file} (${whyUnreadable(e)}), set by http.tls.${k} relative to this file: check the path, or point http.tls.${k} at ${what[k]}`,
      });
      return null;
    }
  };

  let leaf: X509Certificate | null = null;
  const certPem = read('cert');
  if (certPem !== null) {
    const certs = certificates(certPem);
    if (typeof certs === 'string') problems.push({ key: 'cert', message: `${files.cert} ${certs}: point http.tls.cert at ${what.cert}` });
    else leaf = certs[0]!;
  }

  let key: KeyObject | null = null;
  const keyPem = read('key');
  if (keyPem !== null) {
    try {
      key = createPrivateKey({ key: keyPem, format: 'pem' });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const encrypted = err.code === 'ERR_MISSING_PASSPHRASE' || /ENCRYPTED/.test(keyPem);
      problems.push({
        key: 'key',
        message: encrypted
          ? `${files.key} is encrypted with a passphrase, which GridSteer cannot ask for: decrypt it (openssl pkey -in KEY -out KEY.plain) and keep the file readable by GridSteer's user only`
          : `${files.key} is not a PEM private key (${err.message}): point http.tls.key at ${what.key}`,
      });
    }
  }
  if (leaf && key && !leaf.checkPrivateKey(key)) {
    problems.push({
      key: 'key',
      message: `${files.key} does not match the certificate ${files.cert} (http.tls.cert, subject "${leaf.subject.replace(/\n/g, ', ')}"): use the key the certificate was issued for, or the certificate issued for this key`,
    });
  }

  let ca: string | null = null;
  if (tls.clientCa !== undefined) {
    ca = read('clientCa');
    if (ca !== null) {
      const certs = certificates(ca);
      if (typeof certs === 'string') {
        problems.push({ key: 'clientCa', message: `${files.clientCa} ${certs}: point http.tls.clientCa at ${what.clientCa}` });
        ca = null;
      }
    }
  } else if (tls.requireClientCert === true) {
    problems.push({
      key: 'requireClientCert',
      message: 'requireClientCert needs clientCa, the CA that client certificates must be signed by: set http.tls.clientCa, or remove requireClientCert',
    });
  }

  if (problems.length > 0 || !leaf || !key || certPem === null || keyPem === null) return { tls: null, problems };
  const requestCert = ca !== null;
  const requireClientCert = requestCert && tls.requireClientCert !== false;
  return {
    tls: {
      options: {
        cert: certPem,
        key: keyPem,
        ...(ca !== null ? { ca } : {}),
        requestCert,
        rejectUnauthorized: requireClientCert,
      },
      requestCert,
      requireClientCert,
      files,
      subject: leaf.subject.replace(/\n/g, ', '),
      subjectAltName: leaf.subjectAltName,
      validTo: new Date(leaf.validTo),
    },
    problems,
  };
}
