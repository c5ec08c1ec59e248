// The baseline for the api bench: a bare uWebSockets.js server that answers fixed paths with fixed
// bytes and headers, synchronously in uWS's own callback, and does nothing else. It loads uWS the
// same way Xeo does, so both run the same native binary.
// Usage: node dist/bench/bare-server.js SPEC.json   (prints "listening on http://127.0.0.1:PORT")
import { readFileSync } from 'node:fs';
import { loadUws } from '../src/server/uws.js';

export interface BareSpec {
  /** Exact request path -> answer. */
  routes: Record<string, { status: string; headers: [string, string][]; bodyBase64: string }>;
}

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8')) as BareSpec;
const uws = loadUws();
const app = uws.App();
for (const [path, r] of Object.entries(spec.routes)) {
  const body = Buffer.from(r.bodyBase64, 'base64');
  app.get(path, (res) => {
    res.writeStatus(r.status);
    for (const [k, v] of r.headers) res.writeHeader(k, v);
    res.end(body);
  });
}
app.any('/*', (res) => void res.writeStatus('404 Not Found').end());
app.listen('127.0.0.1', 0, (sock) => {
  if (!sock) {
    console.error('bare uWS: cannot listen');
    process.exit(1);
  }
  console.log(`bare uWS listening on http://127.0.0.1:${uws.us_socket_local_port(sock)}`);
});
process.on('SIGTERM', () => process.exit(0));
