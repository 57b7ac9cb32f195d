import { problemAnswer, type ApiAnswer } from './httpTypes';

/**
 * The answer of an HTTP function whose own settings are missing or invalid (the rest of the app runs):
 * 503 with `Retry-After` (RFC 9110 §15.6.4: unavailable until an operator fixes the setting). The problem
 * document does not name the setting (callers need not learn the configuration); the app's log line does.
 */
export function notConfiguredAnswer(): ApiAnswer {
  return problemAnswer(503, 'not-configured', 'Not configured', 'this endpoint is not configured yet; retry later', { 'retry-after': '60' });
}
