// The uWS app and its listening socket: plain or TLS, an exclusive port, and a renewed certificate
// taken without a moment when nobody listens.
import type { us_listen_socket } from 'uWebSockets.js';
import type { Config } from '../core/config.js';
import type { UwsModule } from './uws.js';

/** TLS 1.2 with forward secrecy and AEAD only (TLS 1.3 is always on): older protocols cannot agree on any of these. */
const MODERN_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT and LIBUS_LISTEN_DEFAULT (SO_REUSEPORT). */
const LISTEN_EXCLUSIVE_PORT = 1;
const LISTEN_SHARED_PORT = 0;

export type UwsApp = ReturnType<UwsModule['App']>;

export class Listener {
  private app: UwsApp;
  private socket: us_listen_socket | null = null;
  private bound: { host: string; port: number } | null = null;

  constructor(
    private readonly uws: UwsModule,
    private readonly tls: Config['tls'],
    /** Puts the server's handlers on a new app (at start, and for each renewed certificate). */
    private readonly mount: (app: UwsApp) => void,
  ) {
    this.app = this.newApp();
  }

  private newApp(): UwsApp {
    const app = this.tls ? this.uws.SSLApp({ cert_file_name: this.tls.cert, key_file_name: this.tls.key, ssl_ciphers: MODERN_CIPHERS }) : this.uws.App();
    this.mount(app);
    return app;
  }

  private listenOn(target: UwsApp, host: string, port: number, options: number): Promise<us_listen_socket> {
    return new Promise<us_listen_socket>((resolve, reject) => {
      const listen = target.listen as unknown as (h: string, p: number, options: number, cb: (s: us_listen_socket | false) => void) => void;
      listen.call(target, host, port, options, (sock) => (sock ? resolve(sock) : reject(new Error(`cannot listen on ${host}:${port} (address in use or not available)`))));
    });
  }

  async listen(host: string, port: number): Promise<number> {
    // Exclusive: uWS otherwise shares the port (SO_REUSEPORT) with a server already running
    // there, and requests would alternate between the two. With HTTPS the port must be shared
    // with this server's own next listener when a renewed certificate comes in (reloadTls), so
    // exclusivity is checked first with a probe, then the listener opens shareable.
    // (uSockets makes a listener shareable only on a given port, so port 0 is resolved by the probe.)
    if (this.tls) {
      const probe = await this.listenOn(this.uws.App(), host, port, LISTEN_EXCLUSIVE_PORT);
      port = this.uws.us_socket_local_port(probe);
      this.uws.us_listen_socket_close(probe);
    }
    this.socket = await this.listenOn(this.app, host, port, this.tls ? LISTEN_SHARED_PORT : LISTEN_EXCLUSIVE_PORT);
    this.bound = { host, port: this.uws.us_socket_local_port(this.socket) };
    return this.bound.port;
  }

  /** With HTTPS: takes the certificate files again (new connections get the new one; open ones keep theirs). */
  async reloadTls(): Promise<void> {
    if (!this.tls || !this.bound || !this.socket) return;
    // The new certificate's listener opens beside the old one (both shareable), then the old one
    // closes: no moment without a listener, and open connections keep the app they started with.
    const next = this.newApp();
    const sock = await this.listenOn(next, this.bound.host, this.bound.port, LISTEN_SHARED_PORT);
    this.uws.us_listen_socket_close(this.socket);
    this.socket = sock;
    this.app = next;
  }

  /** Stops accepting connections. */
  close(): void {
    if (this.socket) this.uws.us_listen_socket_close(this.socket);
    this.socket = null;
  }
}
