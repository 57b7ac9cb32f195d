import { rewardsFunction } from '../app/host';
import { registerRewardsFunction } from '../app/rewardsFunction';

/** Registration of the rewards consumer: Event Hubs `%REWARDS_EVENT_HUB_NAME%` batches -> loyalty points (not registered when its settings are bad). */
const handler = rewardsFunction();
if (handler) registerRewardsFunction(handler);
