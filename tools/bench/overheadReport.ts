import { FRESH_OVERHEAD_TARGET_US, OVERHEAD_PATHS, type OverheadFigures } from './overheadSection';

/** The section as text lines, one per build and path, and the target line. */
export function formatOverheadSection(figures: OverheadFigures): string {
  const lines = [
    `wrapper overhead (client CPU per message, us; ${figures.messages} messages x ${figures.rounds} rounds, concurrency ${figures.concurrency}; medians, range of the per-round overhead):`,
  ];
  for (const core of figures.cores) {
    for (const path of OVERHEAD_PATHS) {
      const p = core.paths[path];
      lines.push(
        `  [${core.label}] ${path.padEnd(9)} wrapped ${p.wrappedUs} raw ${p.rawUs} overhead ${p.overheadUs} (${p.overheadRangeUs[0]}..${p.overheadRangeUs[1]})` +
          `${p.ratio === undefined ? '' : ` ratio ${p.ratio}`}, ${p.roundTrips} requests`,
      );
    }
  }
  const mine = figures.cores.find((core) => core.label === 'this');
  if (mine) {
    const met = mine.paths.fresh.overheadUs <= FRESH_OVERHEAD_TARGET_US;
    lines.push(
      `  fresh overhead over the two raw writes: ${mine.paths.fresh.overheadUs} us (target <= ${FRESH_OVERHEAD_TARGET_US}: ${met ? 'met' : 'NOT met'})`,
    );
  }
  if (figures.freshCpuRatioVsBefore !== undefined) lines.push(`  fresh client CPU, this / before: ${figures.freshCpuRatioVsBefore} (median of paired rounds)`);
  return lines.join('\n');
}
