import { ManagedIdentityCredential, type TokenCredential } from '@azure/identity';
import type { AzureMonitorOpenTelemetryOptions, useAzureMonitor } from 'applicationinsights';
import { ConfigurationError } from 'azure-functions-idempotency';

type Env = Readonly<Record<string, string | undefined>>;

/** How ingestion authenticates, read from `APPLICATIONINSIGHTS_AUTHENTICATION_STRING`. */
export type TelemetryAuthentication =
  /** Local auth (instrumentation key only): refused by a component with `DisableLocalAuth: true`. */
  | { readonly kind: 'instrumentationKey' }
  /** Microsoft Entra ID with a managed identity: user-assigned when `clientId` is set, else system-assigned. */
  | { readonly kind: 'managedIdentity'; readonly clientId?: string };

/**
 * Parses `APPLICATIONINSIGHTS_AUTHENTICATION_STRING` as the Functions host and the Application
 * Insights agent do: `Authorization=AAD` (Entra ID) with an optional `ClientId=<guid>`.
 * @throws ConfigurationError for a string that names another scheme or is malformed.
 */
export function telemetryAuthentication(env: Env): TelemetryAuthentication {
  const text = env.APPLICATIONINSIGHTS_AUTHENTICATION_STRING?.trim();
  if (!text) return { kind: 'instrumentationKey' };
  const fields: Record<string, string> = {};
  for (const part of text.split(';')) {
    if (!part.trim()) continue;
    const eq = part.indexOf('=');
    if (eq <= 0) throw new ConfigurationError(`APPLICATIONINSIGHTS_AUTHENTICATION_STRING: "${part.trim()}" is not key=value`);
    fields[part.slice(0, eq).trim().toLowerCase()] = part.slice(eq + 1).trim();
  }
  if (fields.authorization?.toUpperCase() !== 'AAD') {
    throw new ConfigurationError('APPLICATIONINSIGHTS_AUTHENTICATION_STRING: only Authorization=AAD (Microsoft Entra ID) is supported');
  }
  return fields.clientid ? { kind: 'managedIdentity', clientId: fields.clientid } : { kind: 'managedIdentity' };
}

/** The credential of a managed identity; constructing it sends nothing (the token is fetched on first export). */
export function managedIdentityCredential(clientId: string | undefined): TokenCredential {
  return clientId ? new ManagedIdentityCredential({ clientId }) : new ManagedIdentityCredential();
}

/**
 * The options the Azure Monitor distro starts with, or undefined when telemetry stays off
 * (`APPLICATIONINSIGHTS_CONNECTION_STRING` unset: tests, the demo, CI, local runs).
 * With an Entra authentication string the exporter gets the managed identity's credential, so the
 * app's own metrics and logs are accepted by a component that has local auth disabled.
 */
export function telemetryOptions(
  env: Env = process.env,
  credentialFor: (clientId: string | undefined) => TokenCredential = managedIdentityCredential,
): AzureMonitorOpenTelemetryOptions | undefined {
  const connectionString = env.APPLICATIONINSIGHTS_CONNECTION_STRING?.trim();
  if (!connectionString) return undefined;
  const auth = telemetryAuthentication(env);
  return {
    azureMonitorExporterOptions: {
      connectionString,
      ...(auth.kind === 'managedIdentity' ? { credential: credentialFor(auth.clientId) } : {}),
    },
    // The Functions host already records requests and logs; the app adds its own metrics and logs.
    enableLiveMetrics: false,
    enableAutoCollectPerformance: false,
    instrumentationOptions: { console: { enabled: false } },
  };
}

/**
 * Starts Application Insights (the Azure Monitor OpenTelemetry distro in `applicationinsights`)
 * only when `APPLICATIONINSIGHTS_CONNECTION_STRING` is set (in Azure). Never in tests, the demo or
 * CI: once started, the SDK reaches Azure hosts (instance metadata, live metrics, a settings poll). The distro registers global
 * OpenTelemetry providers, which `Telemetry` then writes to.
 * @param start the distro's `useAzureMonitor` (tests pass a recorder).
 * @returns the options it was started with, or undefined when it was not started.
 */
export function startTelemetry(
  env: Env = process.env,
  start: (options: AzureMonitorOpenTelemetryOptions) => void = (options) => {
    // Loaded lazily so that nothing of the SDK is even imported where it must not run.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    (require('applicationinsights') as { useAzureMonitor: typeof useAzureMonitor }).useAzureMonitor(options);
  },
  credentialFor?: (clientId: string | undefined) => TokenCredential,
): AzureMonitorOpenTelemetryOptions | undefined {
  const options = telemetryOptions(env, credentialFor);
  if (options) start(options);
  return options;
}
