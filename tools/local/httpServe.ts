import { AzuriteTable } from '../azurite/AzuriteTable';
import { runTool } from '../cli/commandLine';
import { RecordingPaymentQueue, startHttpRig } from './httpRig';

/**
 * `npm run tools:build && node dist/tools/local/httpServe.js [port]` (docs/http.md): the HTTP functions on loopback,
 * as the host would serve them at `http://127.0.0.1:7071/api/...`, on their own in-memory Azurite.
 */
async function main(): Promise<void> {
  const port = Number(process.argv[2] ?? 7071);
  const secret = process.env.WEBHOOK_SIGNING_SECRET ?? 'whsec_local_0123456789abcdef';
  const functionKeys = { alice: 'alice-local-key-0000000001', bob: 'bob-local-key-00000000002' };
  const azurite = await AzuriteTable.start();
  const queue = new RecordingPaymentQueue();
  const send = queue.send.bind(queue);
  queue.send = async (payment, signal) => {
    await send(payment, signal);
    console.log(`enqueued MessageId=${payment.paymentId}`);
  };
  const rig = await startHttpRig({ tableConnectionString: azurite.connectionString, functionKeys, queue, port, settings: { WEBHOOK_SIGNING_SECRET: secret } });
  console.log(`local host on ${rig.url}: POST /api/payments (function key), POST /api/webhooks/payment-provider (signed)`);
  console.log(`function keys: alice=${functionKeys.alice} bob=${functionKeys.bob}; webhook secret: ${secret}`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await rig.stop();
  await azurite.stop();
}

runTool('httpServe', main);
