// The network guard every test file runs under (test/support/loopbackOnly.ts): a socket to a non-loopback address is
// refused at once, without a packet leaving; loopback connects as usual.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { isLoopbackHost } from '../support/loopbackOnly';

function connectError(options: net.NetConnectOpts): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect(options);
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error));
  });
}

describe('loopbackOnly', () => {
  it('knows loopback by name and address', () => {
    for (const host of ['localhost', '127.0.0.1', '127.8.9.1', '::1', '[::1]', 'devstoreaccount1.localhost', undefined]) {
      expect(isLoopbackHost(host)).toBe(true);
    }
    for (const host of ['169.254.169.254', '10.0.0.1', 'example.com', 'a.table.core.windows.net', '128.0.0.1', 'localhost.example.com']) {
      expect(isLoopbackHost(host)).toBe(false);
    }
  });

  it('refuses the instance metadata service at once, with its address in the error', async () => {
    const error = await connectError({ host: '169.254.169.254', port: 80 });
    expect(error?.code).toBe('ECONNREFUSED');
    expect(error?.message).toContain('169.254.169.254:80');
    expect(error?.message).toContain('loopbackOnly');
  });

  it('refuses an HTTP request to a public host (the client sees a refused connection)', async () => {
    const error = await new Promise<NodeJS.ErrnoException>((resolve, reject) => {
      const request = http.get({ host: 'example.com', port: 80, path: '/' }, () => reject(new Error('answered')));
      request.once('error', resolve);
    });
    expect(error.code).toBe('ECONNREFUSED');
  });

  it('names the HTTP request a refused socket was for: method, host, path and the User-Agent (which SDK asked)', async () => {
    const written: string[] = [];
    const spy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      await new Promise<void>((resolve) => {
        const request = http.get({
          host: '169.254.169.254',
          port: 80,
          path: '/metadata/identity/oauth2/token',
          headers: { 'User-Agent': 'azsdk-js-identity/9.9.9' },
        });
        request.once('error', () => resolve());
      });
    } finally {
      spy.mockRestore();
    }
    const line = written.find((w) => w.startsWith('loopbackOnly:'));
    expect(line).toContain('(running: loopbackOnly names the HTTP request a refused socket was for');
    expect(line).toContain('tried to connect to 169.254.169.254:80');
    expect(line).toContain('for the HTTP request GET 169.254.169.254/metadata/identity/oauth2/token (User-Agent: azsdk-js-identity/9.9.9)');
  });

  it('lets loopback through', async () => {
    const server = net.createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      expect(await connectError({ host: '127.0.0.1', port })).toBeUndefined();
      expect(await connectError({ host: 'localhost', port })).toBeUndefined();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
