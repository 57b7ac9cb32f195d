import type { Claim } from 'azure-functions-idempotency';
import type { ChargeOrchestrationInput } from './chargeInputs';
import { chargeEntityKey, chargeInstanceId } from './ChargeWorkflow';
import type { ProviderCapability } from './providerLookup';
import type { PaymentRequested } from './schema';

/** A claim's charge run: its instance id (one per record lifetime and payload) and the input both designs start it with. */
export interface ChargeRun {
  readonly instanceId: string;
  readonly input: ChargeOrchestrationInput;
}

/** What the starter adds to the claim and the payment. */
export interface ChargeRunContext {
  readonly correlationId: string | undefined;
  /** The claim began a new generation at attempt > 1 (an expired record claimed afresh): `keyUsedBefore`. */
  readonly keyUsedBefore: boolean;
  readonly provider: ProviderCapability;
  /** The starter's clock, epoch ms: the key's age at start is measured from the generation's creation. */
  readonly nowMs: number;
}

/** The run of `claim`: the key's origin is its generation's creation (no call of this generation precedes its claim). */
export function chargeRunOf(claim: Claim, payment: PaymentRequested, context: ChargeRunContext): ChargeRun {
  const entityKey = chargeEntityKey(claim.recordId, claim.createdAtMs, claim.digest);
  return {
    instanceId: chargeInstanceId(entityKey),
    input: {
      idempotencyKey: claim.key.key,
      entityKey,
      digest: claim.digest,
      attempt: claim.attempt,
      payment,
      correlationId: context.correlationId,
      provider: context.provider,
      keyAgeAtStartMs: Math.max(0, context.nowMs - claim.createdAtMs),
      keyOriginMs: claim.createdAtMs,
      ...(context.keyUsedBefore ? { keyUsedBefore: true } : {}),
    },
  };
}
