/** A V8 CPU profile as `--cpu-prof` and the inspector's `Profiler.stop` write it (the fields read here). */
export interface CpuProfile {
  readonly nodes: readonly { id: number; callFrame: { url: string; functionName: string }; children?: readonly number[] }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** One file's share of a profile: self time (samples in its functions) and inclusive (samples with it on the stack). */
export interface FileTime {
  readonly file: string;
  readonly selfMs: number;
  readonly inclusiveMs: number;
  /** Shares of the busy time (every sample but `(idle)`), 0..1. */
  readonly selfShare: number;
  readonly inclusiveShare: number;
}

export interface ProfileSummary {
  readonly busyMs: number;
  readonly files: readonly FileTime[];
}

/**
 * Sums a CPU profile by file: each sample's time goes to its function's file (self) and once to every file on its
 * stack (inclusive). Files are named short: the core package's files by their path under `dist/`, a package's by
 * its name and path (`@azure/core-rest-pipeline/policies/tracingPolicy.js`), V8's pseudo-frames by their name.
 */
export function summarizeProfile(profile: CpuProfile): ProfileSummary {
  const parent = new Map<number, number>();
  const fileOf = new Map<number, string>();
  for (const node of profile.nodes) {
    fileOf.set(node.id, shortFile(node.callFrame.url, node.callFrame.functionName));
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busyUs = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const file = fileOf.get(id) ?? '(unknown)';
    if (file === '(idle)') return;
    busyUs += us;
    self.set(file, (self.get(file) ?? 0) + us);
    const onStack = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) onStack.add(fileOf.get(at) ?? '(unknown)');
    for (const f of onStack) inclusive.set(f, (inclusive.get(f) ?? 0) + us);
  });
  const files = [...inclusive.keys()].map((file) => ({
    file,
    selfMs: (self.get(file) ?? 0) / 1000,
    inclusiveMs: (inclusive.get(file) ?? 0) / 1000,
    selfShare: busyUs ? (self.get(file) ?? 0) / busyUs : 0,
    inclusiveShare: busyUs ? (inclusive.get(file) ?? 0) / busyUs : 0,
  }));
  return { busyMs: busyUs / 1000, files };
}

/** The summary as text: the top `top` files by self time, then the core package's files by inclusive time. */
export function formatProfileSummary(summary: ProfileSummary, top = 15): string {
  const pct = (share: number) => `${(share * 100).toFixed(1)}%`.padStart(6);
  const line = (f: FileTime) => `  ${pct(f.selfShare)} self ${pct(f.inclusiveShare)} incl  ${f.file}`;
  const bySelf = [...summary.files].sort((a, b) => b.selfMs - a.selfMs).slice(0, top);
  const core = summary.files.filter((f) => f.file.startsWith('core:') && f.inclusiveShare < 0.999).sort((a, b) => b.inclusiveMs - a.inclusiveMs);
  return [
    `busy ${summary.busyMs.toFixed(0)} ms (every sample but idle); shares of it:`,
    `top ${top} files by self time:`,
    ...bySelf.map(line),
    'the core package by inclusive time:',
    ...core.slice(0, top).map(line),
  ].join('\n');
}

/** `core: protocol/deadline.js`, `@azure/core-tracing/tracingClient.js`, `node:internal/timers`, `(garbage collector)`. */
export function shortFile(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : `(native) ${functionName || 'anonymous'}`;
  const path = url.replace(/^file:\/\//, '');
  const core = /\/packages\/idempotency\/dist\/(.*)$/.exec(path);
  if (core) return `core: ${core[1]}`;
  const module = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(path);
  if (module) return `${module[1]}/${module[2].replace(/^dist\/(commonjs|cjs|esm|src)\//, '').replace(/^dist\//, '')}`;
  return path.replace(/^.*\/dist\/tools\//, 'tools/');
}
