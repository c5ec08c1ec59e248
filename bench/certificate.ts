// A self-signed certificate for 127.0.0.1 and localhost, made with openssl, for the tests and
// benches that run the server over HTTPS.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';

export const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

/** Writes `name`.pem and `name`.key into `dir`; answers their paths. */
export function selfSignedCertificate(dir: string, name: string): { cert: string; key: string } {
  const cert = path.join(dir, `${name}.pem`);
  const key = path.join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}
