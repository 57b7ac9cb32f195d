import { useAzurite } from '../support/azurite';
import { tableRig } from '../support/keysConsole';
import { describeKeysConsole } from '../support/keysConsoleScenarios';

// The operator's console (issue 53) on the Table store: Azurite, started for this file on a free port. Every command
// through the CLI in this process (runOperatorCli) and the library functions; the scenarios are the Cosmos file's too.
const azuriteOf = useAzurite();

describe('keys console on Table Storage (Azurite)', () => {
  describeKeysConsole(() => tableRig(azuriteOf()));
});
