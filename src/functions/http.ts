import { app } from '@azure/functions';
import { ALL_HTTP_METHODS, HTTP_FUNCTIONS } from '../app/http';
import { paymentStatusFunction, paymentWebhookFunction, paymentsApiFunction } from '../app/host';

/**
 * Registrations of the HTTP functions, for every method: the app answers a method it does not allow with
 * 405 and `Allow` (the host would answer 404). `POST /api/payments` needs a function key (`authLevel:
 * 'function'`; the caller's key scopes its Idempotency-Keys); with App Service authentication (Microsoft
 * Entra ID) in front, set `HTTP_CALLER_IDENTITY=easyAuth` and the principal scopes them instead. The
 * provider's webhook is anonymous at the host: its HMAC signature (`WEBHOOK_SIGNING_SECRET`) is its authentication.
 */
const register = (name: keyof typeof HTTP_FUNCTIONS, handler: ReturnType<typeof paymentsApiFunction>) =>
  app.http(name, { methods: [...ALL_HTTP_METHODS], authLevel: HTTP_FUNCTIONS[name].authLevel, route: HTTP_FUNCTIONS[name].route, handler });

register('paymentsApi', paymentsApiFunction());
register('paymentStatus', paymentStatusFunction());
register('paymentProviderWebhook', paymentWebhookFunction());
