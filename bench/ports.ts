// Free loopback ports for the throwaway servers of the tests and benches (PostgreSQL, Redis, the
// RADOS Gateway): asked of the kernel, so two starting at once do not pick the same one.
import { createServer } from 'node:net';

/** A port no one listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Whether `port` can be listened on. */
export const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
