import { UsageError } from '../../tools/cli/commandLine';
import { parseDemoArgs } from '../../tools/demo/args';
import { defaultDeclaredKeyMemoryHours, defaultProviderLookup } from '../../tools/demo/chaosOptions';
import { buildPaymentsWorkload } from '../../tools/demo/paymentsWorkload';
import { JumpClock } from '../../tools/local/JumpClock';

describe('demo command line: the time phase', () => {
  test('--time-phase on|off and --time-phase-at R', () => {
    expect(parseDemoArgs(['--time-phase', 'off'], {}).chaos).toEqual({ timePhase: false });
    expect(parseDemoArgs(['--time-phase=on', '--time-phase-at', '0.3'], {}).chaos).toEqual({ timePhase: true, timePhaseAt: 0.3 });
    expect(() => parseDemoArgs(['--time-phase', 'maybe'], {})).toThrow(UsageError);
    expect(() => parseDemoArgs(['--time-phase'], {})).toThrow(UsageError);
    expect(() => parseDemoArgs(['--time-phase-at', '2'], {})).toThrow(UsageError);
  });

  test('--sweep-hold on|off and --provider-key-memory H (hours, or forever)', () => {
    expect(parseDemoArgs(['--sweep-hold', 'off'], {}).chaos).toEqual({ sweepHold: false });
    expect(parseDemoArgs(['--provider-key-memory', '24'], {}).chaos).toEqual({ providerKeyMemoryMs: 86_400_000 });
    expect(parseDemoArgs(['--provider-key-memory', '0'], {}).chaos).toEqual({ providerKeyMemoryMs: 0 });
    expect(parseDemoArgs(['--provider-key-memory', 'forever'], {}).chaos).toEqual({});
    expect(() => parseDemoArgs(['--provider-key-memory', '-1'], {})).toThrow(UsageError);
    expect(() => parseDemoArgs(['--sweep-hold', 'maybe'], {})).toThrow(UsageError);
  });
});

describe('demo command line: the provider look-up', () => {
  test('--provider-lookup none|by-key, --declared-key-memory H, or the settings names in the environment; defaults by provider', () => {
    for (const lookup of ['none', 'by-key'] as const) expect(parseDemoArgs(['--provider-lookup', lookup], {}).chaos).toEqual({ providerLookup: lookup });
    expect(() => parseDemoArgs(['--provider-lookup', 'uncertain'], {})).toThrow(UsageError);
    expect(parseDemoArgs(['--declared-key-memory', '1.5'], {}).chaos).toEqual({ declaredKeyMemoryHours: 1.5 });
    expect(parseDemoArgs([], { PAYMENT_PROVIDER_LOOKUP: 'none', PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '24' }).chaos).toEqual({
      providerLookup: 'none',
      declaredKeyMemoryHours: 24,
    });
    expect(parseDemoArgs(['--provider-lookup', 'by-key'], { PAYMENT_PROVIDER_LOOKUP: 'none' }).chaos).toEqual({ providerLookup: 'by-key' });
    expect(() => parseDemoArgs(['--declared-key-memory', '0', '--provider-lookup', 'none'], {})).toThrow(/needs --provider-lookup by-key/);
    expect(() => parseDemoArgs(['--provider-key-memory', '0', '--provider-lookup', 'none'], {})).toThrow(/needs --provider-lookup by-key/);
    expect(parseDemoArgs(['--declared-key-memory', '0'], {}).chaos).toEqual({ declaredKeyMemoryHours: 0 }); // the default look-up: by-key
    expect(defaultProviderLookup(false)).toBe('by-key');
    expect(defaultProviderLookup(true)).toBe('none');
    expect(defaultDeclaredKeyMemoryHours(false, undefined)).toBe(24);
    expect(defaultDeclaredKeyMemoryHours(false, 3_600_000)).toBe(1);
    expect(defaultDeclaredKeyMemoryHours(true, 3_600_000)).toBe(24);
  });
});

describe('demo command line: the rewards part', () => {
  test('--rewards-events N (0 = off), bounded', () => {
    expect(parseDemoArgs(['--rewards-events', '0'], {}).chaos).toEqual({ rewardsEvents: 0 });
    expect(parseDemoArgs(['--rewards-events=500'], {}).chaos).toEqual({ rewardsEvents: 500 });
    expect(() => parseDemoArgs(['--rewards-events', '-1'], {})).toThrow(/--rewards-events must be an integer from 0 to 100000/);
  });
});

describe('payments workload with the time phase', () => {
  const options = { messages: 1_000, duplicateRate: 0.3, seed: 9 };

  test('holds early payments for an operator (sent once) and turns late payments into reused keys after expiry of early ones, with another amount', () => {
    const w = buildPaymentsWorkload({ ...options, timePhase: true });
    const held = w.messages.filter((m) => m.heldForOperator);
    expect(held.length).toBe(10);
    expect(new Set(held.map((m) => m.heldForOperator))).toEqual(new Set(['afterCharge', 'beforeCharge']));
    for (const m of held) {
      expect(m).toMatchObject({ kind: 'charge', extraCopies: 0 });
      expect(m.index).toBeLessThan(300);
    }
    const reuses = w.messages.filter((m) => m.kind === 'reusedAfterExpiry');
    expect(reuses.length).toBe(20);
    const reusedKeyTargets = new Set(w.messages.filter((m) => m.kind === 'reusedKey').map((m) => m.reusesIndex));
    for (const m of reuses) {
      const original = w.messages[m.reusesIndex!];
      expect(original).toMatchObject({ kind: 'charge', messageId: m.messageId });
      expect(original.heldForOperator).toBeUndefined();
      expect(reusedKeyTargets.has(original.index)).toBe(false);
      expect((m.body as { amount: number }).amount).not.toBe((original.body as { amount: number }).amount);
      expect(m.index).toBeGreaterThanOrEqual(500);
      expect(original.index).toBeLessThan(400);
    }
    // The phase sends the reuses itself: they are not in the initial sends.
    expect(w.sends.some((s) => w.messages[s.index].kind === 'reusedAfterExpiry')).toBe(false);
  });

  test('without the time phase the workload is as before (no held payments, no reused keys after expiry)', () => {
    const w = buildPaymentsWorkload(options);
    expect(w.messages.some((m) => m.heldForOperator || m.kind === 'reusedAfterExpiry')).toBe(false);
    expect(buildPaymentsWorkload(options)).toEqual(w);
  });
});

describe('JumpClock', () => {
  test('is real time plus the jumps; it never goes back', () => {
    const clock = new JumpClock();
    const before = Date.now();
    clock.jump(30 * 86_400_000);
    expect(clock.nowMs()).toBeGreaterThanOrEqual(before + 30 * 86_400_000);
    expect(clock.offsetMs).toBe(30 * 86_400_000);
    expect(() => clock.jump(-1)).toThrow(RangeError);
  });
});
