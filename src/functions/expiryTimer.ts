import { app } from '@azure/functions';
import * as df from 'durable-functions';
import { expiryTimerFunction } from '../app/host';

/**
 * Registration of the expiry timer: one budgeted sweep of expired dedup records per tick, then Durable's purge
 * (its client input). Not registered when its settings are bad.
 */
const handler = expiryTimerFunction();
if (handler) app.timer('expiryTimer', { schedule: '%EXPIRY_TIMER_SCHEDULE%', extraInputs: [df.input.durableClient()], handler });
