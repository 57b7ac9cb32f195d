import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

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

/** CPU ms (utime + stime) of `pid`, read from /proc/<pid>/stat; undefined off Linux or when it is gone. */
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

/** Busy CPU ms of the whole machine, all cores (/proc/stat). */
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

/** CPU ms used so far by each named process (this one is `process.cpuUsage`), and by the whole machine. */
export interface ProcessesSample {
  readonly processes: Readonly<Record<string, number | undefined>>;
  readonly machineMs: number | undefined;
}

/** Samples several processes at once: `self` for this process, any other name for a pid read from /proc. */
export function sampleProcesses(pids: Readonly<Record<string, number | 'self' | undefined>>): ProcessesSample {
  const usage = process.cpuUsage();
  const processes: Record<string, number | undefined> = {};
  for (const [name, pid] of Object.entries(pids)) processes[name] = pid === 'self' ? (usage.user + usage.system) / 1000 : processCpuMs(pid);
  return { processes, machineMs: machineBusyMs() };
}

/** CPU ms between two samples, by process (undefined where a process was not readable in either). */
export function processesBetween(before: ProcessesSample, after: ProcessesSample): ProcessesSample {
  const processes: Record<string, number | undefined> = {};
  for (const [name, ms] of Object.entries(after.processes)) {
    const was = before.processes[name];
    processes[name] = ms === undefined || was === undefined ? undefined : ms - was;
  }
  return { processes, machineMs: after.machineMs === undefined || before.machineMs === undefined ? undefined : after.machineMs - before.machineMs };
}

/** Peak resident memory (VmHWM) in MB of every process in the process group `pgid` (a detached child's), summed. */
export function groupPeakRssMb(pgid: number | undefined): number | undefined {
  if (pgid === undefined) return undefined;
  let kb = 0;
  let found = false;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== pgid) continue; // pgrp (5th field)
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'));
      if (hwm) {
        kb += Number(hwm[1]);
        found = true;
      }
    } catch {
      // gone meanwhile
    }
  }
  return found ? Math.round(kb / 1024) : undefined;
}

/** This process's peak resident memory (VmHWM) in MB, or undefined off Linux. */
export function selfPeakRssMb(): number | undefined {
  try {
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return hwm ? Math.round(Number(hwm[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}
