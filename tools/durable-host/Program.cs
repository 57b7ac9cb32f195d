using Microsoft.Azure.WebJobs;
using Microsoft.Azure.WebJobs.Extensions.DurableTask;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

// The local Durable host (docs/durable.md). Environment:
//   AzureWebJobsStorage          the task hub's storage (Azurite: blob, queue and table endpoints)
//   DURABLE_HOST_JSON            path of the app's host.json (its extensions.durableTask section is applied)
//   DURABLE_HOST_BRIDGE          the Node bridge script; DURABLE_HOST_BRIDGE_ARGS its arguments (app dir, entry files)
//   DURABLE_HOST_OVERRIDES       optional: JSON laid over host.json's durableTask section (tests scale the polling
//                                interval and the queue visibility timeouts; docs/durable.md says which and why)
//   DURABLE_HOST_ROLE            optional: `client` registers no orchestration, entity or activity (and starts no Node
//                                worker): the host serves only the durableClient's HTTP API (starts, status), so the
//                                task hub's work waits in its queues until a `worker` host (the default) runs it
// Prints "DURABLE_HOST_CLIENT <json>" (the durableClient binding's data, from the extension) and
// "DURABLE_HOST_READY", then runs until SIGTERM or until its stdin ends (the parent died). A stdin line `telemetry`
// prints "DURABLE_HOST_TELEMETRY <json>": the log records host.json's logging.logLevel lets through, counted
// (CountingLoggerProvider).
string Env(string name) => Environment.GetEnvironmentVariable(name) is { Length: > 0 } v ? v : null;
string conn = Env("AzureWebJobsStorage") ?? throw new InvalidOperationException("AzureWebJobsStorage is not set");
string hostJsonPath = Env("DURABLE_HOST_JSON") ?? throw new InvalidOperationException("DURABLE_HOST_JSON is not set");
string bridge = Env("DURABLE_HOST_BRIDGE") ?? throw new InvalidOperationException("DURABLE_HOST_BRIDGE is not set");
string bridgeArgs = Env("DURABLE_HOST_BRIDGE_ARGS") ?? "";

var config = HostJson.DurableTaskSettings(hostJsonPath, Env);
if (Env("DURABLE_HOST_OVERRIDES") is string overrides)
    HostJson.Flatten(JObject.Parse(overrides), "AzureWebJobs:extensions:durableTask", config, Env);
string hub = config["AzureWebJobs:extensions:durableTask:hubName"] ?? throw new InvalidOperationException("host.json has no extensions.durableTask.hubName");
config["AzureWebJobsStorage"] = conn;
Environment.SetEnvironmentVariable("DURABLE_HOST_HUB", hub);
Environment.SetEnvironmentVariable("FUNCTIONS_WORKER_RUNTIME", "node");

bool clientOnly = Env("DURABLE_HOST_ROLE") == "client";
JArray registrations = new JArray();
if (!clientOnly)
{
    NodeBridge.Instance = new NodeBridge(bridge, bridgeArgs);
    registrations = (JArray)await NodeBridge.Instance.ListAsync();
}
Type shells = DynamicFunctions.Build(registrations);

var telemetryCounter = new CountingLoggerProvider();
var host = new HostBuilder()
    .ConfigureAppConfiguration(c => c.AddInMemoryCollection(config))
    .ConfigureWebJobs(b =>
    {
        b.AddDurableTask();
        b.Services.AddSingleton<ITypeLocator>(new ShellTypeLocator(shells, typeof(ClientBinding)));
        b.Services.AddSingleton<Microsoft.Azure.WebJobs.Host.Config.IWebHookProvider, LoopbackWebHookProvider>();
    })
    .ConfigureLogging(l => l.AddSimpleConsole(o => o.SingleLine = true).SetMinimumLevel(LogLevel.Warning)
        .AddFilter("Host.Triggers.DurableTask", Env("DURABLE_HOST_VERBOSE") == "1" ? LogLevel.Information : LogLevel.Warning)
        .AddProvider(telemetryCounter).AddHostJsonFilters<CountingLoggerProvider>(HostJsonLogLevels.Read(hostJsonPath)))
    .Build();

await host.StartAsync();
var jobHost = host.Services.GetRequiredService<IJobHost>();
await jobHost.CallAsync(nameof(ClientBinding.Capture));
Console.WriteLine("DURABLE_HOST_CLIENT " + ClientBinding.Json);
Console.WriteLine($"DURABLE_HOST_READY hub={hub} role={(clientOnly ? "client" : "worker")} config={JsonConvert.SerializeObject(config.Where(kv => kv.Key.Contains("durableTask")).ToDictionary(kv => kv.Key, kv => kv.Value))}");

// The parent holds our stdin: when it ends (the parent exited or was killed), stop.
var stdinClosed = Task.Run(() =>
{
    string line;
    while ((line = Console.In.ReadLine()) != null)
        if (line == "telemetry") Console.WriteLine("DURABLE_HOST_TELEMETRY " + telemetryCounter.SnapshotJson());
});
var lifetime = host.Services.GetRequiredService<IHostApplicationLifetime>();
var stopping = new TaskCompletionSource();
lifetime.ApplicationStopping.Register(() => stopping.TrySetResult());
await Task.WhenAny(stdinClosed, stopping.Task);
// A bounded stop: with the parent killed, its Azurite (this hub's storage) is gone too, and the storage provider's
// retries would keep the process alive for minutes; exit within 10 s whatever still runs.
_ = Task.Delay(TimeSpan.FromSeconds(10)).ContinueWith(_ => Environment.Exit(0));
await host.StopAsync(TimeSpan.FromSeconds(5));
NodeBridge.Instance?.Dispose();
Environment.Exit(0);
return 0;

/// <summary>The durableClient input binding's data, as the extension converts its client for an out-of-process function.</summary>
public static class ClientBinding
{
    public static string Json;

    [NoAutomaticTrigger]
    public static void Capture([DurableClient(TaskHub = "%DURABLE_HOST_HUB%")] string client) => Json = client;
}

/// <summary>host.json's extensions.durableTask section as WebJobs configuration, with %NAME% resolved from the environment.</summary>
public static class HostJson
{
    public static Dictionary<string, string> DurableTaskSettings(string path, Func<string, string> env)
    {
        var json = JObject.Parse(File.ReadAllText(path));
        var section = json.SelectToken("extensions.durableTask") as JObject ?? throw new InvalidOperationException($"{path} has no extensions.durableTask");
        var result = new Dictionary<string, string>();
        Flatten(section, "AzureWebJobs:extensions:durableTask", result, env);
        return result;
    }

    public static void Flatten(JToken token, string prefix, Dictionary<string, string> into, Func<string, string> env)
    {
        if (token is JObject o) { foreach (var p in o.Properties()) Flatten(p.Value, $"{prefix}:{p.Name}", into, env); return; }
        if (token is JArray a) { for (int i = 0; i < a.Count; i++) Flatten(a[i], $"{prefix}:{i}", into, env); return; }
        string value = token.Type == JTokenType.Boolean ? token.ToString().ToLowerInvariant() : token.ToString();
        into[prefix] = System.Text.RegularExpressions.Regex.Replace(value, "%([A-Za-z0-9_]+)%",
            m => env(m.Groups[1].Value) ?? throw new InvalidOperationException($"host.json refers to %{m.Groups[1].Value}%, which is not set"));
    }
}
