/** The orders consumer (Service Bus -> Cosmos DB): knows nothing of the Functions runtime. */
export * from './messages';
export * from './documents';
export * from './errors';
export * from './cosmosErrors';
export * from './OrdersStore';
export * from './handleOrderPlaced';
export * from './handleStatusChanged';
export * from './ordersHandler';
