// The public API of azure-functions-idempotency for its API report (API Extractor reads one entry point): the
// union of the entries users import (`.`, `/table`, `/cosmos`, `/memory`, `/operator`), from the built declarations.
// `./internal` is not public and not here.
export * from '../dist/index';
export * from '../dist/stores/table/index';
export * from '../dist/stores/cosmos/index';
export * from '../dist/stores/memory/index';
export * from '../dist/operator/index';
