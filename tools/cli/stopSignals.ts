/**
 * Clean stops for the tools (demo, bench): SIGINT and SIGTERM stop everything the tool started (what outlives a
 * plain `process.exit`, such as a child process, registers its stop with {@link whenStopped}), then exit 130 / 143.
 * Children also exit on their own when the tool dies without a chance to stop them (`AzuriteProcess` watches stdin).
 */

type Cleanup = () => Promise<void> | void;

/** Shared by every copy of this module in the process (tests load modules once per file). */
const cleanups: Set<Cleanup> = ((globalThis as Record<symbol, unknown>)[Symbol.for('idempotent-consumer.stopCleanups')] ??= new Set<Cleanup>()) as Set<Cleanup>;

/**
 * Registers `cleanup` to run when the tool is stopped by a signal.
 * @returns a function that unregisters it (call it once the thing is stopped normally).
 */
export function whenStopped(cleanup: Cleanup): () => void {
  cleanups.add(cleanup);
  return () => void cleanups.delete(cleanup);
}

const SIGNAL_EXIT: Record<'SIGINT' | 'SIGTERM', number> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Installs the SIGINT and SIGTERM handlers of a tool: print one line on stderr, run every registered
 * cleanup (at most `graceMs`), print what was stopped, exit 130 or 143. A second signal exits at once.
 */
export function installStopSignals(tool: string, options: { graceMs?: number; write?: (line: string) => void } = {}): void {
  const write = options.write ?? ((line: string) => void process.stderr.write(`${line}\n`));
  let stopping = false;
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => {
    const code = SIGNAL_EXIT[signal];
    if (stopping) process.exit(code);
    stopping = true;
    const pending = [...cleanups];
    write(`\n${tool}: ${signal} received, stopping ${pending.length} thing(s) it started...`);
    const timer = setTimeout(() => {
      write(`${tool}: cleanup took longer than ${options.graceMs ?? 5_000} ms; exiting anyway`);
      process.exit(code);
    }, options.graceMs ?? 5_000);
    void Promise.allSettled(pending.map(async (c) => c())).then((results) => {
      clearTimeout(timer);
      const failed = results.filter((r) => r.status === 'rejected').length;
      write(`${tool}: stopped${failed > 0 ? ` (${failed} cleanup(s) failed)` : ''}; exit ${code}`);
      process.exit(code);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
