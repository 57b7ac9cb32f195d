import { parseBenchOptions } from '../../tools/bench/options';
import { UsageError } from '../../tools/cli/commandLine';
import { shortFile, summarizeProfile } from '../../tools/bench/profileSummary';

describe("the bench's overhead section options", () => {
  test('--overhead-only, --core-before and --compare are read only when given', () => {
    expect(parseBenchOptions(['--overhead-only', '--core-before', '/tmp/main', '--compare', 'a=/tmp/a,b=/tmp/b'])).toEqual({
      messages: 500,
      concurrency: 16,
      rounds: 7,
      json: false,
      overheadOnly: true,
      coreBefore: '/tmp/main',
      compare: [
        { label: 'a', dir: '/tmp/a' },
        { label: 'b', dir: '/tmp/b' },
      ],
    });
    expect(Object.keys(parseBenchOptions([]) as object).sort()).toEqual(['concurrency', 'json', 'messages', 'rounds']);
  });

  test('a --compare entry without a label, or with a reserved one, is a usage error naming it', () => {
    expect(() => parseBenchOptions(['--compare', '/tmp/a'])).toThrow(UsageError);
    expect(() => parseBenchOptions(['--compare', 'this=/tmp/a'])).toThrow(
      '--compare takes label=DIR entries (labels other than "this" and "before"), got "this=/tmp/a"',
    );
  });
});

describe('the profile summary', () => {
  test('files are named short: the core by its path under dist, packages by name, V8 pseudo-frames by their name', () => {
    expect(shortFile('file:///w/packages/idempotency/dist/protocol/deadline.js', 'withDeadline')).toBe('core: protocol/deadline.js');
    expect(shortFile('file:///w/node_modules/@azure/core-tracing/dist/commonjs/tracingClient.js', 'startSpan')).toBe('@azure/core-tracing/tracingClient.js');
    expect(shortFile('', '(garbage collector)')).toBe('(garbage collector)');
    expect(shortFile('', 'writev')).toBe('(native) writev');
  });

  test('self time goes to the sampled function, inclusive time once to every file on its stack', () => {
    const profile = {
      nodes: [
        { id: 1, callFrame: { url: '', functionName: '(root)' }, children: [2, 4] },
        { id: 2, callFrame: { url: 'file:///w/packages/idempotency/dist/a.js', functionName: 'a' }, children: [3] },
        { id: 3, callFrame: { url: 'file:///w/packages/idempotency/dist/a.js', functionName: 'a2' } },
        { id: 4, callFrame: { url: '', functionName: '(idle)' } },
      ],
      samples: [3, 3, 2, 4],
      timeDeltas: [1000, 1000, 2000, 5000],
    };
    const summary = summarizeProfile(profile);
    expect(summary.busyMs).toBe(4);
    expect(summary.files.find((f) => f.file === 'core: a.js')).toMatchObject({ selfMs: 4, inclusiveMs: 4, selfShare: 1 });
  });
});
