'use strict';
/**
 * Loads a built Functions app the way the Node worker does, in its own process, and prints what it
 * registered as one JSON line. The worker provides the module `@azure/functions-core`; here a recorder
 * stands in for it, and for `applicationinsights` (so nothing is exported and no network call is made).
 * Usage: node workerLoader.js <entry file>...   (env: the app settings)
 * Output: {"functions":[{name, bindings}], "telemetry":[{...}], "error": null | {name, message}, "realTelemetryModules": [paths],
 *          "logs": [{level, message}]}   (console.error/warn lines written while loading: the worker sends them to the host's log)
 */
const Module = require('node:module');

const functions = [];
const telemetry = [];
const coreApi = {
  version: '3.10.1',
  hostVersion: '4.1040.0',
  registerFunction(metadata, callback) {
    functions.push({ name: metadata.name, bindings: metadata.bindings, hasCallback: typeof callback === 'function' });
    return { dispose() {} };
  },
  setProgrammingModel() {},
  getProgrammingModel() {
    return undefined;
  },
  registerHook() {
    return { dispose() {} };
  },
  log() {},
};
const appInsightsRecorder = {
  useAzureMonitor(options) {
    const exporter = options.azureMonitorExporterOptions || {};
    telemetry.push({
      connectionString: exporter.connectionString,
      credential: exporter.credential ? exporter.credential.constructor.name : null,
      enableLiveMetrics: options.enableLiveMetrics,
    });
  },
};
const originalLoad = Module._load;
Module._load = function load(request, parent, isMain) {
  if (request === '@azure/functions-core') return coreApi;
  if (request === 'applicationinsights') return appInsightsRecorder;
  return originalLoad.call(this, request, parent, isMain);
};

const logs = [];
for (const level of ['error', 'warn']) {
  console[level] = (...args) => logs.push({ level, message: args.map(String).join(' ') });
}

let error = null;
for (const file of process.argv.slice(2)) {
  try {
    require(file);
  } catch (e) {
    // On Node 20+ the worker stops here: an entry point that throws blocks every function of the app.
    error = { file, name: e && e.name, message: e && e.message };
    break;
  }
}
// Proof that the recorder stood in: no module of the real SDK (or of the Azure Monitor distro) was loaded.
const realTelemetryModules = Object.keys(require.cache).filter((path) =>
  /[\\/]node_modules[\\/](applicationinsights|@azure[\\/]monitor-opentelemetry[^\\/]*)[\\/]/.test(path),
);
process.stdout.write(`${JSON.stringify({ functions, telemetry, error, realTelemetryModules, logs })}\n`);
