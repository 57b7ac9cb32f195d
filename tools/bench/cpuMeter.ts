import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** CPU milliseconds (user + system) used so far by this process and, on Linux, by another process. */
export interface CpuSample {
  readonly clientMs: number;
  /** undefined where /proc is not readable (not Linux) or the process is gone. */
  readonly serverMs: number | undefined;
}

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU time of this process, and of `serverPid` read from /proc/<pid>/stat (utime + stime). */
export function sampleCpu(serverPid: number | undefined): CpuSample {
  const usage = process.cpuUsage();
  const clientMs = (usage.user + usage.system) / 1000;
  if (serverPid === undefined) return { clientMs, serverMs: undefined };
  try {
    const stat = readFileSync(`/proc/${serverPid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime (14th), stime (15th)
    return { clientMs, serverMs: (ticks * 1000) / clockTicks() };
  } catch {
    return { clientMs, serverMs: undefined };
  }
}

/** CPU used between two samples. */
export function cpuBetween(before: CpuSample, after: CpuSample): CpuSample {
  return {
    clientMs: after.clientMs - before.clientMs,
    serverMs: before.serverMs === undefined || after.serverMs === undefined ? undefined : after.serverMs - before.serverMs,
  };
}
