import type { TableClient, TransactionAction } from '@azure/data-tables';
import type { HistoryEvent, SdkRetryOptions } from './historyEvents';

/** Runtime statuses as the extension reports them (`OrchestrationRuntimeStatus`). */
export type RuntimeStatus = 'Pending' | 'Running' | 'Completed' | 'Failed' | 'Terminated';

/** Retry bookkeeping of one `CallActivityWithRetry` action (what DurableTask.Core's RetryInterceptor keeps on its stack). */
export interface RetryState {
  readonly functionName: string;
  readonly inputJson: string;
  readonly options: SdkRetryOptions;
  /** Attempts made so far (1 after the first TaskScheduled). */
  readonly attempt: number;
  /** What the retry waits on: its task (TaskScheduled id) or its timer (TimerCreated id). */
  readonly waitingOn: 'task' | 'timer';
  readonly firstAttemptAtMs: number;
}

export interface InstanceRow {
  readonly instanceId: string;
  readonly name: string;
  readonly executionId: string;
  readonly runtimeStatus: RuntimeStatus;
  readonly inputJson: string;
  readonly outputJson: string;
  readonly createdTime: string;
  readonly lastUpdatedTime: string;
  /** History events committed for this execution. */
  readonly historyLength: number;
  /** SDK actions the backend has carried out (the next episode's new actions start here). */
  readonly actionsDone: number;
  /** The next sequence number (EventId of TaskScheduled, TimerCreated, EventSent). */
  readonly nextSeq: number;
  /** Retry state by the sequence number it waits on. */
  readonly retries: Record<string, RetryState>;
  readonly etag?: string;
}

export interface EntityRow {
  readonly exists: boolean;
  readonly state?: string;
  readonly etag?: string;
}

const INSTANCE_ROW = '~instance';
const ENTITY_ROW = '~entity';
const historyRowKey = (executionId: string, index: number) => `h~${executionId}~${String(index).padStart(6, '0')}`;

/**
 * The local backend's storage on Table Storage (Azurite): per orchestration instance a partition with its
 * instance row and its history events (one row each, appended in the same entity-group transaction that
 * updates the instance row, as a checkpoint); per entity a row with its state. Like the Azure Storage
 * provider's Instances and History tables, in one table.
 */
export class DurableStore {
  constructor(readonly table: TableClient) {}

  async ensure(): Promise<void> {
    await this.table.createTable();
  }

  async instance(instanceId: string): Promise<InstanceRow | undefined> {
    const row = await this.read(instanceId, INSTANCE_ROW);
    if (!row) return undefined;
    return {
      instanceId,
      name: String(row.name),
      executionId: String(row.executionId),
      runtimeStatus: String(row.runtimeStatus) as RuntimeStatus,
      inputJson: text(row.inputJson, 'null'),
      outputJson: text(row.outputJson, 'null'),
      createdTime: String(row.createdTime),
      lastUpdatedTime: String(row.lastUpdatedTime),
      historyLength: Number(row.historyLength),
      actionsDone: Number(row.actionsDone),
      nextSeq: Number(row.nextSeq),
      retries: JSON.parse(text(row.retriesJson, '{}')) as Record<string, RetryState>,
      etag: String(row.etag),
    };
  }

  /** Ids of the instances not in a final state (pending or running). */
  async unfinishedInstances(): Promise<string[]> {
    const ids: string[] = [];
    const rows = this.table.listEntities<{ partitionKey: string; runtimeStatus: string }>({
      queryOptions: {
        filter: `RowKey eq '${INSTANCE_ROW}' and (runtimeStatus eq 'Pending' or runtimeStatus eq 'Running')`,
        select: ['PartitionKey', 'runtimeStatus'],
      },
    });
    for await (const r of rows) ids.push(r.partitionKey);
    return ids;
  }

