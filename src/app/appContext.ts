import { loadAppSettings, type AppSettings, type Feature } from '../config/features';
import type { Settings } from '../config/settings';
import { assertRetentionCoversRedelivery } from '../lifecycle/retention';
import { startTelemetry } from '../telemetry/startTelemetry';
import { Telemetry } from '../telemetry/Telemetry';

/**
 * The app's composition root in the Functions host: settings validated once at start (a bad shared
 * setting, or a retention shorter than the broker's redelivery window, fails the start with the settings'
 * names; a bad setting of one feature is kept as that feature's problem, see `config/features.ts`),
 * Application Insights started only when configured.
 * Only `src/app/host.ts` uses this (for the registrations); tests and the local rigs build their own objects.
 */
let app: AppSettings | undefined;
let telemetry: Telemetry | undefined;

function appContext(): AppSettings {
  if (!app) {
    const loaded = loadAppSettings();
    assertRetentionCoversRedelivery(loaded.settings);
    startTelemetry();
    app = loaded;
  }
  return app;
}

export function appSettings(): Settings {
  return appContext().settings;
}

/** Why `feature` cannot run with these settings (its settings named), or undefined when it can. */
export function featureProblem(feature: Feature): string | undefined {
  return appContext().problems[feature];
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
