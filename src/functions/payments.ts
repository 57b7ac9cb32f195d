import { paymentsFunctions } from '../app/host';
import { registerPaymentsFunctions } from '../app/paymentsFunctions';

/** Registrations of the payments consumer: trigger, orchestration, entity and activity (see `registerPaymentsFunctions`); none when its settings are bad. */
const functions = paymentsFunctions();
if (functions) registerPaymentsFunctions(functions);
