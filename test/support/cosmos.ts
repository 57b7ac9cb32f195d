/** The Cosmos emulator launcher lives under tools/ so the build (src + tools) can use it too; one implementation. */
export { CosmosEmulator, cosmosClientFor } from '../../tools/cosmos/CosmosEmulator';
