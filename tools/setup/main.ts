import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareLocalEmulators } from './prepareLocal';

/**
 * `npm run local:prepare`: prepares the running local emulators for `func start` from `local.settings.json`
 * (or, when there is none yet, `local.settings.json.example`). See `prepareLocal.ts`.
 */
const root = join(__dirname, '..', '..', '..');
const file = existsSync(join(root, 'local.settings.json')) ? 'local.settings.json' : 'local.settings.json.example';
const values = (JSON.parse(readFileSync(join(root, file), 'utf8')) as { Values?: Record<string, string> }).Values ?? {};
console.log(`local:prepare: settings from ${file}`);
prepareLocalEmulators(values, (line) => console.log(`local:prepare: ${line}`)).then(
  () => console.log('local:prepare: done; the Service Bus emulator declares its queues in its own Config.json (docs/deploy.md)'),
  (error: unknown) => {
    console.error(`local:prepare: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
