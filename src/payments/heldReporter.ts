import type { Claim } from 'azure-functions-idempotency';
import { MetricNames, type Telemetry } from '../telemetry/Telemetry';
import type { HeldReporter } from './chargeOnce';

/**
 * Counts `payments.held` (error log with key and reason) and `payments.provider.lookup_unsupported` (each time; the
 * configuration error is logged once per process, loudly, not once per payment).
 */
export function heldReporter(telemetry: () => Telemetry): HeldReporter {
  let lookupReported = false;
  return {
    held(input, reason) {
      const t = telemetry();
      t.count(MetricNames.paymentsHeld, { consumer: 'payments' });
      const attempt = (input as { readonly recordClaim?: Claim }).recordClaim?.attempt;
      t.log('error', `payments: held for an operator (${reason})`, {
        consumer: 'payments',
        outcome: 'held',
        idempotencyKey: input.idempotencyKey,
        ...(attempt === undefined ? {} : { attempt }),
        reason,
      });
    },
    lookupUnsupported(input, statusCode) {
      const t = telemetry();
      t.count(MetricNames.providerLookupUnsupported, { consumer: 'payments', statusCode });
      if (lookupReported) return;
      lookupReported = true;
      t.log(
        'error',
        `payments: configuration error: the provider answered ${statusCode} to a charge look-up, so it offers none; ` +
          'set PAYMENT_PROVIDER_LOOKUP=none (payments that need a look-up are held for an operator meanwhile)',
        { consumer: 'payments', outcome: 'lookup-unsupported', idempotencyKey: input.idempotencyKey, statusCode },
      );
    },
  };
}
