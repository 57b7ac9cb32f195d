import type { CosmosRequestCharge } from './CosmosMarkers';
import { ConfigurationError } from '../../protocol/errors';
import { requireOptionsObject } from '../../protocol/options';
import { resolveStoreOptions, type CommonStoreOptions, type ResolvedStoreOptions } from '../../protocol/storeOptions';

/** The Cosmos store's options: those every store takes (its documents' TTL follows `retentionMs`), and an RU listener. */
export interface CosmosIdempotencyStoreOptions extends CommonStoreOptions {
  /** Told the request charge (RU) of every answer, from its `x-ms-request-charge` header. Must not throw (ignored if it does). */
  readonly onRequestCharge?: (charge: CosmosRequestCharge) => void;
}

/** The options of a Cosmos store, defaulted and checked. */
export type ResolvedCosmosStoreOptions = ResolvedStoreOptions;

/**
 * Defaults and bounds of {@link CosmosIdempotencyStoreOptions}: the options every store takes, as the Table store
 * checks them (`resolveStoreOptions`, docs/DESIGN.md, "Records and leases"), so settings that build one store build
 * the other.
 * @throws ConfigurationError naming the first option out of bounds.
 */
export function resolveCosmosStoreOptions(options: CosmosIdempotencyStoreOptions): ResolvedCosmosStoreOptions {
  requireOptionsObject(options, 'CosmosIdempotencyStore options');
  if (options.onRequestCharge !== undefined && typeof options.onRequestCharge !== 'function')
    throw new ConfigurationError('onRequestCharge must be a function');
  return resolveStoreOptions(options, 'CosmosIdempotencyStore options');
}
