import { keyFromMessageId, payloadDigest, RecordStatus, type IdempotencyStore } from 'azure-functions-idempotency';
import {
  ExitCode,
  listRecords,
  OperatorRefusedError,
  REPLAY_CONSUMER,
  ReplayAction,
  replayDeadLetters,
  type ReplayOptions,
} from 'azure-functions-idempotency/operator';
import { useAzurite } from '../support/azurite';
import { CosmosEmulator } from '../support/cosmos';
import { claimOf, cosmosRig, digestOf, payloadOf, tableRig, testExtension, type ConsoleRig } from '../support/keysConsole';
import { dyingAt, MemoryQueue } from '../support/memoryBroker';

/**
 * `dlq replay` (issue 53): dead-lettered messages resubmitted dedup-aware, on a real store (Azurite, the Cosmos
 * stand-in) and the in-memory broker of `memoryBroker.ts` (peek-lock, complete, duplicate detection by MessageId in a
 * window). What only the real Service Bus gives and these tests take on trust: its duplicate detection history
 * survives restarts and failovers, locks lapse by its clock, and a dead-lettered message keeps its enqueue time.
 * The consumer is played by `drain`: each copy that reaches the queue is claimed on the store (the key's record
 * deduplicates, as the app's consumers do) and, when it claims, counted as an effective processing.
 */
const azuriteOf = useAzurite();
let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  await cosmos?.stop();
});

const HOUR = 3_600_000;
const MINUTE = 60_000;
let n = 0;

interface Scene {
  readonly rig: ConsoleRig;
  readonly consumer: string;
  readonly queue: MemoryQueue;
  /** Effective processings per key (claims that won), by `drain`. */
  readonly processed: Map<string, number>;
  readonly options: ReplayOptions;
}

/**
 * One key in each state, each dead-lettered an hour ago (H a minute ago): A completed, B failed, C held, D in progress,
 * E never claimed, F released by a failing attempt, G without a usable MessageId (a number), H recent.
 */
async function scene(rig: ConsoleRig, duplicateWindowMs: number): Promise<Scene> {
  const consumer = `pay-r${++n}`;
  const key = (id: string) => keyFromMessageId(consumer, id);
  const complete = async (id: string, result: unknown) => rig.store.complete(claimOf(await rig.store.claim(key(id), digestOf(id))), result);
  await complete('A', { chargeId: 'ch-A', note: 'SECRET-RESULT' });
  await complete('B', { status: 'failed', reason: 'provider down' });
  await complete('C', { status: 'failed', code: 'held-for-operator', reason: 'no look-up' });
  await rig.storeWith({ leaseMs: 24 * HOUR }).claim(key('D'), digestOf('D'));
  await rig.store.release(claimOf(await rig.store.claim(key('F'), digestOf('F'))), 'handler threw');
  const queue = new MemoryQueue('payments', rig.clock, { lockDurationMs: 30_000, duplicateWindowMs });
  for (const id of ['A', 'B', 'C', 'D', 'E', 'F']) queue.deadLetter({ messageId: id, body: payloadOf(id) }, HOUR);
  queue.deadLetter({ messageId: 42, body: payloadOf('G') }, HOUR);
  queue.deadLetter({ messageId: 'H', body: payloadOf('H') }, MINUTE);
  const options: ReplayOptions = {
    consumer,
    by: 'ops',
    reason: 'incident 7',
    extensions: [testExtension(consumer)],
    clock: rig.clock,
    receiveWaitMs: 0,
    duplicateWindowMs: 10 * MINUTE,
  };
  return { rig, consumer, queue, processed: new Map(), options };
}

/** The consumer: every copy in the queue is claimed on the store; a claim that wins is a processing, completed with `result`. */
async function drain(s: Scene, result: (id: string) => unknown = () => ({ chargeId: 'ch-replayed' }), store: IdempotencyStore = s.rig.store): Promise<void> {
  while (s.queue.active.length > 0) {
    const message = s.queue.active.shift()!;
    const outcome = await store.claim(keyFromMessageId(s.consumer, message.messageId), payloadDigest(message.body));
    if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') continue;
    s.processed.set(String(message.messageId), (s.processed.get(String(message.messageId)) ?? 0) + 1);
    await store.complete(outcome.claim, result(String(message.messageId)));
  }
}

const left = (s: Scene) => s.queue.deadLetters.map((m) => String(m.messageId)).sort();

