/** The Azurite launcher lives under tools/ so the build (src + tools) can use it too; one implementation. */
export { AzuriteTable, freePort } from '../../tools/azurite/AzuriteTable';
