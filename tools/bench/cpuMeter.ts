import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** CPU milliseconds (user + system) used so far by this process and, on Linux, by another process. */
export interface CpuSample {
  readonly clientMs: number;
  /** undefined where /proc is not readable (not Linux) or the process is gone. */
  readonly serverMs: number | undefined;
  /** Busy CPU of the whole machine, all cores (/proc/stat); undefined where not readable. */
  readonly machineMs: number | undefined;
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
  return { clientMs: (usage.user + usage.system) / 1000, serverMs: processCpuMs(serverPid), machineMs: machineBusyMs() };
}

function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime (14th), stime (15th)
    return (ticks * 1000) / clockTicks();
  } catch {
    return undefined;
  }
}

function machineBusyMs(): number | undefined {
  try {
    // cpu  user nice system idle iowait irq softirq steal ...
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, , , irq, softirq, steal] = fields;
    return ((user + nice + system + irq + softirq + (steal ?? 0)) * 1000) / clockTicks();
  } catch {
    return undefined;
  }
}

/** CPU used between two samples. */
export function cpuBetween(before: CpuSample, after: CpuSample): CpuSample {
  return {
    clientMs: after.clientMs - before.clientMs,
    serverMs: before.serverMs === undefined || after.serverMs === undefined ? undefined : after.serverMs - before.serverMs,
    machineMs: before.machineMs === undefined || after.machineMs === undefined ? undefined : after.machineMs - before.machineMs,
  };
}
