import { TableClient } from '@azure/data-tables';
import { parkingFromSettings, storeFromSettings } from '../../src/app/stores';
import { loadSettings } from '../../src/config/settings';

// Building sends nothing: these tests need no Azurite.
const settings = loadSettings({
  IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
  IDEMPOTENCY_TABLE_NAME: 'dedup',
  PARKED_TABLE_NAME: 'parked',
  IDEMPOTENCY_LEASE_SECONDS: '45',
  IDEMPOTENCY_RETENTION_DAYS: '40',
  IDEMPOTENCY_STORE_TIMEOUT_MS: '700',
});

describe('the wiring (src/app): stores from the settings, with overrides', () => {
  test('the dedup store and the parking store take their tables, lease, retention and deadline from the settings', () => {
    const store = storeFromSettings(settings);
    expect(store.client.tableName).toBe('dedup');
    expect(store.leaseMs).toBe(45_000);
    expect(store.retentionMs).toBe(40 * 86_400_000);
    expect(store.callTimeoutMs).toBe(700);
    const parking = parkingFromSettings(settings);
    expect(parking.client.tableName).toBe('parked');
    expect(parking.callTimeoutMs).toBe(700);
  });

  test('overrides replace the table clients, the lease and the retention, and nothing else', () => {
    const asked: string[] = [];
    const tableClient = (name: string) => (asked.push(name), TableClient.fromConnectionString('UseDevelopmentStorage=true', `rig${name}`));
    const store = storeFromSettings(settings, { tableClient, leaseMs: 1_500, retentionMs: 60_000 });
    const parking = parkingFromSettings(settings, { tableClient });
    expect(asked).toEqual(['dedup', 'parked']);
    expect([store.client.tableName, parking.client.tableName]).toEqual(['rigdedup', 'rigparked']);
    expect([store.leaseMs, store.retentionMs, store.callTimeoutMs]).toEqual([1_500, 60_000, 700]);
  });
});
