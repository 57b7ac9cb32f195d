import { paymentsFunctions } from '../app/host';
import { registerPaymentsFunctions } from '../app/paymentsFunctions';

/** Registrations of the payments consumer: trigger, orchestration, entity and activity (see `registerPaymentsFunctions`). */
registerPaymentsFunctions(paymentsFunctions());
