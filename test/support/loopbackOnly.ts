// Every test file loads this (jest.config.js `setupFilesAfterEnv`): the brief's network rule made a guard. A test may
// open sockets to loopback only; any other address (an Azure host a client was pointed at, the instance metadata service
// 169.254.169.254 that a managed-identity credential or a telemetry resource detector asks) fails at once as a refused
// connection, named on stderr with the test file, instead of leaving the worker waiting on an address that may never
// answer (seen: a CI run stalled 25 min on 7 open connections to 169.254.169.254:80). Child processes (Azurite, the
// Durable host, func) are configured by the tests to loopback and are not covered here.
import http from 'node:http';
import net from 'node:net';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1']);

/** True for a host a test may reach: loopback by name or address, `*.localhost` (RFC 6761). */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined || host === '') return true; // Node's default host is localhost
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  if (LOOPBACK_NAMES.has(h) || h.endsWith('.localhost')) return true;
  return net.isIPv4(h) && h.startsWith('127.');
}

/** The host and whether the target is a pipe, from `Socket#connect`'s overloads (options, [port, host], [path]). */
function targetOf(args: unknown[]): { host?: string; port?: unknown; pipe: boolean } {
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  if (typeof first === 'object' && first !== null) {
    const o = first as { host?: string; port?: unknown; path?: string | null };
    return typeof o.path === 'string' && o.path !== '' ? { pipe: true } : { host: o.host, port: o.port, pipe: false };
  }
  if (typeof first === 'string' && !/^\d+$/.test(first)) return { pipe: true }; // connect(path)
  const host = typeof args[1] === 'string' ? args[1] : undefined;
  return { host, port: first, pipe: false };
}

/** Shared by every test file of a worker: `net` is Node's own module, not one of jest's per-file sandboxes. */
const CURRENT = Symbol.for('loopbackOnly.currentTest');
const state = net as unknown as Record<symbol, string | undefined>;
const RUNNING = Symbol.for('loopbackOnly.runningTest');
beforeAll(() => {
  state[CURRENT] = expect.getState().testPath ?? 'a test';
  state[RUNNING] = undefined;
});
// The test running when a socket is asked for, or the last one to end (what it left behind may be dialling out).
beforeEach(() => {
  state[RUNNING] = `running: ${expect.getState().currentTestName ?? '?'}`;
});
afterEach(() => {
  state[RUNNING] = `after: ${expect.getState().currentTestName ?? '?'}`;
});

/**
 * The HTTP request a socket is being made for (`Agent#createSocket` runs just before the connect): its method, host and
 * path, and the User-Agent, which names the SDK package that sent it (an identity's token request, a telemetry probe).
 */
const PENDING = Symbol.for('loopbackOnly.pendingRequest');
const agent = http.Agent.prototype as unknown as { createSocket: (req: http.ClientRequest, ...rest: unknown[]) => unknown } & Record<symbol, unknown>;
if (agent[PENDING] === undefined) {
  const createSocket = agent.createSocket;
  agent[PENDING] = '';
  agent.createSocket = function (this: http.Agent, req: http.ClientRequest, ...rest: unknown[]) {
    agent[PENDING] = `${req.method} ${req.host}${req.path} (User-Agent: ${String(req.getHeader('user-agent') ?? 'none')})`;
    try {
      return createSocket.call(this, req, ...rest);
    } finally {
      agent[PENDING] = '';
    }
  };
}

const original = net.Socket.prototype.connect;
if ((original as { loopbackOnly?: boolean }).loopbackOnly !== true) {
  const guarded = function (this: net.Socket, ...args: unknown[]): net.Socket {
    const target = targetOf(args);
    if (target.pipe || isLoopbackHost(target.host)) return (original as (...a: unknown[]) => net.Socket).apply(this, args);
    const where = `${target.host}:${String(target.port)}`;
    const running = state[RUNNING];
    const test = `${state[CURRENT] ?? 'a test'}${running ? ` (${running})` : ''}`;
    // The caller's frames name the code that dialled out (the last test file to start in this worker may not be it):
    // the first few, then every frame outside node_modules and Node's own (the await chain that led here).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 80;
    const all = (new Error().stack ?? '').split('\n').slice(2);
    Error.stackTraceLimit = limit;
    const frames = [...all.slice(0, 6), ...all.slice(6).filter((f) => !/node_modules|\(node:|at node:/.test(f))].join('\n');
    const request = agent[PENDING] ? `\n  for the HTTP request ${String(agent[PENDING])}` : '';
    process.stderr.write(`loopbackOnly: ${test} tried to connect to ${where}; refused (tests reach loopback only)${request}\n${frames}\n`);
    const error = Object.assign(new Error(`connect ECONNREFUSED ${where} (loopbackOnly: tests reach loopback only)`), {
      code: 'ECONNREFUSED',
      address: target.host,
      port: target.port,
    });
    process.nextTick(() => this.destroy(error));
    return this;
  };
  (guarded as { loopbackOnly?: boolean }).loopbackOnly = true;
  net.Socket.prototype.connect = guarded;
}