describe.each([
  ['Table Storage (Azurite)', () => tableRig(azuriteOf())],
  ['Cosmos DB (stand-in)', () => cosmosRig(cosmos)],
])('dlq replay on %s', (_name, makeRig) => {
  let rig: ConsoleRig;
  beforeAll(async () => {
    rig = await makeRig();
  });

  test('each message by its key: completed -> removed without a resend; failed/held -> released, then resent; in progress, no key, too recent -> left', async () => {
    const s = await scene(rig, 10 * MINUTE);
    const report = await replayDeadLetters(s.queue.deadLetterQueue(), rig.backend, s.options);
    expect(Object.fromEntries(report.messages.map((m) => [m.messageId ?? 'none', m.action]))).toEqual({
      A: ReplayAction.CompletedWithoutResend,
      B: ReplayAction.ReleasedAndResent,
      C: ReplayAction.ReleasedAndResent,
      D: ReplayAction.LeftInProgress,
      E: ReplayAction.Resent,
      F: ReplayAction.Resent,
      none: ReplayAction.LeftNoKey,
      H: ReplayAction.LeftTooRecent,
    });
    expect(report.counts).toMatchObject({
      'completed-without-resend': 1,
      'released-and-resent': 2,
      resent: 2,
      'left-in-progress': 1,
      'left-no-key': 1,
      'left-too-recent': 1,
    });
    expect(left(s)).toEqual(['42', 'D', 'H']);
    expect(s.queue.active.map((m) => m.messageId)).toEqual(['B', 'C', 'E', 'F']);
    const b = (await rig.store.get(keyFromMessageId(s.consumer, 'B')))!;
    expect([b.status, b.lastError]).toEqual([RecordStatus.Released, expect.stringMatching(/^released by operator ops at \S+: incident 7$/)]);
    await drain(s);
    expect(Object.fromEntries(s.processed)).toEqual({ B: 1, C: 1, E: 1, F: 1 });
    // Run again: nothing is resent; what was left is left.
    const again = await replayDeadLetters(s.queue.deadLetterQueue(), rig.backend, s.options);
    expect(again.messages.map((m) => m.action).sort()).toEqual([ReplayAction.LeftInProgress, ReplayAction.LeftNoKey, ReplayAction.LeftTooRecent]);
    expect(s.queue.active).toEqual([]);
  });

  test('--dry-run reports what each message would get and changes nothing: no lock, no release, no send, no marker', async () => {
    const s = await scene(rig, 10 * MINUTE);
    const before = (await rig.store.get(keyFromMessageId(s.consumer, 'B')))!;
    const report = await replayDeadLetters(s.queue.deadLetterQueue(), rig.backend, { ...s.options, dryRun: true });
    expect(report.messages.every((m) => m.dryRun)).toBe(true);
    expect(report.counts).toMatchObject({ 'completed-without-resend': 1, 'released-and-resent': 2, resent: 2, 'left-in-progress': 1 });
    expect(left(s)).toEqual(['42', 'A', 'B', 'C', 'D', 'E', 'F', 'H']);
    expect(s.queue.deadLetters.every((m) => m.lock === undefined)).toBe(true);
    expect(s.queue.active).toEqual([]);
    expect((await rig.store.get(keyFromMessageId(s.consumer, 'B')))!.etag).toBe(before.etag);
    const markers = await listRecords(rig.backend, { consumer: REPLAY_CONSUMER, limit: 100_000, maxPages: 10_000, clock: rig.clock }).catch(
      (error: unknown) => {
        if (error instanceof OperatorRefusedError && error.reason === 'unknownConsumer') return { views: [] };
        throw error;
      },
    );
    expect(markers.views.filter((view) => view.key.includes(JSON.stringify(s.consumer)))).toEqual([]);
  });

  test.each([
    ['before its resend (released, nothing sent)', 'resend', 'before', 10 * MINUTE],
    ['after its resend (sent, not marked: duplicate detection drops the second copy)', 'resend', 'after', 10 * MINUTE],
    ['after its marker, before the message is removed', 'complete', 'before', 10 * MINUTE],
  ] as const)('killed %s, then run again: no message resent twice, none lost', async (_when, step, when, windowMs) => {
    const s = await scene(rig, windowMs);
    // Messages in order A..H: the 1st resend is B's (A needs none); the 2nd complete is B's (A's is the 1st).
    const dying = dyingAt(s.queue.deadLetterQueue(), step, step === 'resend' ? 1 : 2, when);
    await expect(replayDeadLetters(dying, rig.backend, s.options)).rejects.toThrow('process killed');
    rig.clock.advance(2 * MINUTE); // the lock and the marker's lease lapse
    const rerun = await replayDeadLetters(s.queue.deadLetterQueue(), rig.backend, s.options);
    expect(left(s)).toEqual(['42', 'D', 'H']); // none lost: each either done or still dead-lettered
    for (const id of ['B', 'C', 'E', 'F']) expect([id, s.queue.sendsOf(id)]).toEqual([id, 1]);
    expect(s.queue.sendsOf('A')).toBe(0);
    if (step === 'resend' && when === 'after') expect(s.queue.dropped.map((m) => m.messageId)).toEqual(['B']);
    else expect(s.queue.dropped).toEqual([]);
    expect(rerun.messages.find((m) => m.messageId === 'B')?.action).toBe(step === 'complete' ? ReplayAction.AlreadyResent : ReplayAction.Resent);
    await drain(s);
    expect(Object.fromEntries(s.processed)).toEqual({ B: 1, C: 1, E: 1, F: 1 });
  });

  test('killed after a resend on a queue without duplicate detection: a second copy may go, the record makes it a duplicate; a copy processed meanwhile is never released again', async () => {
    // The app's queues have no duplicate detection: between "sent" and "marked", a rerun cannot know the copy went.
    const s = await scene(rig, 0);
    const options = { ...s.options, duplicateWindowMs: 0 };
    await expect(replayDeadLetters(dyingAt(s.queue.deadLetterQueue(), 'resend', 1, 'after'), rig.backend, options)).rejects.toThrow('process killed');
    rig.clock.advance(2 * MINUTE);
    await replayDeadLetters(s.queue.deadLetterQueue(), rig.backend, options);
    expect(s.queue.sendsOf('B')).toBe(2); // the rerun resent B: its record was still released at the attempt it saw
    await drain(s, (id) => (id === 'B' ? { status: 'failed', reason: 'provider still down' } : { ok: true }));
    expect(s.processed.get('B')).toBe(1); // the second copy found the key taken over and completed: a duplicate

    // Again, but the first copy is processed (and fails again) before the rerun: the rerun sees the record moved past
    // the attempt its marker saw, removes the message and never releases the key a second time.
    const t = await scene(rig, 0);
    const tOptions = { ...t.options, duplicateWindowMs: 0 };
    await expect(replayDeadLetters(dyingAt(t.queue.deadLetterQueue(), 'resend', 1, 'after'), rig.backend, tOptions)).rejects.toThrow('process killed');
    await drain(t, () => ({ status: 'failed', reason: 'provider still down' }));
    rig.clock.advance(2 * MINUTE);
    const rerun = await replayDeadLetters(t.queue.deadLetterQueue(), rig.backend, tOptions);
    expect(rerun.messages.find((m) => m.messageId === 'B')).toMatchObject({
      action: ReplayAction.CompletedWithoutResend,
      detail: expect.stringContaining('processed since'),
    });
    expect(t.queue.sendsOf('B')).toBe(1);
    expect(t.processed.get('B')).toBe(1);
    expect((await rig.store.get(keyFromMessageId(t.consumer, 'B')))!).toMatchObject({ status: RecordStatus.Completed, attempt: 2 });
  });

  test('the CLI: one line per message and the counts; --dry-run says "would be"; no content printed; bad input exits 2', async () => {
    const s = await scene(rig, 10 * MINUTE);
    const open = async () => s.queue.deadLetterQueue();
    const dry = await rig.run(['dlq', 'replay', 'payments', '--consumer', s.consumer, '--dry-run'], {
      openDeadLetterQueue: open,
      extensions: [testExtension(s.consumer)],
    });
    expect(dry.code).toBe(ExitCode.Ok);
    expect(dry.out.filter((line) => line.startsWith('would be '))).toHaveLength(8);
    expect(dry.out.at(-1)).toMatch(/^dry run, nothing changed: payments: 8 messages: completed-without-resend 1, resent 2, released-and-resent 2/);
    const live = await rig.run(['dlq', 'replay', 'payments', '--consumer', s.consumer, '--by', 'ops'], {
      openDeadLetterQueue: open,
      extensions: [testExtension(s.consumer)],
    });
    expect(live.code).toBe(ExitCode.Ok);
    expect(live.out).toContainEqual(
      expect.stringMatching(/^released-and-resent: MessageId "B" \(sequence \d+\): its key was COMPLETED attempt 1 \(failed\): released, resent, removed$/),
    );
    expect(live.err.filter((line) => line.startsWith('audit ')).map((line) => JSON.parse(line.slice(6)).action)).toEqual(
      expect.arrayContaining(['replay-release', 'replay-resend']),
    );
    expect([...dry.out, ...dry.err, ...live.out, ...live.err].join('\n')).not.toContain('SECRET');
    const missing = await rig.run(['dlq', 'replay', 'payments'], { openDeadLetterQueue: open });
    expect([missing.code, missing.err.join()]).toEqual([ExitCode.Usage, expect.stringContaining('needs --consumer')]);
    const noBus = await rig.run(['dlq', 'replay', 'payments', '--consumer', s.consumer]);
    expect([noBus.code, noBus.err.join()]).toEqual([ExitCode.Usage, expect.stringContaining('--servicebus-namespace')]);
  });
});
