export * from './messageInfo';
export * from './body';
export * from './bodyBytes';
export * from './delivery';
export * from './keyedMessage';
export * from './ParkingStore';
export * from './reportOutcome';
