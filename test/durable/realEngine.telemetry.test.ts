/**
 * The local Durable host counts the log records the Functions host would forward to Application Insights, at the
 * levels host.json's `logging.logLevel` sets (tools/durable-host/TelemetryCounter.cs): the same client-role host
 * run twice on one task hub, once with the storage client's category at Information and once at Warning, each doing
 * the same status look-ups through the extension's HTTP API (table queries of the task hub).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { levelFor, totalOf } from '../../tools/cost/hostTelemetry';
import { AzuriteStorage } from '../../tools/local/durable/AzuriteStorage';
import { DurableEngineHost, DURABLE_RPC_PORT, type HostLogCount } from '../../tools/local/durable/DurableEngineHost';
import { REAL_ENGINE_TIMEOUT_MS, realEngineTest } from '../support/realEngine';

const RANK = ['Trace', 'Debug', 'Information', 'Warning', 'Error', 'Critical'];

/** The repository's host.json with `logging.logLevel` replaced, written to a temporary file. */
function hostJsonWith(levels: Record<string, string>): string {
  const json = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'host.json'), 'utf8')) as { logging: { logLevel: Record<string, string> } };
  json.logging.logLevel = levels;
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'hostjson-')), 'host.json');
  writeFileSync(file, JSON.stringify(json));
  return file;
}

/** Starts a client-role host with `levels`, looks up `lookups` unknown instances, and returns what it counted. */
async function countedWith(storage: AzuriteStorage, hubName: string, levels: Record<string, string>, lookups: number): Promise<HostLogCount[]> {
  const host = await DurableEngineHost.start({
    storageConnectionString: storage.connectionString,
    hubName,
    appSettings: {},
    role: 'client',
    hostJson: hostJsonWith(levels),
  });
  try {
    for (let i = 0; i < lookups; i++) {
      const answer = await fetch(`http://127.0.0.1:${DURABLE_RPC_PORT}/durabletask/instances/unknown-${i}`);
      expect(answer.status).toBe(404);
    }
    return [...(await host.telemetryCounts()).records];
  } finally {
    await host.stop();
  }
}

describe("the local Durable host's telemetry counted at host.json's levels", () => {
  realEngineTest(
    "at Information the storage client's request records are counted, with bytes; at Warning none is, and no record below a category's level ever is",
    async () => {
      const storage = await AzuriteStorage.start();
      try {
        const hubName = `telemetry${Math.random().toString(36).slice(2, 7)}`;
        const chatty = { default: 'Information', 'DurableTask.AzureStorage': 'Warning', 'DurableTask.Core': 'Warning' };
        const quiet = { default: 'Warning', 'Azure.Core': 'Warning' };
        const loud = await countedWith(storage, hubName, chatty, 5);
        const azureCore = totalOf(loud.filter((c) => c.category === 'Azure.Core' && c.level === 'Information'));
        expect(azureCore.records).toBeGreaterThanOrEqual(5); // at least one request record a look-up
        expect(azureCore.bytes).toBeGreaterThan(azureCore.records * 50);
        const calm = await countedWith(storage, hubName, quiet, 5);
        expect(calm.filter((c) => c.category === 'Azure.Core' && c.level === 'Information')).toEqual([]);
        for (const [counts, levels] of [
          [loud, chatty],
          [calm, quiet],
        ] as const)
          for (const c of counts) expect(RANK.indexOf(c.level)).toBeGreaterThanOrEqual(RANK.indexOf(levelFor(c.category, levels)));
      } finally {
        await storage.stop();
      }
    },
    REAL_ENGINE_TIMEOUT_MS,
  );
});
