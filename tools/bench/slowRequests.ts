/** One request a proxy forwarded that took at least the recorder's threshold. */
export interface SlowRequest {
  /** What it was: `<account>.<service>.<resource>.<operation>` for storage, `rpc.<kind>` for the Durable client's calls. */
  readonly what: string;
  /** When it was sent (epoch ms) and how long its answer took (ms). */
  readonly atMs: number;
  readonly ms: number;
}

/** The last `limit` requests a proxy forwarded that took `thresholdMs` or more: which dependency stalled. */
export class SlowRequests {
  private readonly kept: SlowRequest[] = [];

  constructor(
    private readonly thresholdMs = 200,
    private readonly limit = 500,
  ) {}

  /** Records a request that started at `atMs` (epoch) and was answered now, when it was slow. */
  record(what: string, atMs: number, nowMs = Date.now()): void {
    const ms = nowMs - atMs;
    if (ms < this.thresholdMs) return;
    this.kept.push({ what, atMs, ms });
    if (this.kept.length > this.limit) this.kept.shift();
  }

  /** The slow requests sent at or after `sinceMs` (epoch). */
  since(sinceMs: number): SlowRequest[] {
    return this.kept.filter((r) => r.atMs >= sinceMs);
  }
}
