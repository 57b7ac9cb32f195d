import { app } from '@azure/functions';
import { expiryTimerFunction } from '../app/host';

/** Registration of the expiry timer: one budgeted sweep of expired dedup records per tick (not registered when its settings are bad). */
const handler = expiryTimerFunction();
if (handler) app.timer('expiryTimer', { schedule: '%EXPIRY_TIMER_SCHEDULE%', handler });
