/**
 * One error hierarchy for the idempotency core. Every error carries its context and, where it
 * wraps something lower down, a `cause`. Match with `instanceof`, never by `name`.
 */
export class IdempotencyError extends Error {
  /** True when retrying the same message later may succeed (the broker should redeliver it). */
  readonly retryable: boolean;

  constructor(message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.retryable = options.retryable ?? false;
  }
}

/** The message carries no usable idempotency key (missing, empty, wrong type or too long). */
export class InvalidKeyError extends IdempotencyError {}

/** The payload cannot be digested (e.g. it holds a function, a cycle or a non-finite number). */
export class InvalidPayloadError extends IdempotencyError {}

/** A result to store is larger than the configured bound. */
export class ResultTooLargeError extends IdempotencyError {
  constructor(
    readonly sizeBytes: number,
    readonly maxBytes: number,
  ) {
    super(`stored result is ${sizeBytes} bytes, more than the limit of ${maxBytes} bytes`);
  }
}

/** Options or settings given to the core are invalid. */
export class ConfigurationError extends IdempotencyError {}

/**
 * The store could not be reached or answered with a server-side failure (timeouts, 5xx, 429,
 * connection refused): the message must be retried later. `writeMayHaveLanded` says what may have
 * been decided: false when nothing was (a read, or a request the store refused); true when a write
 * was sent and no answer came before the deadline, so it may have landed (a retry finds out).
 */
export class StoreUnavailableError extends IdempotencyError {
  constructor(
    message: string,
    readonly operation: string,
    cause?: unknown,
    readonly writeMayHaveLanded = false,
  ) {
    super(message, { cause, retryable: true });
  }
}

/** The store rejected a request in a way retrying will not fix (a bug or a misconfiguration). */
export class StoreRequestError extends IdempotencyError {
  constructor(
    message: string,
    readonly operation: string,
    readonly statusCode: number | undefined,
    cause?: unknown,
  ) {
    super(message, { cause, retryable: false });
  }
}

/**
 * The claim this caller held is no longer its own: its lease lapsed and another claimant took the
 * record over, or the record was removed. The caller must not record any outcome.
 */
export class LeaseLostError extends IdempotencyError {
  constructor(
    readonly scopedKey: string,
    readonly attempt: number,
    readonly operation: string,
  ) {
    super(`claim attempt ${attempt} of ${JSON.stringify(scopedKey)} was taken over or removed; ${operation} refused`);
  }
}

/**
 * A record has a status this version does not know (written by a newer version, or edited by
 * hand). It is refused, never taken over: the work it stands for may have completed. Retryable,
 * because a newer instance may answer the redelivery; otherwise the message dead-letters with it.
 */
export class UnknownRecordStatusError extends IdempotencyError {
  constructor(
    readonly scopedKey: string,
    readonly status: string,
  ) {
    super(
      `record of ${JSON.stringify(scopedKey)} has status ${JSON.stringify(status)}, which this version does not know; ` +
        'refusing to take it over, since its work may have completed (deploy the version that wrote it, or fix the record)',
      { retryable: true },
    );
  }
}

/** Another claimant holds a valid lease on the key; retry after `leaseExpiresAtMs`. */
export class KeyInProgressError extends IdempotencyError {
  constructor(
    readonly scopedKey: string,
    readonly leaseExpiresAtMs: number,
    readonly attempt: number,
  ) {
    super(`key ${JSON.stringify(scopedKey)} is in progress elsewhere (attempt ${attempt}, lease until ${leaseExpiresAtMs})`, {
      retryable: true,
    });
  }
}

/** The key was already used for a payload with another digest: the producer reused an id. */
export class KeyReusedError extends IdempotencyError {
  constructor(
    readonly scopedKey: string,
    readonly storedDigest: string,
    readonly digest: string,
  ) {
    super(`key ${JSON.stringify(scopedKey)} was used before for a different payload (stored digest ${storedDigest}, this one ${digest})`);
  }
}
