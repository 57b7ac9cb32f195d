import { app } from '@azure/functions';
import { expiryTimerFunction } from '../app/host';

/** Registration of the expiry timer: one budgeted sweep of expired dedup records per tick. */
app.timer('expiryTimer', { schedule: '%EXPIRY_TIMER_SCHEDULE%', handler: expiryTimerFunction() });
