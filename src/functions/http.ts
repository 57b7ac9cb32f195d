import { app } from '@azure/functions';
import { paymentStatusFunction, paymentWebhookFunction, paymentsApiFunction } from '../app/host';

/**
 * Registrations of the HTTP functions. `POST /api/payments` needs a function key (`authLevel: 'function'`;
 * the caller's key scopes its Idempotency-Keys); with App Service authentication (Microsoft Entra ID) in
 * front, set `HTTP_CALLER_IDENTITY=easyAuth` and the principal scopes them instead. The provider's webhook
 * is anonymous at the host: its HMAC signature (secret `WEBHOOK_SIGNING_SECRET`) is its authentication.
 */
app.http('paymentsApi', { methods: ['POST'], authLevel: 'function', route: 'payments', handler: paymentsApiFunction() });
app.http('paymentStatus', { methods: ['GET'], authLevel: 'function', route: 'payments/{paymentId}', handler: paymentStatusFunction() });
app.http('paymentProviderWebhook', { methods: ['POST'], authLevel: 'anonymous', route: 'webhooks/payment-provider', handler: paymentWebhookFunction() });
