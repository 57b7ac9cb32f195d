/**
 * Port 17071 made free for the host about to start (Linux: listeners are read from /proc). The extension listens there
 * only when the port is free; when it is not, it takes another port and says so in its client binding, while clients
 * that call 17071 (the bench's counting proxy, the operator tools' default) reach whatever holds it. Seen in CI: a
 * bench run charged nothing in 20 minutes. Whoever holds the machine-wide lock owns the port, so a Durable host
 * still listening there is an orphan (a tool stopped before its host had finished stopping): it is killed, and named.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';

/** The process that listens on a port, as /proc shows it. */
export interface PortListener {
  readonly pid: number;
  readonly commandLine: string;
  /** Its DURABLE_TASK_HUB_NAME (which test or tool started it), when /proc lets us read its environment. */
  readonly hubName?: string;
}

/** True when nothing listens on 127.0.0.1:`port` (a listen there succeeds). */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Socket inodes listening on `port` (any address), from /proc/net/tcp and tcp6. */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; st 0A is LISTEN; the inode is the tenth field.
      if (fields.length > 9 && fields[1].endsWith(`:${hexPort}`) && fields[3] === '0A') inodes.add(fields[9]);
    }
  }
  return inodes;
}

/** The processes listening on `port` (those whose descriptors this process may read). */
export function listenersOn(port: number): PortListener[] {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return [];
  const found: PortListener[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    const holds = fds.some((fd) => {
      try {
        const target = readlinkSync(`/proc/${entry}/fd/${fd}`);
        return target.startsWith('socket:[') && inodes.has(target.slice(8, -1));
      } catch {
        return false;
      }
    });
    if (holds) found.push(describe(Number(entry)));
  }
  return found;
}

function describe(pid: number): PortListener {
  const read = (file: string) => {
    try {
      return readFileSync(`/proc/${pid}/${file}`, 'utf8');
    } catch {
      return '';
    }
  };
  const commandLine = read('cmdline').split('\0').filter(Boolean).join(' ');
  const hub = read('environ')
    .split('\0')
    .find((v) => v.startsWith('DURABLE_TASK_HUB_NAME='));
  return { pid, commandLine, ...(hub ? { hubName: hub.slice('DURABLE_TASK_HUB_NAME='.length) } : {}) };
}

/** A Durable host of ours (tools/durable-host's DLL), whichever clone built it. */
export function isDurableHost(listener: PortListener): boolean {
  return /(^|[\s/])DurableHost\.dll(\s|$)/.test(listener.commandLine);
}

/**
 * Makes `port` free for a host about to start, the caller holding the machine-wide lock: waits up to `settleMs` for a
 * host still stopping, then kills (SIGKILL, its process group: host and Node worker) every Durable host that listens
 * there and waits for the port. @throws Error naming the process when something else holds the port.
 */
export async function claimRpcPort(port: number, options: { settleMs?: number; log?: (line: string) => void } = {}): Promise<PortListener[]> {
  const settle = Date.now() + (options.settleMs ?? 10_000);
  while (!(await portFree(port))) {
    if (Date.now() < settle) {
      await new Promise((r) => setTimeout(r, 250));
      continue;
    }
    const listeners = listenersOn(port);
    const others = listeners.filter((l) => !isDurableHost(l));
    if (others.length > 0 || listeners.length === 0) {
      const named = others.map((l) => `pid ${l.pid} (${l.commandLine || 'unreadable'})`).join(', ') || 'a process this user cannot see';
      throw new Error(`port ${port} is taken by ${named}: the Durable extension would listen elsewhere while clients of ${port} reach that process`);
    }
    for (const orphan of listeners) {
      options.log?.(
        `port ${port}: killing an orphaned Durable host, pid ${orphan.pid}, task hub ${orphan.hubName ?? '(unknown)'}, no live owner of the port lock: ${orphan.commandLine}`,
      );
      for (const target of [-orphan.pid, orphan.pid]) {
        try {
          process.kill(target, 'SIGKILL');
        } catch {
          /* not a group leader, or gone */
        }
      }
    }
    const gone = Date.now() + 30_000;
    while (!(await portFree(port)) && Date.now() < gone) await new Promise((r) => setTimeout(r, 100));
    if (!(await portFree(port))) throw new Error(`port ${port} still taken 30 s after killing ${listeners.map((l) => l.pid).join(', ')}`);
    return listeners;
  }
  return [];
}
