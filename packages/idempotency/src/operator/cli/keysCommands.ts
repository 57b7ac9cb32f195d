import { evictRecord } from '../evictRecord';
import { inspectRecord } from '../inspectRecord';
import { listRecords } from '../listRecords';
import { OperatorUsageError } from '../operatorErrors';
import type { OperatorAudit } from '../operatorOptions';
import type { RecordsBackend } from '../RecordsBackend';
import { releaseRecord } from '../releaseRecord';
import { RECORD_STATES, type RecordState } from '../recordState';
import { formatDuration } from '../recordView';
import { duration, integer, positionals, text, type CommandLine } from './cliArgs';
import type { OperatorCliIo } from './cliContext';
import { whoOf } from './cliContext';
import { listRecordsLines } from './listOutput';
import { recordLines } from './printRecords';
import { ExitCode } from './usage';

/** What a command needs: the connected records, where to print, the environment. */
export interface CommandContext {
  readonly backend: RecordsBackend;
  readonly target: string;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly io: OperatorCliIo;
}

/** `keys show <consumer> <key>`. */
export async function showCommand(line: CommandLine, context: CommandContext): Promise<number> {
  const [consumer, key] = positionals(line, ['consumer', 'key']);
  const { view, activeWork } = await inspectRecord(context.backend, { consumer, key }, context.io);
  if (line.values.json) context.out(JSON.stringify({ ...view, activeWork: activeWork ?? null }, null, 2));
  else {
    for (const text of recordLines(view, nowOf(context))) context.out(text);
    context.out(`work going  ${activeWork ?? 'none known'}`);
  }
  return ExitCode.Ok;
}

/** `keys list <consumer> [filters]`. */
export async function listCommand(line: CommandLine, context: CommandContext): Promise<number> {
  const [consumer] = positionals(line, ['consumer']);
  const { values } = line;
  const states = text(values, 'status')
    ?.split(',')
    .map((state) => state.trim()) as RecordState[] | undefined;
  for (const state of states ?? [])
    if (!RECORD_STATES.includes(state)) throw new OperatorUsageError(`--status must be among ${RECORD_STATES.join(', ')}, got ${JSON.stringify(state)}`);
  const olderThan = text(values, 'older-than');
  const started = Date.now();
  let lastProgress = started;
  const listing = await listRecords(context.backend, {
    ...context.io,
    consumer,
    states,
    olderThanMs: olderThan === undefined ? undefined : duration('older-than', olderThan),
    limit: integer('limit', text(values, 'limit'), { min: 1, max: 100_000, default: 100 }),
    maxPages: integer('max-pages', text(values, 'max-pages'), { min: 1, max: 100_000, default: 50 }),
    pageSize: integer('page-size', text(values, 'page-size'), { min: 1, max: 1000, default: 100 }),
    cursor: text(values, 'continue'),
    onProgress: ({ pages, scanned, matched }) => {
      // A long listing says how far it is, on stderr (stdout stays the listing): every 10 requests or 2 s.
      if (pages % 10 === 0 || Date.now() - lastProgress >= 2000) {
        lastProgress = Date.now();
        context.err(`keys list: ${pages} requests, ${scanned} records read, ${matched} matched (${formatDuration(Date.now() - started)})`);
      }
    },
  });
  for (const text of listRecordsLines(listing, line.values.json === true)) context.out(text);
  if (listing.cursor)
    context.err(`keys list: stopped at ${listing.stoppedBy === 'limit' ? '--limit' : '--max-pages'}; more may follow: add --continue ${listing.cursor}`);
  return ExitCode.Ok;
}

/** `keys release <consumer> <key> --reason ...`. */
export async function releaseCommand(line: CommandLine, context: CommandContext): Promise<number> {
  const [consumer, key] = positionals(line, ['consumer', 'key']);
  const outcome = await releaseRecord(context.backend, { consumer, key }, { ...changeOptionsOf(line, context) });
  if (line.values.json) context.out(JSON.stringify(outcome, null, 2));
  else if (outcome.kind === 'nothing') context.out(`nothing to do: ${consumer} key ${JSON.stringify(key)}: ${outcome.why}`);
  else {
    const what = `${consumer} key ${JSON.stringify(key)} (${outcome.before.status} ${outcome.before.state}, attempt ${outcome.before.attempt}, digest ${outcome.before.digest})`;
    context.out(outcome.kind === 'wouldRelease' ? `dry run: would release ${what}; nothing written` : `released ${what}: the next delivery takes it over`);
    if (outcome.note) context.err(`note: ${outcome.note}`);
  }
  return ExitCode.Ok;
}

/** `keys evict <consumer> <key> --reason ... [--force]`. */
export async function evictCommand(line: CommandLine, context: CommandContext): Promise<number> {
  const [consumer, key] = positionals(line, ['consumer', 'key']);
  const outcome = await evictRecord(context.backend, { consumer, key }, { ...changeOptionsOf(line, context), force: line.values.force === true });
  if (line.values.json) context.out(JSON.stringify(outcome, null, 2));
  else {
    const what = `${consumer} key ${JSON.stringify(key)} (${outcome.before.status} ${outcome.before.state}, attempt ${outcome.before.attempt}, digest ${outcome.before.digest})`;
    context.out(
      outcome.kind === 'wouldEvict'
        ? `dry run: would evict ${what}${outcome.forced ? ' (forced)' : ''}; nothing deleted`
        : `evicted ${what} and ${outcome.localRows} local row(s)${outcome.forced ? ' (forced)' : ''}: the next delivery claims it afresh`,
    );
  }
  return ExitCode.Ok;
}

function changeOptionsOf(line: CommandLine, context: CommandContext) {
  const reason = text(line.values, 'reason');
  if (reason === undefined || reason.trim() === '') throw new OperatorUsageError(`${line.command} needs --reason "..." (why: recorded, never a payload)`);
  return {
    ...context.io,
    by: whoOf(line.values, context.env),
    reason: reason.trim(),
    expectedEtag: text(line.values, 'etag'),
    dryRun: line.values['dry-run'] === true,
    onAudit: (entry: OperatorAudit) => context.err(`audit ${JSON.stringify(entry)}`),
  };
}

function nowOf(context: CommandContext): number {
  return (context.io.clock ?? { nowMs: () => Date.now() }).nowMs();
}
