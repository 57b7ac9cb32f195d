import { keyFromMessageId } from 'azure-functions-idempotency';
import { ledgerCheckTick, ledgerGraceMs, type LedgerCheckpoint, type LedgerDiscrepancy } from '../../src/payments/ledgerCheck';
import { PaymentProviderClient } from '../../src/payments/PaymentProviderClient';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import { retryBudgetOf } from '../../src/app/payments';
import type { SimApp } from './app';
import type { Violation } from './invariantNames';
import { SIM_PROVIDER_URL } from './provider';
import type { Mutation } from './faults';
import { listCharges } from './providerList';

/**
 * The ledger check under every guard, in the simulated world: the app's own tick (`ledgerCheckTick`) over the provider's
 * list (through the app's `PaymentProviderClient.listCharges`) and the simulated store, run with the expiry timer, its
 * checkpoint carried between ticks as the app saves it. Its delay is the profile's list lag (what the deployer declares).
 * A provider with no list (Adyen-like) has no check: the app says so at start, and nothing is judged.
 *
 * The invariant it serves (`ledger-check-reports`) does not share the app's assumptions: at the end, every charge the
 * provider made that no record's completion held (succeeded with that charge id, judged from the completions as they
 * landed) must be among the check's discrepancies, once the check's window has passed it.
 */
export class LedgerWatch {
  private checkpoint: LedgerCheckpoint;
  readonly discrepancies: LedgerDiscrepancy[] = [];
  private running = false;
  /** When each tick started: what the check could see (charges listed, and younger than the retention, at one of them). */
  private readonly tickTimesMs: number[] = [];
  readonly delayMs: number;

  constructor(
    private readonly app: SimApp,
    /** `ledger-silent`: the check's mistake the invariant must catch (a record completed otherwise taken for matched). */
    private readonly mutation?: Mutation,
  ) {
    this.delayMs = app.provider.profileWorld.listLagMs;
    this.checkpoint = { fromMs: app.world.startMs, pending: [] };
  }

  /** The provider lists its charges (every profile but Adyen-like). */
  get offered(): boolean {
    return this.app.provider.profileWorld.profile.listLagMs !== undefined && this.app.provider.profileWorld.profile.name !== 'legacy';
  }

  /** Where the check's window stands: charges created before it have been checked. */
  get checkedUntilMs(): number {
    return this.checkpoint.fromMs;
  }

  /** One tick, as the timer runs it (an error ends it with its checkpoint: the next goes on). */
  async tick(maxPages = 50): Promise<void> {
    if (!this.offered || this.running) return;
    this.running = true;
    this.tickTimesMs.push(this.app.world.nowMs());
    try {
      // The list as the provider serves it (its lag included), without its latency or fault draws (they would move the
      // schedule's other draws): the check observes; its own faults are tested beside it (test/unit, test/integration).
      const provider = this.app.provider;
      const fetchList = async (url: string | URL): Promise<Response> => {
        const answer = listCharges(provider.ledger, new URL(url).searchParams, this.app.world.nowMs(), provider.profileWorld.listLagMs);
        return new Response(JSON.stringify(answer.body), { status: answer.status });
      };
      const client = new PaymentProviderClient({ baseUrl: SIM_PROVIDER_URL, timeoutMs: 10_000, fetch: fetchList as typeof fetch });
      const report = await ledgerCheckTick(this.checkpoint, {
        list: (window, cursor) => client.listCharges(window, cursor),
        record: (paymentId) => this.app.store.inner.get(keyFromMessageId(PAYMENTS_CONSUMER, paymentId)),
        owns: () => true,
        report: async (discrepancy) => {
          if (this.mutation === 'ledger-silent' && discrepancy.reason === 'record-not-succeeded') return false;
          if (this.discrepancies.some((d) => d.chargeId === discrepancy.chargeId)) return false;
          this.discrepancies.push(discrepancy);
          this.app.world.log(`ledger check: discrepancy ${discrepancy.chargeId} of ${discrepancy.paymentId} (${discrepancy.reason})`);
          return true;
        },
        nowMs: () => this.app.world.nowMs(),
        delayMs: this.delayMs,
        retentionMs: this.app.retentionMs,
        graceMs: ledgerGraceMs(retryBudgetOf(this.app.settings)),
        maxPages,
        budgetMs: 120_000,
      });
      this.checkpoint = report.checkpoint;
    } finally {
      this.running = false;
    }
  }

  /**
   * At the end: every charge created before the check's window start (so it was walked) that no completion held is
   * reported, or still undecided in the checkpoint (reported past the grace). A charge whose payment's completions held
   * it (succeeded with its id) is the records' own.
   */
  unreported(): Violation[] {
    if (!this.offered) return [];
    const held = new Set(
      this.app.steps.completions.flatMap((c) => {
        const result = c.result;
        return result.status === 'succeeded' ? [`${c.key}|${result.chargeId}`] : [];
      }),
    );
    // Undecided charges (a record still in progress: a run suspended and never resumed) ride in the checkpoint and are
    // reported once past the grace (7 days and the budget): carried, not lost.
    const reported = new Set([...this.discrepancies.map((d) => d.chargeId), ...this.checkpoint.pending.map((p) => p.id)]);
    // A tick walks [now - retention, now - delay): a charge is seen by a tick after its list lag and before the retention
    // clips the window past it. The simulator's retention (1 day) is shorter than the grace and may be shorter than the
    // list lag (checkout-like: up to 27 h), which the app refuses at start (grace + delay < retention); a charge no tick
    // could see was clipped away (the tick says so: `clippedFromMs`), never walked.
    const seen = (atMs: number) => this.tickTimesMs.some((t) => t > atMs + this.delayMs && t <= atMs + this.app.retentionMs);
    return this.app.provider.ledger
      .filter((c) => c.atMs < this.checkedUntilMs && seen(c.atMs) && !held.has(`${c.key}|${c.chargeId}`) && !reported.has(c.chargeId))
      .map((c) => ({
        invariant: 'ledger-check-reports' as const,
        detail: `${c.paymentId}: charge ${c.chargeId} (key ${c.key}) is held by no record's completion and the ledger check did not report it`,
      }));
  }
}
