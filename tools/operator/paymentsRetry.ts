import { shardLayoutOf } from '../../src/payments/shards';
import { paymentShardsOf } from '../../src/app/shardStores';
import { consumerStoreFromSettings, storeFromSettings, type WiringOverrides } from '../../src/app/stores';
import { retryBudgetOf } from '../../src/app/payments';
import { providerCapabilityOf } from '../../src/payments/providerLookup';
import { PaymentRetryRefusedError, retryFailedPayment } from '../../src/app/paymentRetry';
import { durableHttpStatus } from './paymentsKeys';
import { CHARGE_ORCHESTRATION } from '../../src/app/durableCharge';
import { loadSettings } from '../../src/config/settings';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import { parseCommandLine, runTool, UsageError } from '../cli/commandLine';

export const USAGE = `Retries one payment that ended failed (its provider's transient failures outlasted PAYMENT_RETRY_BUDGET_MINUTES).

  npm run payments:retry -- --payment-id <id> [--checked-at-provider] [--durable-url <url>] [--durable-key <key>]

  --payment-id   the paymentId (the message's MessageId)
  --checked-at-provider  a payment held for an operator ("held for an operator: ..."): you checked at the provider that
                 no charge was made under this Idempotency-Key (or one was: the same key then gets it back); the new run
                 calls the provider with the key instead of being held again
  --durable-url  the Durable extension's HTTP API: locally http://127.0.0.1:17071/durabletask/ (default: the local
                 engine), in Azure https://<app>.azurewebsites.net/runtime/webhooks/durabletask/
  --durable-key  Azure: the app's durabletask_extension system key (az functionapp keys list), sent as ?code=

Sharded (PAYMENT_SHARD_COUNT > 1): the payment belongs to one shard. Any shard's settings with PAYMENT_SHARD_TABLE_ENDPOINTS
reach the owner's table; its run must start in the owner's task hub, so for a payment of another shard --durable-url (and
--durable-key) must be the owner app's, given explicitly. Without the map only the settings' own shard is reached.

The payments records are in the app's store, IDEMPOTENCY_STORE: table (default) -> IDEMPOTENCY_TABLE_CONNECTION_STRING
(local) or IDEMPOTENCY_TABLE_ENDPOINT with your Azure identity (Storage Table Data Contributor), IDEMPOTENCY_TABLE_NAME;
cosmos -> COSMOS_ENDPOINT with your Azure identity (Cosmos DB Built-in Data Contributor; COSMOS_KEY for the local
emulator only), COSMOS_DATABASE_NAME, COSMOS_IDEMPOTENCY_CONTAINER. Only a failed payment is retried:
its record is reopened and claimed again (attempt + 1) and its charge orchestration started with the same
Idempotency-Key, so a charge the provider made is replayed, never made twice. Exit 0 started, 1 refused/failed, 2 usage.`;

export const DEFAULT_DURABLE_URL = 'http://127.0.0.1:17071/durabletask/';

/**
 * Starts `chargePayment` through the Durable extension's HTTP API (`POST orchestrators/{name}/{instanceId}`):
 * 202 started; an instance already pending or running is refused by the extension (409/500 "already exists").
 */
export function durableHttpStart(baseUrl: string, key?: string) {
  return async (instanceId: string, input: ChargeOrchestrationInput): Promise<'started' | 'running'> => {
    const url = new URL(`orchestrators/${CHARGE_ORCHESTRATION}/${encodeURIComponent(instanceId)}`, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
    if (key) url.searchParams.set('code', key);
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) });
    const text = await response.text();
    if (response.status === 202 || response.status === 200) return 'started';
    if (/already exists/i.test(text)) return 'running';
    throw new Error(`starting ${instanceId}: HTTP ${response.status} ${text.slice(0, 300)}`);
  };
}

/**
 * The command: parses `argv`, reads the settings from `env`, retries the payment. Returns the exit code. `wiring`:
 * what a test puts in place of the settings' clients (the Cosmos container of a local emulator); none from the CLI.
 */
export async function runPaymentsRetry(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  print = console.log,
  wiring: WiringOverrides = {},
): Promise<number> {
  const values = parseCommandLine(argv, {
    'payment-id': { type: 'string' },
    'durable-url': { type: 'string' },
    'durable-key': { type: 'string' },
    'checked-at-provider': { type: 'boolean' },
  });
  if (values === 'help') {
    print(USAGE);
    return 0;
  }
  const paymentId = values['payment-id'];
  if (typeof paymentId !== 'string' || paymentId.trim() === '') throw new UsageError('--payment-id is required');
  const settings = loadSettings(env);
  // Sharded (PAYMENT_SHARD_*): the payment's record is in its owner's table, its run goes to the owner's task hub.
  const layout = shardLayoutOf(settings);
  const shards = paymentShardsOf(settings, wiring);
  const route = shards.route(paymentId);
  if (route.kind === 'misdirected') {
    print(
      `refused: payment ${paymentId} belongs to shard ${route.shard} of ${layout.count}; these settings are shard ${layout.index}'s: ` +
        `point IDEMPOTENCY_TABLE_* and --durable-url at shard ${route.shard} (PAYMENT_SHARD_INDEX=${route.shard})`,
    );
    return 1;
  }
  if (route.kind === 'owner' && typeof values['durable-url'] !== 'string') {
    print(
      `refused: payment ${paymentId} belongs to shard ${route.shard} of ${layout.count} (these settings are shard ${layout.index}'s): its run must ` +
        `start in shard ${route.shard}'s task hub; pass --durable-url (and --durable-key) of shard ${route.shard}'s app`,
    );
    return 1;
  }
  const durableUrl = typeof values['durable-url'] === 'string' ? values['durable-url'] : DEFAULT_DURABLE_URL;
  const durableKey = typeof values['durable-key'] === 'string' ? values['durable-key'] : undefined;
  if (route.kind === 'owner')
    print(`payment ${paymentId}: shard ${route.shard} of ${layout.count}, its records at ${route.endpoint}, its run at ${durableUrl}`);
  // The owner's table (one shard, or the settings' own shard: the settings' table, as before).
  const tables = { ...wiring, tableClient: shards.tables(route.shard) };
  try {
    const report = await retryFailedPayment(
      {
        // The payments consumer's store, as the app builds it (IDEMPOTENCY_STORE: the Table or the Cosmos store).
        store: consumerStoreFromSettings(settings, wiring, storeFromSettings(settings, tables)),
        start: durableHttpStart(durableUrl, durableKey),
        retry: retryBudgetOf(settings),
        provider: providerCapabilityOf(settings),
        checkedAtProvider: values['checked-at-provider'] === true,
        // A record in progress whose run is Running, Pending or Suspended is refused (resume or terminate it first).
        status: async (instanceId) => {
          const status = await durableHttpStatus(durableUrl, durableKey)(instanceId);
          return ['Running', 'Pending', 'Suspended', 'ContinuedAsNew', 'unknown'].includes(status ?? '') ? { state: 'running' } : { state: 'none' };
        },
      },
      paymentId,
    );
    print(`payment ${report.paymentId}: retry ${report.started} (instance ${report.instanceId}, attempt ${report.attempt}); it had ${report.previous}`);
    return report.started === 'started' ? 0 : 1;
  } catch (error) {
    if (error instanceof PaymentRetryRefusedError) {
      print(`refused: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

if (require.main === module) runTool('npm run payments:retry', () => runPaymentsRetry(process.argv.slice(2), process.env));
