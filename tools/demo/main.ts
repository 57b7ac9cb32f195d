/**
 * `npm run demo`: the app's main job run locally. The full chaos demo (local Service Bus engine,
 * Durable executor, fault injection) comes with its own issue; until then this prints what exists.
 */
function main(): void {
  console.log(
    [
      'azure-idempotent-consumer: local demo',
      '',
      'Built so far:',
      '  - idempotency core (src/core): keys, digest, Table encoding, TableIdempotencyStore, makeIdempotent',
      '  - tests on a real Azurite: npm test',
      '',
      'Not built yet: the payments and orders consumers, the expiry timer and the chaos demo.',
    ].join('\n'),
  );
}

main();
