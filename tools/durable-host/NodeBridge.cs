using System.Collections.Concurrent;
using System.Diagnostics;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

/// <summary>
/// One long-lived Node process running the bridge (bridge.ts): it loads the built app's entry files with the
/// project's @azure/functions-core stand-in and invokes the registered functions through @azure/functions'
/// programming model. Requests and answers are JSON lines; answer lines start with <see cref="Marker"/>, so
/// anything else the app writes to stdout is passed through as a log line.
/// </summary>
public sealed class NodeBridge : IDisposable
{
    public const string Marker = "\u0001bridge ";
    public static NodeBridge Instance { get; set; }

    private readonly Process proc;
    private readonly ConcurrentDictionary<long, TaskCompletionSource<JToken>> pending = new();
    private long nextId;
    private readonly object writeLock = new();

    public NodeBridge(string bridgeJs, string args)
    {
        var psi = new ProcessStartInfo(Environment.GetEnvironmentVariable("DURABLE_HOST_NODE") ?? "node", $"\"{bridgeJs}\" {args}")
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        this.proc = Process.Start(psi)!;
        this.proc.ErrorDataReceived += (_, e) => { if (e.Data != null) Console.Error.WriteLine(e.Data); };
        this.proc.BeginErrorReadLine();
        new Thread(this.ReadLoop) { IsBackground = true, Name = "node-bridge-reader" }.Start();
    }

    private void ReadLoop()
    {
        string line;
        while ((line = this.proc.StandardOutput.ReadLine()) != null)
        {
            if (!line.StartsWith(Marker)) { Console.Error.WriteLine("[app] " + line); continue; }
            var msg = JObject.Parse(line.Substring(Marker.Length));
            if (this.pending.TryRemove(msg.Value<long>("id"), out var tcs))
            {
                if (msg.Value<bool>("ok")) tcs.TrySetResult(msg["result"]);
                else tcs.TrySetException(new Exception(msg.Value<string>("error")));
            }
        }
        foreach (var tcs in this.pending.Values) tcs.TrySetException(new Exception("node bridge exited"));
        // Without its worker the host can run nothing: exit, as the Functions host restarts a dead worker's host.
        Console.Error.WriteLine("[durable-host] the node bridge exited; stopping");
        Environment.Exit(3);
    }

    public Task<JToken> ListAsync() => this.Send(new JObject { ["kind"] = "list" });

    public Task<JToken> InvokeAsync(string functionName, string triggerPayload)
        => this.Send(new JObject { ["kind"] = "invoke", ["name"] = functionName, ["input"] = triggerPayload });

    private Task<JToken> Send(JObject request)
    {
        long id = Interlocked.Increment(ref this.nextId);
        var tcs = new TaskCompletionSource<JToken>(TaskCreationOptions.RunContinuationsAsynchronously);
        this.pending[id] = tcs;
        request["id"] = id;
        lock (this.writeLock)
        {
            this.proc.StandardInput.WriteLine(request.ToString(Formatting.None));
            this.proc.StandardInput.Flush();
        }
        return tcs.Task;
    }

    public void Dispose()
    {
        try { this.proc.StandardInput.Close(); this.proc.WaitForExit(3000); } catch { }
        try { if (!this.proc.HasExited) this.proc.Kill(); } catch { }
    }
}
