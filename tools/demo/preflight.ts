import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { assertLoopback } from './providerLedger';

/** Checks of `PAYMENT_PROVIDER_URL` before a run: one that is not http(s), not loopback or not answering fails every payment. */

/**
 * The shape of `PAYMENT_PROVIDER_URL`: an http or https URL on a loopback host.
 * @throws Error naming the variable, the value and what it must be.
 */
export function checkProviderUrlShape(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`PAYMENT_PROVIDER_URL ${JSON.stringify(url)} is not a URL; give http://127.0.0.1:<port> (npm run provider) or unset it`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new Error(`PAYMENT_PROVIDER_URL ${url} must be an http or https URL, not ${parsed.protocol.replace(/:$/, '')}`);
  }
  assertLoopback(url);
}

/**
 * Whether the provider at `url` answers HTTP at all (any status counts: the check is that something
 * speaks HTTP there, not what it says). https accepts a self-signed certificate here: it is loopback.
 * @returns undefined when it answered, else the reason in words (e.g. `connection refused`).
 */
export function probeProvider(url: string, timeoutMs = 3_000): Promise<string | undefined> {
  return new Promise((resolve) => {
    const target = new URL(url);
    const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(target, { method: 'GET', timeout: timeoutMs, rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(undefined);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (error: NodeJS.ErrnoException) => {
      const words: Record<string, string> = {
        ECONNREFUSED: 'connection refused: nothing listens on that port',
        ECONNRESET: 'the connection was reset: it does not speak HTTP',
        EPROTO: 'the TLS handshake failed: it does not speak https',
        HPE_INVALID_CONSTANT: 'it does not speak HTTP',
      };
      resolve(words[error.code ?? ''] ?? error.message);
    });
    req.end();
  });
}

/**
 * The whole check of `PAYMENT_PROVIDER_URL` before a run.
 * @returns undefined when it can be used, else the one line to print (the run then exits 2).
 */
export async function checkProvider(url: string): Promise<string | undefined> {
  try {
    checkProviderUrlShape(url);
  } catch (error) {
    return (error as Error).message;
  }
  const problem = await probeProvider(url);
  return problem === undefined
    ? undefined
    : `PAYMENT_PROVIDER_URL ${url} does not answer (${problem}); start one with \`npm run provider\` or unset PAYMENT_PROVIDER_URL to use the demo's own`;
}
