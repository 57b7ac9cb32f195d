import { ManagedIdentityCredential, type TokenCredential } from '@azure/identity';
import type { AzureMonitorOpenTelemetryOptions } from 'applicationinsights';
import { startTelemetry, telemetryAuthentication } from '../../src/telemetry/startTelemetry';

/**
 * Application Insights start-up, with the distro's start replaced by a recorder: nothing is exported
 * and no network call is made (ManagedIdentityCredential asks for a token only on first export).
 */
const CONNECTION_STRING = 'InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=https://example.invalid/';

function startWith(env: Record<string, string>) {
  const started: AzureMonitorOpenTelemetryOptions[] = [];
  const asked: Array<string | undefined> = [];
  const credential = new ManagedIdentityCredential({ clientId: 'recorded' });
  const options = startTelemetry(
    env,
    (o) => started.push(o),
    (clientId) => {
      asked.push(clientId);
      return credential;
    },
  );
  return { started, asked, options, credential };
}

describe('startTelemetry', () => {
  test('without APPLICATIONINSIGHTS_CONNECTION_STRING nothing starts (tests, demo, CI, local runs)', () => {
    const { started, options } = startWith({ APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'Authorization=AAD' });
    expect(started).toEqual([]);
    expect(options).toBeUndefined();
  });

  test('with the authentication string Azure deploys, the exporter gets the user-assigned identity before it starts', () => {
    const { started, asked, credential } = startWith({
      APPLICATIONINSIGHTS_CONNECTION_STRING: CONNECTION_STRING,
      APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=3b2e4f1a-0000-4000-8000-000000000001;Authorization=AAD',
    });
    expect(started).toHaveLength(1);
    expect(asked).toEqual(['3b2e4f1a-0000-4000-8000-000000000001']);
    expect(started[0].azureMonitorExporterOptions).toEqual({ connectionString: CONNECTION_STRING, credential });
    expect(started[0].enableLiveMetrics).toBe(false);
  });

  test('the default credential factory builds a ManagedIdentityCredential (no token request at construction)', () => {
    const started: AzureMonitorOpenTelemetryOptions[] = [];
    startTelemetry(
      { APPLICATIONINSIGHTS_CONNECTION_STRING: CONNECTION_STRING, APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'Authorization=AAD;ClientId=abc' },
      (o) => started.push(o),
    );
    const credential = started[0].azureMonitorExporterOptions?.credential as TokenCredential;
    expect(credential).toBeInstanceOf(ManagedIdentityCredential);
  });

  test('Authorization=AAD without ClientId uses the system-assigned identity; no string means instrumentation key only', () => {
    expect(telemetryAuthentication({ APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'Authorization=AAD' })).toEqual({ kind: 'managedIdentity' });
    expect(telemetryAuthentication({})).toEqual({ kind: 'instrumentationKey' });
    const { started } = startWith({ APPLICATIONINSIGHTS_CONNECTION_STRING: CONNECTION_STRING });
    expect(started[0].azureMonitorExporterOptions).toEqual({ connectionString: CONNECTION_STRING });
  });

  test('a malformed or non-Entra authentication string refuses to start, naming the setting', () => {
    expect(() =>
      startWith({ APPLICATIONINSIGHTS_CONNECTION_STRING: CONNECTION_STRING, APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'Authorization=Basic' }),
    ).toThrow(/APPLICATIONINSIGHTS_AUTHENTICATION_STRING: only Authorization=AAD/);
    expect(() => telemetryAuthentication({ APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'AAD' })).toThrow(
      /APPLICATIONINSIGHTS_AUTHENTICATION_STRING: "AAD" is not key=value/,
    );
  });
});