  /** The committed history of the instance's current execution, in order. */
  async history(row: InstanceRow): Promise<HistoryEvent[]> {
    const from = historyRowKey(row.executionId, 0);
    const to = historyRowKey(row.executionId, 999_999);
    const events: HistoryEvent[] = [];
    const rows = this.table.listEntities<{ rowKey: string; eventJson: string }>({
      queryOptions: { filter: `PartitionKey eq '${row.instanceId}' and RowKey ge '${from}' and RowKey le '${to}'` },
    });
    for await (const r of rows) events.push(JSON.parse(r.eventJson) as HistoryEvent);
    return events.slice(0, row.historyLength);
  }

  /**
   * Creates or restarts an instance: a new execution (fresh history). Refused when it is pending or running.
   * @returns false when the instance exists and is not in a final state.
   */
  async create(instanceId: string, name: string, inputJson: string, executionId: string, nowIso: string): Promise<boolean> {
    const existing = await this.instance(instanceId);
    if (existing && (existing.runtimeStatus === 'Pending' || existing.runtimeStatus === 'Running')) return false;
    const row = this.toEntity({
      instanceId,
      name,
      executionId,
      runtimeStatus: 'Pending',
      inputJson,
      outputJson: 'null',
      createdTime: nowIso,
      lastUpdatedTime: nowIso,
      historyLength: 0,
      actionsDone: 0,
      nextSeq: 0,
      retries: {},
    });
    try {
      if (existing) await this.table.updateEntity(row, 'Replace', { etag: existing.etag });
      else await this.table.createEntity(row);
      return true;
    } catch (error) {
      const status = (error as { statusCode?: number }).statusCode;
      if (status === 409 || status === 412) return false; // a concurrent start won
      throw error;
    }
  }

  /** One checkpoint: the new history events and the instance row, in one transaction (If-Match on the row). */
  async checkpoint(previous: InstanceRow, next: InstanceRow, newEvents: readonly HistoryEvent[]): Promise<void> {
    const actions: TransactionAction[] = newEvents.map((event, i) => [
      'create',
      { partitionKey: previous.instanceId, rowKey: historyRowKey(previous.executionId, previous.historyLength + i), eventJson: JSON.stringify(event) },
    ]);
    actions.push(['update', this.toEntity(next), 'Replace', { etag: previous.etag }]);
    for (let i = 0; i < actions.length; i += 100) {
      // A history longer than one transaction's 100 actions per step does not occur for this app (at most a few events a step).
      await this.table.submitTransaction(actions.slice(i, i + 100));
    }
  }

  async entity(schedulerId: string): Promise<EntityRow> {
    const row = await this.read(schedulerId, ENTITY_ROW);
    if (!row) return { exists: false };
    return { exists: Boolean(row.exists), state: typeof row.state === 'string' ? row.state : undefined, etag: String(row.etag) };
  }

  async saveEntity(schedulerId: string, previous: EntityRow, exists: boolean, state: string | undefined): Promise<void> {
    const entity = { partitionKey: schedulerId, rowKey: ENTITY_ROW, exists, ...(state === undefined ? {} : { state }) };
    if (previous.etag) await this.table.updateEntity(entity, 'Replace', { etag: previous.etag });
    else await this.table.createEntity(entity);
  }

  private toEntity(row: InstanceRow) {
    return {
      partitionKey: row.instanceId,
      rowKey: INSTANCE_ROW,
      name: row.name,
      executionId: row.executionId,
      runtimeStatus: row.runtimeStatus,
      inputJson: row.inputJson,
      outputJson: row.outputJson,
      createdTime: row.createdTime,
      lastUpdatedTime: row.lastUpdatedTime,
      historyLength: row.historyLength,
      actionsDone: row.actionsDone,
      nextSeq: row.nextSeq,
      retriesJson: JSON.stringify(row.retries),
    };
  }

  private async read(partitionKey: string, rowKey: string): Promise<Record<string, unknown> | undefined> {
    try {
      return await this.table.getEntity<Record<string, unknown>>(partitionKey, rowKey);
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return undefined;
      throw error;
    }
  }
}

/** A string property of a Table row (`fallback` when absent). */
function text(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}
