/** The console's exit codes. */
export const ExitCode = {
  Ok: 0,
  /** The store or broker failed (unavailable, an unexpected answer): nothing is known to be done; run it again. */
  Failed: 1,
  /** A bad command line or input: unknown command or option, malformed key, a missing `--reason`. Nothing was read. */
  Usage: 2,
  /** No such record, or no record at all under the consumer name. */
  NotFound: 3,
  /** Refused by the record's state (a live lease, a run going, not forced) or a concurrent change (ETag): nothing written. */
  Refused: 4,
  /** The store or broker refused your identity (401/403): the message names the role. */
  Permission: 5,
} as const;

export const USAGE = `azure-functions-idempotency: the operator's console for idempotency records (Table or Cosmos store)

  keys show    <consumer> <key>                 the record as the protocol sees it (no payload: key and digest only)
  keys list    <consumer> [--status s[,s]] [--older-than 2h] [--limit 100] [--max-pages 50] [--page-size 100]
                                                [--continue <cursor>]   bounded, paged queries; progress on stderr;
                                                --max-pages bounds every request it makes (the look-up of the
                                                consumer after an empty listing included)
  keys release <consumer> <key> --reason "..." [--by who] [--etag <etag>] [--dry-run]
                                                let the key be processed again (RELEASED: the next delivery takes it over);
                                                refused while its lease is live or a run is going; If-Match on the ETag
  keys evict   <consumer> <key> --reason "..." [--by who] [--etag <etag>] [--force] [--dry-run]
                                                delete the record and its rows (data erasure, a poisoned result);
                                                refused while in progress unless --force; logged (who, why, key, digest)
  dlq replay   <queue> --consumer <name> [--by who] [--reason "..."] [--max-messages 1000] [--duplicate-window 10m]
                                                [--dry-run]   resubmit dead-lettered messages, dedup-aware:
                                                completed key: removed, not resent; failed/held: released, then resent;
                                                in progress: left. A rerun after an interruption resends nothing twice.

  --status       in-progress (live or lapsed lease), lapsed, completed, released, failed, held, expired, unknown
  --older-than   last written more than this long ago: 45s, 90m, 2h, 1h30m, 7d
  --json         print JSON instead of text        --dry-run   print what it would do, change nothing
  A key that starts with "-" goes after "--":      keys show payments -- -42

Where the records are (options, or the app's settings in the environment):
  --store table|cosmos            IDEMPOTENCY_STORE (default table)
  --table-connection-string <cs>  IDEMPOTENCY_TABLE_CONNECTION_STRING (default UseDevelopmentStorage=true: Azurite;
                                  when nothing answers there: exit 2, naming the endpoint tried and what to set)
  --table-endpoint <url>          IDEMPOTENCY_TABLE_ENDPOINT, with your Azure identity (needs @azure/identity;
                                  role "Storage Table Data Contributor", "Storage Table Data Reader" to read only)
  --table <name>                  IDEMPOTENCY_TABLE_NAME (default idempotency)
  --partitions <n>                IDEMPOTENCY_PARTITION_COUNT (default 16: the store's partitionCount)
  --cosmos-endpoint <url>         COSMOS_ENDPOINT, with your Azure identity (role "Cosmos DB Built-in Data Contributor")
  --cosmos-key <key>              COSMOS_KEY (the local emulator only)
  --cosmos-database <name>        COSMOS_DATABASE_NAME        --cosmos-container <name>   COSMOS_IDEMPOTENCY_CONTAINER
  --client-id <id>                AZURE_CLIENT_ID: a user-assigned managed identity
  --timeout-ms <ms>               IDEMPOTENCY_STORE_TIMEOUT_MS (default 5000): each call's deadline
  --servicebus-namespace <host>   SERVICEBUS_FULLY_QUALIFIED_NAMESPACE, your identity ("Azure Service Bus Data Owner")
  --servicebus-connection-string  SERVICEBUS_CONNECTION_STRING (needs @azure/service-bus installed)
  --by <who>                      default: the environment's user (USER, USERNAME)
  --duplicate-window <d>          the queue's duplicate detection window (default 10m; 0 when it has none)

Exit codes: 0 done, 1 store or broker failure, 2 bad input, 3 no such record or consumer, 4 refused (state or a
concurrent change: nothing written), 5 permission (the message names the role).`;
