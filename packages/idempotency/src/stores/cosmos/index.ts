/** `azure-functions-idempotency/cosmos`: the Azure Cosmos DB for NoSQL store (peer dependency `@azure/cosmos`). */
export { CosmosIdempotencyStore } from './CosmosIdempotencyStore';
export type { CosmosIdempotencyStoreOptions } from './cosmosStoreOptions';
export type { CosmosRequestCharge } from './CosmosMarkers';
