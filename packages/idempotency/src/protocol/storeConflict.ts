/**
 * The three answers of a store (Table Storage or Cosmos DB) that are decisions, not failures:
 * insert-if-absent found the item (409), a conditional write lost its ETag (412), the item is
 * gone (404). Both stores' error classifiers map statuses through {@link conflictOfStatus}; so can a classifier
 * of your own (e.g. for another SDK's errors).
 */
export type StoreConflict = 'exists' | 'conditionFailed' | 'notFound';

/** The conflict an HTTP status stands for, or undefined for any other status (or none). */
export function conflictOfStatus(status: number | undefined): StoreConflict | undefined {
  if (status === 409) return 'exists';
  if (status === 412) return 'conditionFailed';
  if (status === 404) return 'notFound';
  return undefined;
}
