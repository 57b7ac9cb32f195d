using System.Collections.Concurrent;
using System.Text;
using Microsoft.Extensions.Logging;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

/// <summary>
/// Counts the log records this host would forward to Application Insights, by category and level, with their bytes
/// (docs/durable.md, "The host's own telemetry, counted"): it is given host.json's <c>logging.logLevel</c> as filter
/// rules (<see cref="HostJsonLogLevels"/>), as the Functions host's logger is. Nothing is sent anywhere. Bytes: the
/// UTF-8 JSON of a trace row's Message and customDimensions, without Application Insights' envelope.
/// </summary>
public sealed class CountingLoggerProvider : ILoggerProvider
{
    private sealed class Tally { public long Records; public long Bytes; public string Sample; }

    private readonly ConcurrentDictionary<(string Category, LogLevel Level), Tally> tallies = new();

    public ILogger CreateLogger(string categoryName) => new CountingLogger(this, categoryName);

    public void Dispose() { }

    internal void Add(string category, LogLevel level, long bytes, Func<string> sample)
    {
        var tally = this.tallies.GetOrAdd((category, level), _ => new Tally { Sample = sample() });
        Interlocked.Increment(ref tally.Records);
        Interlocked.Add(ref tally.Bytes, bytes);
    }

    /// <summary>
    /// The counts so far: <c>{"records":[{"category","level","records","bytes","sample"}]}</c>, one row per category and
    /// level; <c>sample</c> is the first record's message (at most 300 characters), to say what the records are.
    /// </summary>
    public string SnapshotJson()
    {
        var rows = new JArray();
        foreach (var ((category, level), tally) in this.tallies.OrderBy(kv => kv.Key.Category, StringComparer.Ordinal).ThenBy(kv => kv.Key.Level))
            rows.Add(new JObject
            {
                ["category"] = category,
                ["level"] = level.ToString(),
                ["records"] = Interlocked.Read(ref tally.Records),
                ["bytes"] = Interlocked.Read(ref tally.Bytes),
                ["sample"] = tally.Sample,
            });
        return new JObject { ["records"] = rows }.ToString(Formatting.None);
    }

    private sealed class CountingLogger : ILogger
    {
        private readonly CountingLoggerProvider owner;
        private readonly string category;

        public CountingLogger(CountingLoggerProvider owner, string category) { this.owner = owner; this.category = category; }

        public IDisposable BeginScope<TState>(TState state) where TState : notnull => null;

        // The factory's filter rules for this provider (host.json's levels) decide; this logger takes what reaches it.
        public bool IsEnabled(LogLevel logLevel) => logLevel != LogLevel.None;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception exception, Func<TState, Exception, string> formatter)
        {
            if (logLevel == LogLevel.None) return;
            var dimensions = new JObject { ["Category"] = this.category, ["LogLevel"] = logLevel.ToString() };
            if (eventId.Id != 0) dimensions["EventId"] = eventId.Id;
            if (!string.IsNullOrEmpty(eventId.Name)) dimensions["EventName"] = eventId.Name;
            if (state is IEnumerable<KeyValuePair<string, object>> values)
                foreach (var (key, value) in values)
                    if (key != "{OriginalFormat}") dimensions["prop__" + key] = value?.ToString();
            string message = formatter(state, exception) ?? "";
            var row = new JObject { ["message"] = message, ["customDimensions"] = dimensions };
            if (exception != null) row["exception"] = exception.ToString();
            this.owner.Add(this.category, logLevel, Encoding.UTF8.GetByteCount(row.ToString(Formatting.None)), () => message.Length > 300 ? message[..300] : message);
        }
    }
}

/// <summary>host.json's <c>logging.logLevel</c>: category (or <c>default</c>) to level.</summary>
public static class HostJsonLogLevels
{
    /// <summary>The levels host.json sets; <c>default</c> is Information when host.json leaves it out (the Functions host's default).</summary>
    public static Dictionary<string, LogLevel> Read(string hostJsonPath)
    {
        var json = JObject.Parse(File.ReadAllText(hostJsonPath));
        var levels = new Dictionary<string, LogLevel>(StringComparer.OrdinalIgnoreCase) { ["default"] = LogLevel.Information };
        if (json.SelectToken("logging.logLevel") is JObject section)
            foreach (var p in section.Properties())
                levels[p.Name] = Enum.Parse<LogLevel>(p.Value.ToString(), ignoreCase: true);
        return levels;
    }

    /// <summary>Filter rules for provider <typeparamref name="T"/> only, the way the Functions host applies host.json's levels.</summary>
    public static ILoggingBuilder AddHostJsonFilters<T>(this ILoggingBuilder builder, Dictionary<string, LogLevel> levels) where T : ILoggerProvider
    {
        foreach (var (category, level) in levels)
            builder.AddFilter<T>(category.Equals("default", StringComparison.OrdinalIgnoreCase) ? null : category, level);
        return builder;
    }
}
