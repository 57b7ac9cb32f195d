import { optionReader, parseCommandLine, usageErrorLine, UsageError, type OptionSpecs } from '../../tools/cli/commandLine';
import { parseBenchOptions } from '../../tools/bench/options';
import { parseDemoArgs } from '../../tools/demo/args';
import { parseProviderArgs } from '../../tools/fakeProvider/main';

const SPECS: OptionSpecs = {
  messages: { type: 'string' },
  rate: { type: 'string' },
  mode: { type: 'string' },
  name: { type: 'string' },
  json: { type: 'boolean' },
};

/** The message of the UsageError `run` throws. */
function usageMessage(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error('no UsageError');
}

function read(argv: string[]) {
  const values = parseCommandLine(argv, SPECS);
  if (values === 'help') throw new Error('unexpected help');
  return optionReader(values);
}

describe('tools command line: parsing', () => {
  test('--name value and --name=value are the same; flags are booleans', () => {
    const a = read(['--messages', '12', '--json']);
    const b = read(['--messages=12', '--json']);
    for (const r of [a, b]) {
      expect(r.integer('messages', { min: 1, max: 100, default: 5 })).toBe(12);
      expect(r.flag('json')).toBe(true);
      r.done();
    }
  });

  test('absent options take their default', () => {
    const r = read([]);
    expect(r.integer('messages', { min: 1, max: 100, default: 5 })).toBe(5);
    expect(r.choice('mode', ['on', 'off'] as const, 'on')).toBe('on');
    expect(r.text('name', { default: 'x' })).toBe('x');
    expect(r.flag('json')).toBe(false);
    expect(() => r.done()).not.toThrow();
  });

  test('--help and -h answer "help", even beside a bad option', () => {
    expect(parseCommandLine(['--help'], SPECS)).toBe('help');
    expect(parseCommandLine(['-h'], SPECS)).toBe('help');
    expect(parseCommandLine(['--colour', 'red', '--help'], SPECS)).toBe('help');
  });

  test.each([
    [['--colour', 'red'], 'unknown option --colour'],
    [['-x'], 'unknown option -x'],
    [['--messages'], '--messages needs a value'],
    [['--messages', '--json'], '--messages needs a value'],
    [['--json=1'], '--json takes no value'],
    [['stray'], 'unexpected argument stray'],
  ])('%j: %s', (argv, message) => {
    expect(usageMessage(() => parseCommandLine(argv, SPECS))).toBe(message);
  });

  test("a negative number after a string option is its value, judged by the option's rule", () => {
    const r = read(['--messages', '-1']);
    expect(r.integer('messages', { min: 1, max: 100_000, default: 5 })).toBe(5);
    expect(usageMessage(() => r.done())).toBe('--messages must be an integer from 1 to 100000, got "-1"');
  });
});

describe('tools command line: values, in one wording', () => {
  test.each([
    ['x', '--messages must be an integer from 1 to 100000, got "x"'],
    ['', '--messages must be an integer from 1 to 100000, got ""'],
    ['1.5', '--messages must be an integer from 1 to 100000, got "1.5"'],
    ['0', '--messages must be an integer from 1 to 100000, got "0"'],
    ['100001', '--messages must be an integer from 1 to 100000, got "100001"'],
    ['1e9', '--messages must be an integer from 1 to 100000, got "1e9"'],
    ['Infinity', '--messages must be an integer from 1 to 100000, got "Infinity"'],
  ])('integer %j', (text, message) => {
    const r = read([`--messages=${text}`]);
    r.integer('messages', { min: 1, max: 100_000, default: 5 });
    expect(usageMessage(() => r.done())).toBe(message);
  });

  test('numbers, choices and text', () => {
    const r = read(['--rate', 'NaN', '--mode', 'maybe', '--name', ' ']);
    expect(r.number('rate', { min: 0, max: 1, default: 0.5 })).toBe(0.5);
    expect(r.choice('mode', ['on', 'off'] as const, 'on')).toBe('on');
    r.text('name', { default: 'x', maxLength: 10 });
    expect(usageMessage(() => r.done())).toBe(
      '--rate must be a number from 0 to 1, got "NaN"; --mode must be one of on, off, got "maybe"; --name must be 1 to 10 characters, got " "',
    );
    const ok = read(['--rate', '0.25', '--name', 'EUR']);
    expect(ok.number('rate', { min: 0, max: 1, default: 0.5 })).toBe(0.25);
    expect(ok.text('name', { default: 'x', pattern: /^[A-Z]{3}$/, what: 'three capitals' })).toBe('EUR');
    ok.done();
    const bad = read(['--name', 'eur']);
    bad.text('name', { default: 'x', pattern: /^[A-Z]{3}$/, what: 'three capitals' });
    expect(usageMessage(() => bad.done())).toBe('--name must be three capitals, got "eur"');
  });

  test("a problem of a tool's own joins the others; the error line names the usage", () => {
    const r = read([]);
    r.problem('--a x --b must be at most 10 messages, got 12');
    const error = (() => {
      try {
        r.done();
      } catch (e) {
        return e as UsageError;
      }
      throw new Error('no UsageError');
    })();
    expect(usageErrorLine(error, 'npm run demo')).toBe('--a x --b must be at most 10 messages, got 12 (usage: npm run demo -- --help)');
  });
});

