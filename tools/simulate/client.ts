import type * as df from 'durable-functions';
import type { Random } from './random';
import type { World } from './world';
import { short, type SimTaskHub } from './hub';

/** Base of the fake RPC endpoint: the app's instance query (`instancePage`) sends its request here. */
const RPC_BASE = 'http://sim.invalid/runtime/webhooks/durabletask/';

/**
 * The Durable client the app's code gets in the simulation: the subset of durable-functions' `DurableClient` the
 * trigger (`DurableChargeWorkflow`), the reconciler (`runStateOf`) and the purge use, with the extension's answers
 * (a 404 for an unknown instance, 409 for a start of a running one) and its instance query as HTTP (`fetch`), so
 * the app's own paging code runs: the Instances table read one storage response per request, in instance id order
 * (entities, `@paymentcharge@...`, always Running, sort first), and a page may come back with no rows and a
 * continuation token (Azure Tables does that; Azurite never does).
 */
export class SimDurableClient {
  readonly clientData = { rpcBaseUrl: RPC_BASE };
  calls = 0;
  /** Calls a scenario's `forceSlow` slowed (its premise). */
  slowCalls = 0;
  /** A scenario's forced fault: calls made inside the window take `callMs`. */
  forceSlow?: { readonly fromMs: number; readonly toMs: number; readonly callMs: number };
  /** A scenario's forced fault: the first hop of each next `startNew` takes the next of these (ms). */
  readonly forceStartHopMs: number[] = [];

  constructor(
    private readonly world: World,
    private readonly random: Random,
    private readonly hub: SimTaskHub,
    private readonly emptyPages: boolean,
    private slowRate: number,
  ) {}

  /** One leg of a call (`transit`: the request's, which lands even if its sender died meanwhile). */
  private async hop(forcedMs?: number, transit = false): Promise<void> {
    this.calls++;
    const now = this.world.nowMs();
    const slowed = this.forceSlow && now >= this.forceSlow.fromMs && now < this.forceSlow.toMs ? this.forceSlow.callMs : undefined;
    if (slowed !== undefined) this.slowCalls++;
    const forced = forcedMs ?? slowed;
    await this.world.sleep(forced ?? (this.random.chance(this.slowRate) ? this.random.logBetween(1_000, 120_000) : this.random.logBetween(5, 200)), transit);
  }

  /** No more faults (the schedule's quiet phase; empty pages stay: they are how Azure answers at scale). */
  quiet(): void {
    this.slowRate = 0;
  }

  async startNew(_name: string, options: { instanceId: string; input: unknown }): Promise<string> {
    await this.hop(this.forceStartHopMs.shift(), true);
    this.hub.start(options.instanceId, options.input);
    await this.hop();
    return options.instanceId;
  }

  /** The instance's status; with its input unless `showInput` says false (the extension's default is true). */
  async getStatus(instanceId: string, options?: { showInput?: unknown }): Promise<Partial<df.DurableOrchestrationStatus>> {
    await this.hop();
    const instance = this.hub.instances.get(instanceId);
    if (!instance) throw new Error(`getStatus: the Durable extension answered HTTP 404 for ${short(instanceId)}`);
    const withInput = options?.showInput !== false && options?.showInput !== 'false';
    return {
      instanceId,
      runtimeStatus: instance.status as df.OrchestrationRuntimeStatus,
      output: instance.output,
      ...(withInput ? { input: instance.input } : {}),
    };
  }

  async purgeInstanceHistory(instanceId: string): Promise<{ instancesDeleted: number }> {
    await this.hop(undefined, true);
    return { instancesDeleted: this.hub.purge(instanceId) };
  }

  /** The extension's `GET instances/?...&top=N` with `x-ms-continuation-token`, as `fetch` answers it. */
  readonly fetch = async (url: string | URL, init?: { headers?: Record<string, string> }): Promise<Response> => {
    await this.hop();
    const query = new URL(String(url)).searchParams;
    const createdBefore = Date.parse(query.get('createdTimeTo') ?? '');
    const statuses = new Set((query.get('runtimeStatus') ?? '').split(','));
    const top = Number(query.get('top') ?? '100');
    const after = init?.headers?.['x-ms-continuation-token'] ?? '';
    const prefix = query.get('instanceIdPrefix') ?? '';
    const rows = [
      ...[...this.hub.entities.keys()].map((key) => ({ instanceId: `@paymentcharge@${key}`, runtimeStatus: 'Running', createdMs: 0, input: undefined })),
      ...[...this.hub.instances.values()].map((i) => ({ instanceId: i.id, runtimeStatus: i.status, createdMs: i.createdMs, input: i.input })),
    ]
      .filter((row) => row.instanceId > after && row.instanceId.startsWith(prefix))
      .sort((a, b) => (a.instanceId < b.instanceId ? -1 : 1));
    // One storage response: it scans rows until `top` match, or (a fault) stops early at a partition boundary / 5 s.
    const scanLimit = this.emptyPages ? this.random.int(1, 3) : Number.POSITIVE_INFINITY;
    const page: typeof rows = [];
    let scanned = 0;
    for (const row of rows) {
      if (page.length >= top || scanned >= scanLimit) break;
      scanned++;
      if (statuses.has(row.runtimeStatus) && row.createdMs < createdBefore) page.push(row);
    }
    const more = scanned < rows.length;
    const token = more ? rows[scanned - 1].instanceId : null;
    const body = JSON.stringify(page.map(({ instanceId, runtimeStatus, input }) => ({ instanceId, runtimeStatus, input })));
    return new Response(body, { status: 200, headers: token ? { 'x-ms-continuation-token': token } : {} });
  };

  /** This client as the app's code takes it. */
  asDurableClient(): df.DurableClient {
    return this as unknown as df.DurableClient;
  }
}
