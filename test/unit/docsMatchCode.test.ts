import type * as FunctionsCore from '../../tools/local/host/functionsCore';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The operator docs say what the code and the Bicep do: every function the app registers, every role,
 * table, output, parameter and workbook tile of infra/ is named in docs/deploy.md (and the README names the
 * functions); no doc asks the user to set AZURE_PRINCIPAL_TYPE (azd fills it from the signed-in principal).
 */
const ROOT = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const deployDoc = read('docs/deploy.md');
/** The same text with line breaks as spaces (prose wraps at any space). */
const flatDeployDoc = deployDoc.replace(/\s+/g, ' ');
const readme = read('README.md');
const mainBicep = read('infra/main.bicep');

/** What the app's entry points register with valid settings, as the worker would index it. */
function registeredFunctions(): string[] {
  const saved = process.env;
  process.env = {
    IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
    PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9',
    COSMOS_ENDPOINT: 'https://127.0.0.1:9',
    SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://127.0.0.1;SharedAccessKeyName=k;SharedAccessKey=v',
    WEBHOOK_SIGNING_SECRET: 'whsec_docs_0123456789',
  };
  const names: string[] = [];
  try {
    jest.isolateModules(() => {
      const core = require('@azure/functions-core') as typeof FunctionsCore;
      for (const file of readdirSync(join(ROOT, 'src', 'functions')).filter((f) => f.endsWith('.ts'))) {
        names.push(...core.captureRegistrations(() => require(join(ROOT, 'src', 'functions', file))).map((f) => f.metadata.name));
      }
    });
  } finally {
    process.env = saved;
  }
  return names.sort();
}

test('docs: every registered function is in docs/deploy.md and the README, with the right count', () => {
  const names = registeredFunctions();
  expect(names).toHaveLength(12);
  for (const name of names) {
    expect({ name, inDeployDoc: deployDoc.includes(`\`${name}\``) }).toEqual({ name, inDeployDoc: true });
    expect({ name, inReadme: readme.includes(`\`${name}\``) }).toEqual({ name, inReadme: true });
  }
  expect(deployDoc).toMatch(/It must list 12 names/);
  expect(readme).toMatch(/Twelve functions/);
});

test('docs: every role main.bicep assigns, the tables, the outputs and the parameters are in docs/deploy.md', () => {
  const rolesBlock = /var roles = \{([\s\S]*?)\n\}/.exec(mainBicep)![1];
  const roleNames = [...rolesBlock.matchAll(/\/\/ (.+)$/gm)].map((m) => m[1].trim());
  expect(roleNames.length).toBeGreaterThanOrEqual(7);
  for (const role of [...roleNames, 'Cosmos DB Built-in Data Contributor'])
    expect({ role, documented: deployDoc.includes(role) }).toEqual({ role, documented: true });

  for (const param of ['idempotencyTableName', 'parkedMessagesTableName', 'paymentStateTableName']) {
    const table = new RegExp(`param ${param} string = '(\\w+)'`).exec(mainBicep)![1];
    expect({ table, inStorageRow: /\| storage account \|.*$/m.exec(deployDoc)![0].includes(`\`${table}\``) }).toEqual({ table, inStorageRow: true });
  }

  const outputs = [...mainBicep.matchAll(/^output (\w+) /gm)].map((m) => m[1]);
  expect(outputs.length).toBeGreaterThan(5);
  const outputsLine = /^Outputs \(written to the azd env\):[\s\S]*?\n\n/m.exec(deployDoc)![0];
  for (const output of outputs) expect({ output, documented: outputsLine.includes(`\`${output}\``) }).toEqual({ output, documented: true });

  const params = [...mainBicep.matchAll(/^param (\w+) /gm)].map((m) => m[1]);
  for (const param of params) expect({ param, inTable: deployDoc.includes(`| \`${param}\``) }).toEqual({ param, inTable: true });
  const mapped = Object.keys((JSON.parse(read('infra/main.parameters.json')) as { parameters: object }).parameters);
  expect(deployDoc).toContain(
    `maps ${['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen'][mapped.length]} parameters`,
  );
});

test('docs: every workbook tile is named in docs/deploy.md, with the right count', () => {
  const titles = [...read('infra/app/operations.bicep').matchAll(/^\s+title: '([^']+)'$/gm)].map((m) => m[1].replace(/\\'/g, "'"));
  expect(titles.length).toBeGreaterThan(10);
  for (const title of titles) expect({ title, documented: flatDeployDoc.includes(title) }).toEqual({ title, documented: true });
  expect(deployDoc).toContain(`${titles.length} tiles`);
});

test('docs: no step sets AZURE_PRINCIPAL_TYPE; deploy.md says azd builds locally before the remote build', () => {
  const docs = [
    readme,
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => read(join('docs', f))),
  ];
  for (const text of docs) expect(text).not.toMatch(/azd env set AZURE_PRINCIPAL_TYPE/);
  expect(read('azure.yaml')).toMatch(/remoteBuild: true/);
  expect(deployDoc).toMatch(/\*\*builds locally\*\* \(`npm install` when the lock\s+file changed, `npm run build`/);
});
