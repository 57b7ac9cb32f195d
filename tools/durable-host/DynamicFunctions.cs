using System.Reflection;
using System.Reflection.Emit;
using Microsoft.Azure.WebJobs;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

/// <summary>
/// Emits one WebJobs function shell per JS registration reported by the Node bridge
/// (orchestrationTrigger / entityTrigger / activityTrigger), so no C# is written per JS function.
/// Each shell is: [FunctionName(name)] static Task<T> F([XxxTrigger] string payload) => Dispatch.Xxx(name, payload).
/// </summary>
public static class DynamicFunctions
{
    public static Type Build(JArray registrations)
    {
        var asm = AssemblyBuilder.DefineDynamicAssembly(new AssemblyName("JsFunctionShells"), AssemblyBuilderAccess.Run);
        var mod = asm.DefineDynamicModule("JsFunctionShells");
        var tb = mod.DefineType("JsFunctions", TypeAttributes.Public | TypeAttributes.Abstract | TypeAttributes.Sealed | TypeAttributes.Class);
        var fnNameCtor = typeof(FunctionNameAttribute).GetConstructor(new[] { typeof(string) })!;

        foreach (JObject reg in registrations)
        {
            string name = reg.Value<string>("name");
            string triggerType = ((JObject)reg["bindings"]).Properties().Select(p => p.Value.Value<string>("type")).First(t => t.EndsWith("Trigger", StringComparison.OrdinalIgnoreCase));
            Type triggerAttr; MethodInfo dispatch;
            switch (triggerType)
            {
                case "orchestrationTrigger": triggerAttr = typeof(Microsoft.Azure.WebJobs.Extensions.DurableTask.OrchestrationTriggerAttribute); dispatch = typeof(Dispatch).GetMethod(nameof(Dispatch.Orchestration))!; break;
                case "entityTrigger": triggerAttr = typeof(Microsoft.Azure.WebJobs.Extensions.DurableTask.EntityTriggerAttribute); dispatch = typeof(Dispatch).GetMethod(nameof(Dispatch.Entity))!; break;
                case "activityTrigger": triggerAttr = typeof(Microsoft.Azure.WebJobs.Extensions.DurableTask.ActivityTriggerAttribute); dispatch = typeof(Dispatch).GetMethod(nameof(Dispatch.Activity))!; break;
                default: continue; // not a Durable trigger: the local Service Bus and timer rigs invoke those
            }
            var mb = tb.DefineMethod(name, MethodAttributes.Public | MethodAttributes.Static, dispatch.ReturnType, new[] { typeof(string) });
            mb.SetCustomAttribute(new CustomAttributeBuilder(fnNameCtor, new object[] { name }));
            var pb = mb.DefineParameter(1, ParameterAttributes.None, "payload");
            pb.SetCustomAttribute(new CustomAttributeBuilder(triggerAttr.GetConstructor(Type.EmptyTypes)!, Array.Empty<object>()));
            var il = mb.GetILGenerator();
            il.Emit(OpCodes.Ldstr, name);
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Call, dispatch);
            il.Emit(OpCodes.Ret);
            Console.Error.WriteLine($"[durable-host] {triggerType,-20} -> {name}");
        }
        return tb.CreateType()!;
    }
}

public static class Dispatch
{
    // OrchestrationTrigger bound to string: context JSON in, OrchestratorState JSON out (OutOfProcOrchestrationShim).
    public static async Task<string> Orchestration(string name, string payload)
        => (await NodeBridge.Instance.InvokeAsync(name, payload).ConfigureAwait(false)).ToString(Formatting.None);

    // EntityTrigger bound to string: batch JSON in, JObject out (TaskEntityShim.ExecuteOutOfProcBatch requires JObject).
    public static async Task<JObject> Entity(string name, string payload)
        => (JObject)await NodeBridge.Instance.InvokeAsync(name, payload).ConfigureAwait(false);

    // ActivityTrigger bound to string (legacy OOProc: serialized JSON of the input); the JS return value goes back as a JToken.
    public static async Task<JToken> Activity(string name, string payload)
        => await NodeBridge.Instance.InvokeAsync(name, payload).ConfigureAwait(false);
}

/// <summary>WebJobs ITypeLocator that exposes the emitted shells plus the static helper class.</summary>
public sealed class ShellTypeLocator : ITypeLocator
{
    private readonly Type[] types;
    public ShellTypeLocator(params Type[] types) => this.types = types;
    public IReadOnlyList<Type> GetTypes() => this.types;
}

/// <summary>
/// The Functions host supplies IWebHookProvider; a plain WebJobs host does not, and DurableTaskExtension's
/// webhook delegate then NREs when a durableClient payload (creation/management URLs) is built.
/// </summary>
public sealed class LoopbackWebHookProvider : Microsoft.Azure.WebJobs.Host.Config.IWebHookProvider
{
    public Uri GetUrl(Microsoft.Azure.WebJobs.Host.Config.IExtensionConfigProvider extension)
        => new Uri("http://127.0.0.1:7071/runtime/webhooks/durabletask");
}
