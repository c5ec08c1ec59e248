// The plain-HTTP door of an HTTPS server (XEO_HTTP_REDIRECT_PORT): it serves nothing and sends
// every request on to the same path over HTTPS, with 308 so methods and bodies are kept.
import type { us_listen_socket } from 'uWebSockets.js';
import type { UwsModule } from './uws.js';

export async function listenRedirect(uws: UwsModule, host: string, port: number, httpsBase: () => string): Promise<{ port: number; close(): void }> {
  const app = uws.App();
  app.any('/*', (res, req) => {
    const query = req.getQuery();
    const location = `${httpsBase()}${req.getUrl()}${query ? `?${query}` : ''}`;
    res.cork(() => {
      res.writeStatus('308 Permanent Redirect');
      res.writeHeader('Location', location);
      res.writeHeader('X-Content-Type-Options', 'nosniff');
      res.end();
    });
  });
  const sock = await new Promise<us_listen_socket>((resolve, reject) =>
    app.listen(host, port, (s) => (s ? resolve(s) : reject(new Error(`cannot listen on ${host}:${port} (address in use or not available)`)))),
  );
  return { port: uws.us_socket_local_port(sock), close: () => uws.us_listen_socket_close(sock) };
}
