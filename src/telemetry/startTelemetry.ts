/**
 * Starts Application Insights only when `APPLICATIONINSIGHTS_CONNECTION_STRING` is set (in Azure).
 * Never in tests, the demo or CI: once started, the SDK reaches Azure hosts (see ENVIRONMENT.md).
 * The SDK registers global OpenTelemetry providers, which `Telemetry` then writes to.
 * @returns true when it was started.
 */
export function startTelemetry(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  const connectionString = env.APPLICATIONINSIGHTS_CONNECTION_STRING?.trim();
  if (!connectionString) return false;
  // Loaded lazily so that nothing of the SDK is even imported where it must not run.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const appInsights = require('applicationinsights') as typeof import('applicationinsights');
  appInsights.setup(connectionString).setAutoCollectConsole(false).setSendLiveMetrics(false).start();
  return true;
}
