import { loadSettings, type Settings } from '../config/settings';
import { assertRetentionCoversRedelivery } from '../lifecycle/retention';
import { assertPatienceCoversCharge } from '../payments/chargePatience';
import { startTelemetry } from '../telemetry/startTelemetry';
import { Telemetry } from '../telemetry/Telemetry';

/**
 * The app's composition root in the Functions host: settings validated once at start (a bad
 * setting, or a retention shorter than the broker's redelivery window, fails the start with the
 * settings' names; so does a delivery count and lease too short to outlast the slowest charge),
 * Application Insights started only when configured.
 * Only `src/app/host.ts` uses this (for the registrations); tests and the local rigs build their own objects.
 */
let settings: Settings | undefined;
let telemetry: Telemetry | undefined;

export function appSettings(): Settings {
  if (!settings) {
    settings = loadSettings();
    assertRetentionCoversRedelivery(settings);
    assertPatienceCoversCharge(settings);
    startTelemetry();
  }
  return settings;
}

export function appTelemetry(): Telemetry {
  appSettings();
  return (telemetry ??= new Telemetry());
}

/** Memoizes a factory (built on first use, then shared by the invocations of this worker). */
export function once<T>(factory: () => T): () => T {
  let value: T | undefined;
  let built = false;
  return () => {
    if (!built) {
      value = factory();
      built = true;
    }
    return value as T;
  };
}
