export * from './messageInfo';
export * from './body';
export * from './ParkingStore';
export * from './reportOutcome';
