import { problemAnswer, type ApiAnswer, type ApiRequest } from './httpTypes';

/**
 * An endpoint that answers only `methods` (RFC 9110 §15.5.6): any other method gets 405 with an `Allow`
 * header listing them. The HTTP functions are registered for every method so that the app, not the host,
 * answers a wrong method (the host would answer 404, as if the resource did not exist). `HEAD` where `GET`
 * is allowed gets the GET answer without its body (§9.3.2); `OPTIONS` gets 204 with the same `Allow` (§9.3.7).
 */
export function allowMethods(methods: readonly string[], endpoint: (request: ApiRequest) => Promise<ApiAnswer>): (request: ApiRequest) => Promise<ApiAnswer> {
  const allowed = [...methods, ...(methods.includes('GET') && !methods.includes('HEAD') ? ['HEAD'] : []), ...(methods.includes('OPTIONS') ? [] : ['OPTIONS'])];
  const allow = allowed.join(', ');
  return async (request) => {
    const method = request.method.toUpperCase();
    if (method === 'OPTIONS') return { status: 204, headers: { allow }, body: Buffer.alloc(0) };
    if (!allowed.includes(method)) {
      return problemAnswer(405, 'method-not-allowed', 'Method not allowed', `${method} is not allowed here; use ${allow}`, { allow });
    }
    if (method === 'HEAD') {
      const answer = await endpoint({ ...request, method: 'GET' });
      return { ...answer, body: Buffer.alloc(0) };
    }
    return endpoint(request);
  };
}

/** Every method the HTTP functions are registered for (the app answers 405 to those it does not allow). */
export const ALL_HTTP_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'] as const;
