import { app } from '@azure/functions';
import { ledgerCheckFunction } from '../app/host';

/**
 * Registration of the ledger check: each tick matches the provider's charges of a window (lagged by
 * `PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS`) to their payments records (src/app/ledgerCheckTimer.ts). Not registered
 * when its settings are bad.
 */
const handler = ledgerCheckFunction();
if (handler) app.timer('ledgerCheck', { schedule: '%LEDGER_CHECK_SCHEDULE%', handler });
