import { RecordStatus } from 'azure-functions-idempotency';
import { ExitCode, listRecords, releaseRecord, type RecordsBackend } from 'azure-functions-idempotency/operator';
import { claimOf, digestOf, seedStates, testExtension, type ConsoleRig } from './keysConsole';

/**
 * The operator's console on one real store (Azurite or the Cosmos stand-in), through its CLI run in this process
 * (`runOperatorCli`) and its library functions. Shared by `keysConsole.table.test.ts` and `keysConsole.cosmos.test.ts`:
 * both stores answer the same commands the same way. Nothing here mocks a store: the records are written by the
 * consumer's own store (a settable clock says what "now" is), read and written by the console over the network.
 */
export function describeKeysConsole(makeRig: () => Promise<ConsoleRig>): void {
  let rig: ConsoleRig;
  let n = 0;
  const consumer = () => `pay${++n}`;
  const everything: string[] = []; // every line the console printed in this file: no payload in any (last test)
  const run = async (argv: readonly string[], io: Parameters<ConsoleRig['run']>[1] = {}) => {
    const result = await rig.run(argv, io);
    everything.push(result.text);
    return result;
  };

  beforeAll(async () => {
    rig = await makeRig();
  });

  describe('keys show', () => {
    test('show: the record as the protocol sees it (status, attempt, lease and when it lapses, digest, result size, retention, held), the extension beside it', async () => {
      const c = consumer();
      await seedStates(rig, c, 'k');
      const live = await run(['keys', 'show', c, 'k-live'], { extensions: [testExtension(c)] });
      expect(live.code).toBe(ExitCode.Ok);
      expect(live.text).toMatch(/status\s+IN_PROGRESS \(in-progress\)/);
      expect(live.text).toMatch(/lease\s+live until \S+ \(in 1m\)/);
      expect(live.text).toMatch(/attempt\s+1/);
      expect(live.text).toContain(digestOf('k-live'));
      expect(live.text).toMatch(/payment row\s+pending/);
      const lapsed = await run(['keys', 'show', c, 'k-lapsed', '--dry-run']); // a read: --dry-run changes nothing, as ever
      expect(lapsed.text).toMatch(/status\s+IN_PROGRESS \(lapsed\)/);
      expect(lapsed.text).toMatch(/lease\s+lapsed at \S+ \(4s ago\)/);
      const held = await run(['keys', 'show', c, 'k-held', '--json'], { extensions: [testExtension(c)] });
      const view = JSON.parse(held.out.join('\n'));
      expect(view).toMatchObject({ status: 'COMPLETED', state: 'held', held: true, attempt: 1, localRows: ['payment'], activeWork: null });
      expect(view.resultBytes).toBeGreaterThan(20);
      expect(view.retentionExpiresAtMs).toBe(view.updatedAtMs + 30 * 86_400_000);
      expect(view).not.toHaveProperty('result');
    });

    test('show: an unknown consumer, an unknown key, a malformed key, an unknown command exit non-zero with a clear message', async () => {
      const c = consumer();
      await seedStates(rig, c, 'k');
      const unknownConsumer = await run(['keys', 'show', `${c}x`, 'k-live']);
      expect([unknownConsumer.code, unknownConsumer.err.join()]).toEqual([ExitCode.NotFound, expect.stringContaining(`unknown consumer "${c}x"`)]);
      const unknownKey = await run(['keys', 'show', c, 'nope']);
      expect([unknownKey.code, unknownKey.err.join()]).toEqual([ExitCode.NotFound, expect.stringContaining('no record of key "nope"')]);
      for (const [argv, message] of [
        [['keys', 'show', `${c} `, 'k'], 'leading or trailing white space'],
        [['keys', 'show', c, 'x'.repeat(8193)], 'more than 8192'],
        [['keys', 'show', c, '\uD800'], 'lone UTF-16 surrogate'],
        [['keys', 'show', c, ' '], 'key is empty'],
        [['keys', 'frob', c], 'unknown command "keys frob"'],
        [['keys', 'show', c], 'missing <key>'],
        [['keys', 'show', c, 'k', '--force'], 'does not take --force'],
        [['keys', 'show', c, 'k', '--colour'], 'unknown option --colour'],
        [['keys', 'list', c, '--older-than', 'soon'], '--older-than must be a duration'],
        [['keys', 'list', c, '--status', 'done'], '--status must be among'],
        [['keys', 'release', c, 'k-live'], 'needs --reason'],
      ] as const) {
        const result = await run(argv);
        expect([argv.slice(0, 3), result.code, result.err.join('\n')]).toEqual([argv.slice(0, 3), ExitCode.Usage, expect.stringContaining(message)]);
      }
      const help = await run(['--help']);
      expect([help.code, help.out.join('\n')]).toEqual([ExitCode.Ok, expect.stringContaining('keys release <consumer> <key> --reason')]);
    });
  });

  describe('keys list', () => {
    test('list: by state (in-progress includes lapsed; failed and held as the extension reads them) and age; other consumers never', async () => {
      const c = consumer();
      await seedStates(rig, c, 'old');
      rig.clock.advance(3 * 3_600_000);
      await seedStates(rig, c, 'new');
      await seedStates(rig, `${c}other`, 'x');
      const keysOf = async (...args: string[]) => {
        const result = await run(['keys', 'list', c, '--json', ...args], { extensions: [testExtension(c)] });
        expect(result.code).toBe(ExitCode.Ok);
        return (JSON.parse(result.out.join('\n')).records as Array<{ key: string; consumer: string }>).map((r) => r.key).sort();
      };
      expect(await keysOf()).toHaveLength(12);
      expect(await keysOf('--status', 'in-progress')).toEqual(['new-lapsed', 'new-live', 'old-lapsed', 'old-live']);
      expect(await keysOf('--status', 'lapsed')).toEqual(['new-lapsed', 'old-lapsed', 'old-live']);
      expect(await keysOf('--status', 'completed')).toEqual(['new-completed', 'old-completed']);
      expect(await keysOf('--status', 'failed')).toEqual(['new-failed', 'new-released', 'old-failed', 'old-released']);
      expect(await keysOf('--status', 'held,released')).toEqual(['new-held', 'old-held']);
      expect(await keysOf('--status', 'in-progress', '--older-than', '2h')).toEqual(['old-lapsed', 'old-live']);
      expect(await keysOf('--older-than', '2h')).toHaveLength(6);
      const text = await run(['keys', 'list', c, '--status', 'lapsed']);
      expect(text.out[0]).toMatch(/^state\s+attempt\s+last write\s+digest\s+key$/);
      expect(text.out.at(-1)).toMatch(/^3 record\(s\); \d+ request\(s\), \d+ read$/);
    });

    test('list: paged and bounded (--page-size, --limit, --max-pages), --continue resumes exactly, a progress line on stderr', async () => {
      const c = consumer();
      for (let i = 0; i < 25; i++) await rig.store.commit({ consumer: c, key: `k${String(i).padStart(2, '0')}` }, digestOf(`k${i}`), { n: i });
      const seen: string[] = [];
      let cursor: string | undefined;
      let rounds = 0;
      do {
        const result = await run(['keys', 'list', c, '--json', '--page-size', '3', '--limit', '7', ...(cursor ? ['--continue', cursor] : [])]);
        expect(result.code).toBe(ExitCode.Ok);
        const page = JSON.parse(result.out.join('\n'));
        expect(page.records.length).toBeLessThanOrEqual(7);
        seen.push(...page.records.map((r: { key: string }) => r.key));
        cursor = page.cursor ?? undefined;
        if (cursor) expect(result.err.join('\n')).toContain(`--continue ${cursor}`);
        rounds++;
      } while (cursor && rounds < 20);
      expect(seen.sort()).toEqual(Array.from({ length: 25 }, (_, i) => `k${String(i).padStart(2, '0')}`));
      const bounded = await run(['keys', 'list', c, '--json', '--page-size', '1', '--max-pages', '12']);
      const listing = JSON.parse(bounded.out.join('\n'));
      expect([listing.pages, listing.stoppedBy]).toEqual([12, 'maxPages']);
      expect(bounded.err.join('\n')).toMatch(/keys list: 10 requests, \d+ records read, \d+ matched/);
    });

    test('list: a consumer with no record at all is unknown (exit 3); a filter matching nothing is not', async () => {
      const c = consumer();
      await seedStates(rig, c, 'k');
      const none = await run(['keys', 'list', `${c}-typo`]);
      expect([none.code, none.err.join()]).toEqual([ExitCode.NotFound, expect.stringContaining(`unknown consumer "${c}-typo"`)]);
      const nothing = await run(['keys', 'list', c, '--status', 'expired']);
      expect([nothing.code, nothing.out.at(-1)]).toEqual([ExitCode.Ok, expect.stringMatching(/^0 record\(s\)/)]);
    });
  });

  describe('keys release', () => {
    test('release: refused while the lease is live or a run is going; a lapsed claim, a completed and a failed record are released, the next claim takes them over', async () => {
      const c = consumer();
      const records = await seedStates(rig, c, 'k');
      const live = await run(['keys', 'release', c, 'k-live', '--reason', 'stuck?', '--by', 'alice']);
      expect([live.code, live.err.join()]).toEqual([ExitCode.Refused, expect.stringContaining('its lease is live until')]);
      expect((await rig.store.get({ consumer: c, key: 'k-live' }))!.etag).toBe(records.live.etag);
      const busy = await run(['keys', 'release', c, 'k-failed', '--reason', 'retry'], { extensions: [testExtension(c, new Set(['k-failed']))] });
      expect([busy.code, busy.err.join()]).toEqual([ExitCode.Refused, expect.stringContaining('work on it is still going (its run is Running)')]);
      for (const name of ['lapsed', 'completed', 'failed']) {
        const result = await run(['keys', 'release', c, `k-${name}`, '--reason', `ticket 42 ${name}`, '--by', 'alice'], { extensions: [testExtension(c)] });
        expect([name, result.code, result.out.join()]).toEqual([name, ExitCode.Ok, expect.stringContaining(`released ${c} key "k-${name}"`)]);
        const audit = JSON.parse(result.err.find((line) => line.startsWith('audit '))!.slice('audit '.length));
        expect(audit).toMatchObject({ action: 'release', by: 'alice', reason: `ticket 42 ${name}`, key: `k-${name}`, digest: digestOf(`k-${name}`) });
        const after = (await rig.store.get({ consumer: c, key: `k-${name}` }))!;
        expect(after).toMatchObject({ status: RecordStatus.Released, leaseExpiresAtMs: 0, attempt: 1 });
        expect(after.lastError).toMatch(new RegExp(`^released by operator alice at \\S+: ticket 42 ${name}$`));
        const next = await rig.store.claim({ consumer: c, key: `k-${name}` }, digestOf(`k-${name}`));
        expect([next.kind, claimOf(next).attempt]).toEqual(['reclaimed', 2]);
      }
      const again = await run(['keys', 'release', c, 'k-released', '--reason', 'x']);
      expect([again.code, again.out.join()]).toEqual([ExitCode.Ok, expect.stringContaining('nothing to do')]);
    });

    test('release --dry-run says what it would do and writes nothing; --etag of an older read is refused', async () => {
      const c = consumer();
      const records = await seedStates(rig, c, 'k');
      const dry = await run(['keys', 'release', c, 'k-completed', '--reason', 'test', '--dry-run']);
      expect([dry.code, dry.out.join()]).toEqual([ExitCode.Ok, expect.stringContaining(`dry run: would release ${c} key "k-completed" (COMPLETED completed`)]);
      expect((await rig.store.get({ consumer: c, key: 'k-completed' }))!.etag).toBe(records.completed.etag);
      // The operator looked (show: its ETag), then the record's own claimant renewed its lapsed lease.
      const lapsedClaim = { ...claimOf(await rig.storeWith({ leaseMs: 1000 }).claim({ consumer: c, key: 'k-etag' }, digestOf('k-etag'))) };
      rig.clock.advance(5000);
      const seenEtag = JSON.parse((await run(['keys', 'show', c, 'k-etag', '--json'])).out.join('\n')).etag;
      await rig.storeWith({ leaseMs: 1000 }).renewLease(lapsedClaim, 1000);
      rig.clock.advance(5000); // lapsed again: only the ETag says it changed
      const stale = await run(['keys', 'release', c, 'k-etag', '--reason', 'stuck', '--etag', seenEtag]);
      expect([stale.code, stale.err.join()]).toEqual([ExitCode.Refused, expect.stringContaining('changed since you read it')]);
      expect((await rig.store.get({ consumer: c, key: 'k-etag' }))!.status).toBe(RecordStatus.InProgress);
    });

    test('release: a change between its read and its write (the claimant renews) makes it refuse, never overwrite (If-Match)', async () => {
      const c = consumer();
      const short = rig.storeWith({ leaseMs: 1000 });
      const claim = claimOf(await short.claim({ consumer: c, key: 'race' }, digestOf('race')));
      rig.clock.advance(5000);
      // The backend, unchanged, except that the claimant's renewal lands just before the release's write.
      const racing: RecordsBackend = {
        ...rig.backend,
        releaseIf: async (...args) => {
          await short.renewLease(claim, 60_000);
          return rig.backend.releaseIf(...args);
        },
      };
      await expect(releaseRecord(racing, { consumer: c, key: 'race' }, { by: 'alice', reason: 'stuck', clock: rig.clock })).rejects.toMatchObject({
        reason: 'changed',
        message: expect.stringContaining('the record changed since it was read'),
      });
      rig.clock.advance(61_000); // lapsed again: the CLI's release reaches its write, and the renewal lands first again
      const cli = await run(['keys', 'release', c, 'race', '--reason', 'x'], {
        connect: async () => ({ backend: racing, target: 'racing', close: () => undefined }),
      });
      expect([cli.code, cli.err.join()]).toEqual([ExitCode.Refused, expect.stringContaining('the record changed since it was read')]);
      const after = (await rig.store.get({ consumer: c, key: 'race' }))!;
      expect([after.status, after.leaseExpiresAtMs > rig.clock.nowMs()]).toEqual([RecordStatus.InProgress, true]);
    });
  });

  describe('keys evict', () => {
    test('evict: refused while in progress without --force; a completed record goes with its rows (audit: who, why, key, digest); --dry-run deletes nothing', async () => {
      const c = consumer();
      await seedStates(rig, c, 'k');
      const refused = await run(['keys', 'evict', c, 'k-live', '--reason', 'gdpr']);
      expect([refused.code, refused.err.join()]).toEqual([ExitCode.Refused, expect.stringContaining('pass --force')]);
      const lapsed = await run(['keys', 'evict', c, 'k-lapsed', '--reason', 'gdpr']);
      expect(lapsed.code).toBe(ExitCode.Refused);
      const dry = await run(['keys', 'evict', c, 'k-completed', '--reason', 'gdpr', '--dry-run']);
      expect([dry.code, dry.out.join()]).toEqual([ExitCode.Ok, expect.stringContaining('dry run: would evict')]);
      expect(await rig.store.get({ consumer: c, key: 'k-completed' })).toBeDefined();
      const evicted = await run(['keys', 'evict', c, 'k-completed', '--reason', 'erasure request 7', '--by', 'bob']);
      expect([evicted.code, evicted.out.join()]).toEqual([ExitCode.Ok, expect.stringContaining('and 1 local row(s)')]);
      const audit = JSON.parse(evicted.err.find((line) => line.startsWith('audit '))!.slice(6));
      expect(audit).toMatchObject({
        action: 'evict',
        by: 'bob',
        reason: 'erasure request 7',
        key: 'k-completed',
        digest: digestOf('k-completed'),
        status: 'COMPLETED',
      });
      expect(await rig.store.get({ consumer: c, key: 'k-completed' })).toBeUndefined();
      expect(await rig.backend.readLocalRow({ consumer: c, key: 'k-completed' }, 'payment')).toBeUndefined();
      const fresh = await rig.store.claim({ consumer: c, key: 'k-completed' }, digestOf('k-completed'));
      expect([fresh.kind, claimOf(fresh).attempt]).toEqual(['claimed', 1]);
      const forced = await run(['keys', 'evict', c, 'k-live', '--reason', 'poisoned', '--force']);
      expect([forced.code, forced.out.join()]).toEqual([ExitCode.Ok, expect.stringContaining('(forced)')]);
      expect(await rig.backend.readLocalRow({ consumer: c, key: 'k-live' }, 'payment')).toBeUndefined();
    });

    test('evict: a record changed since it was read is refused (ETag), and so is a record gone meanwhile', async () => {
      const c = consumer();
      await seedStates(rig, c, 'k');
      const seen = JSON.parse((await run(['keys', 'show', c, 'k-released', '--json'])).out.join('\n')).etag;
      await rig.store.claim({ consumer: c, key: 'k-released' }, digestOf('k-released'));
      const stale = await run(['keys', 'evict', c, 'k-released', '--reason', 'x', '--etag', seen, '--force']);
      expect([stale.code, stale.err.join()]).toEqual([ExitCode.Refused, expect.stringContaining('changed since you read it')]);
      const record = (await rig.store.get({ consumer: c, key: 'k-completed' }))!;
      expect(await rig.backend.deleteIf({ ...record, etag: seen })).toEqual({ kind: 'changed' });
      expect(await rig.backend.deleteIf(record)).toMatchObject({ kind: 'done' });
      expect(await rig.backend.deleteIf(record)).toEqual({ kind: 'gone' });
    });
  });

  describe('the library functions', () => {
    test('listRecords follows a continuation across empty pages (Azure answers them; this store never does): nothing is lost', async () => {
      const c = consumer();
      for (let i = 0; i < 6; i++) await rig.store.commit({ consumer: c, key: `e${i}` }, digestOf(`e${i}`), null);
      // After the first, every other request answers an empty page that continues where it started, as Azure may.
      let requests = 0;
      const empties: RecordsBackend = {
        ...rig.backend,
        queryPage: async (query, cursor, pageSize) =>
          cursor !== undefined && ++requests % 2 === 1 ? { records: [], cursor } : rig.backend.queryPage(query, cursor, pageSize),
      };
      const listing = await listRecords(empties, { consumer: c, pageSize: 2, maxPages: 200, clock: rig.clock });
      expect(listing.views.map((v) => v.key).sort()).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5']);
      expect(listing.stoppedBy).toBeUndefined();
      expect(requests).toBeGreaterThan(2);
    });

    test('no command printed a payload or a stored result: only keys and digests', () => {
      const printed = everything.join('\n');
      expect(printed.length).toBeGreaterThan(1000);
      expect(printed).not.toContain('SECRET');
    });
  });
}
