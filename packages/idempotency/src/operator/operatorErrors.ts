import { IdempotencyError, StoreRequestError } from '../protocol/errors';

/**
 * Why an operator's command did nothing: `notFound` (no record for the key), `unknownConsumer` (no record at all under
 * the consumer name), `refused` (the record's state forbids it: a live lease, a run going, not forced), `changed` (the
 * record moved since it was read: its ETag no longer matches).
 */
export const OperatorRefusal = {
  NotFound: 'notFound',
  UnknownConsumer: 'unknownConsumer',
  Refused: 'refused',
  Changed: 'changed',
} as const;
export type OperatorRefusal = (typeof OperatorRefusal)[keyof typeof OperatorRefusal];

/** An operator's command was refused; nothing was written. `reason` says which kind of refusal it is. */
export class OperatorRefusedError extends IdempotencyError {
  constructor(
    readonly reason: OperatorRefusal,
    message: string,
  ) {
    super(message, { retryable: reason === OperatorRefusal.Changed });
  }
}

/** A bad command line or input (unknown subcommand, malformed key, a missing `--reason`): nothing was read or written. */
export class OperatorUsageError extends IdempotencyError {}

/**
 * The store (or the broker) answered 401/403 to the operator's identity: the message names the data-plane role
 * it needs (`role`). The `cause` is the store's own error.
 */
export class OperatorPermissionError extends IdempotencyError {
  constructor(
    message: string,
    readonly role: string,
    cause: unknown,
  ) {
    super(message, { cause, retryable: false });
  }
}

/** The data-plane roles an operator's identity needs on a store, to read and to write. */
export interface StoreRoles {
  /** Names the store in messages (`table store idempotency`). */
  readonly store: string;
  readonly read: string;
  readonly write: string;
}

/** Azure Table Storage: built-in roles on the account (or the table). */
export const TABLE_ROLES: StoreRoles = {
  store: 'table store',
  read: 'Storage Table Data Reader',
  write: 'Storage Table Data Contributor',
};

/** Azure Cosmos DB for NoSQL: data-plane (SQL) role definitions, assigned with `az cosmosdb sql role assignment create`. */
export const COSMOS_ROLES: StoreRoles = {
  store: 'cosmos store',
  read: 'Cosmos DB Built-in Data Reader',
  write: 'Cosmos DB Built-in Data Contributor',
};

/**
 * `error` as an {@link OperatorPermissionError} naming the role when the store refused the identity (a
 * `StoreRequestError` with status 401 or 403), else `error` itself.
 */
export function withRoleHint(error: unknown, roles: StoreRoles, kind: 'read' | 'write', operation: string): unknown {
  if (!(error instanceof StoreRequestError) || (error.statusCode !== 403 && error.statusCode !== 401)) return error;
  const role = roles[kind];
  return new OperatorPermissionError(
    `the ${roles.store} refused ${operation} (${error.statusCode}): your identity needs the role "${role}"` +
      `${kind === 'read' ? ` (or "${roles.write}")` : ''} on it, or a firewall/network rule refused the request. ` +
      `Store's answer: ${error.message}`,
    role,
    error,
  );
}
