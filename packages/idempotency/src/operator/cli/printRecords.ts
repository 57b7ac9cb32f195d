import type { ReplayedMessage, ReplayReport } from '../replay/replayDeadLetters';
import { formatTime, type RecordView } from '../recordView';

/** The text of `keys show`: one fact a line, no payload (the result by size, local rows by name). */
export function recordLines(view: RecordView, nowMs: number): string[] {
  const lease = view.leaseExpiresAtMs === 0 ? 'none' : `${view.leaseLive ? 'live until' : 'lapsed at'} ${formatTime(view.leaseExpiresAtMs, nowMs)}`;
  const facts: Array<[string, string]> = [
    ['consumer', view.consumer],
    ['key', JSON.stringify(view.key)],
    ['record id', view.recordId],
    ['status', `${view.status} (${view.state})`],
    ['attempt', String(view.attempt)],
    ['lease', lease],
    ['digest', view.digest],
    ['result', view.resultBytes === undefined ? 'none' : `${view.resultBytes} bytes stored`],
    ['retention', `until ${formatTime(view.retentionExpiresAtMs, nowMs)}`],
    ['created', formatTime(view.createdAtMs, nowMs)],
    ['last write', formatTime(view.updatedAtMs, nowMs)],
    ['last error', view.lastError ?? 'none'],
    ['local rows', view.localRows.length === 0 ? 'none' : view.localRows.join(', ')],
    ['held', view.held ? 'yes' : 'no'],
    ['etag', view.etag],
    ...Object.entries(view.extra),
  ];
  const width = Math.max(...facts.map(([label]) => label.length));
  return facts.map(([label, value]) => `${label.padEnd(width)}  ${value}`);
}

/** The header and one line per record of `keys list`. */
export function listLines(views: readonly RecordView[]): string[] {
  const rows = views.map((view) => [
    view.state,
    String(view.attempt),
    new Date(view.updatedAtMs).toISOString(),
    view.digest.slice(0, 12),
    JSON.stringify(view.key),
  ]);
  const header = ['state', 'attempt', 'last write', 'digest', 'key'];
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** One line of `dlq replay` per message: what was done (or would be), never its content. */
export function replayLine(message: ReplayedMessage): string {
  return `${message.dryRun ? 'would be ' : ''}${message.action}: MessageId ${JSON.stringify(message.messageId ?? null)} (sequence ${message.sequenceNumber}): ${message.detail}`;
}

/** The summary of `dlq replay`: a count per action. */
export function replaySummary(report: ReplayReport): string {
  const counts = Object.entries(report.counts)
    .filter(([, n]) => n > 0)
    .map(([action, n]) => `${action} ${n}`);
  return `${report.dryRun ? 'dry run, nothing changed: ' : ''}${report.queueName}: ${report.messages.length} messages${counts.length ? `: ${counts.join(', ')}` : ''}`;
}