describe('every tool parses alike', () => {
  test('demo, bench, provider and producer word a bad integer the same way', () => {
    expect(usageMessage(() => parseDemoArgs(['--messages', 'x'], {}))).toBe('--messages must be an integer from 1 to 100000, got "x"');
    expect(usageMessage(() => parseBenchOptions(['--messages', 'x']))).toBe('--messages must be an integer from 1 to 100000, got "x"');
    expect(usageMessage(() => parseProviderArgs(['--port', 'x']))).toBe('--port must be an integer from 0 to 65535, got "x"');
    for (const run of [() => parseDemoArgs(['--colour'], {}), () => parseBenchOptions(['--colour']), () => parseProviderArgs(['--colour'])]) {
      expect(usageMessage(run)).toBe('unknown option --colour');
    }
  });

  test('--help is "help" everywhere', () => {
    expect(parseDemoArgs(['--help'], {}).help).toBe(true);
    expect(parseBenchOptions(['-h'])).toBe('help');
    expect(parseProviderArgs(['--help'])).toBe('help');
  });

  test('the provider takes its key memory in hours', () => {
    expect(parseProviderArgs(['--key-memory-hours', '24'])).toEqual({ port: 4010, seed: 1, keyMemoryMs: 86_400_000, lookup: 'by-key', list: 'by-window' });
    expect(parseProviderArgs([])).toEqual({ port: 4010, seed: 1, lookup: 'by-key', list: 'by-window' });
    expect(parseProviderArgs(['--lookup', 'none'])).toEqual({ port: 4010, seed: 1, lookup: 'none', list: 'by-window' });
    expect(parseProviderArgs(['--list', 'none'])).toEqual({ port: 4010, seed: 1, lookup: 'by-key', list: 'none' });
    expect(usageMessage(() => parseProviderArgs(['--key-memory-hours', '-2']))).toMatch(/^--key-memory-hours must be/);
  });

  test('the bench caps its totals', () => {
    expect(parseBenchOptions(['--messages', '100000', '--concurrency=256', '--rounds', '100', '--json'])).toEqual({
      messages: 100_000,
      concurrency: 256,
      rounds: 100,
      json: true,
    });
    expect(usageMessage(() => parseBenchOptions(['--concurrency', '257', '--rounds', '0']))).toBe(
      '--concurrency must be an integer from 1 to 256, got "257"; --rounds must be an integer from 1 to 100, got "0"',
    );
  });

  test('the demo reads every option and refuses a provider off loopback', () => {
    expect(parseDemoArgs(['--messages', '300', '--seed=3', '--orders-share', '0', '--broker-dedup', '--json'], {})).toEqual({
      chaos: { messages: 300, seed: 3, ordersShare: 0, brokerDuplicateDetection: true },
      json: true,
      help: false,
    });
    expect(usageMessage(() => parseDemoArgs(['--messages', '100001'], {}))).toBe('--messages must be an integer from 1 to 100000, got "100001"');
    expect(usageMessage(() => parseDemoArgs([], { PAYMENT_PROVIDER_URL: 'https://provider.example.com' }))).toMatch(/^PAYMENT_PROVIDER_URL/);
  });
});
