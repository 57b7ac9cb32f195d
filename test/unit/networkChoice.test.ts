import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compiledMainTemplate, describeCompiled } from '../support/compiledTemplate';

/**
 * The deployer chooses the network (issue 63), as Microsoft's Flex Consumption quickstarts make them do
 * (Azure-Samples/functions-quickstart-*-azd: `param vnetEnabled bool`, no default): azd prompts for a template
 * parameter that has no default value and no value in main.parameters.json (an azd variable with no `=default`
 * resolves to nothing when the environment lacks it). Nothing in azure.yaml or the parameters file may answer for them.
 */
const ROOT = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

describe('the network choice is the deployer\u2019s: azd asks for vnetEnabled', () => {
  test('infra/main.bicep declares vnetEnabled a bool without a default', () => {
    const declaration = /^param vnetEnabled (\S+)(.*)$/m.exec(read('infra/main.bicep'));
    expect(declaration?.[1]).toBe('bool');
    expect(declaration?.[2].trim()).toBe(''); // no `= false`
  });

  test('main.parameters.json passes ${VNET_ENABLED} with no fallback; azure.yaml sets no infra parameter or VNET_ENABLED', () => {
    const parameters = JSON.parse(read('infra/main.parameters.json')) as { parameters: Record<string, { value: unknown }> };
    expect(parameters.parameters.vnetEnabled).toEqual({ value: '${VNET_ENABLED}' });
    const azureYaml = read('azure.yaml');
    expect(azureYaml).not.toMatch(/VNET_ENABLED\s*[=:]/);
    expect(azureYaml).not.toMatch(/^\s*parameters\s*:/m);
    // The other switches keep their defaults (zone redundancy off, one shard): only the network is asked.
    expect(parameters.parameters.zoneRedundant).toEqual({ value: '${ZONE_REDUNDANT=false}' });
  });

  describeCompiled('compiled by the real Bicep CLI', () => {
    test('the ARM template has vnetEnabled as a bool parameter with no defaultValue (azd prompts for such a parameter)', () => {
      const declared = (compiledMainTemplate() as unknown as { parameters: Record<string, { type: string; defaultValue?: unknown }> }).parameters;
      expect(declared.vnetEnabled.type).toBe('bool');
      expect(declared.vnetEnabled).not.toHaveProperty('defaultValue');
      // Every other parameter azd fills from the parameters file or a default: the network is the one question left.
      const asked = Object.entries(declared)
        .filter(([, p]) => !('defaultValue' in p))
        .map(([name]) => name)
        .sort();
      expect(asked).toEqual(['environmentName', 'location', 'paymentProviderUrl', 'vnetEnabled']);
    });
  });
});
