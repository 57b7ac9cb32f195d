import { AzuriteProcess, freePort } from './AzuriteProcess';
export { freePort } from './AzuriteProcess';

/** An Azurite Table service in memory on a loopback port: the idempotency store of the tests, demo and bench. */
export class AzuriteTable extends AzuriteProcess {
  /** Starts Azurite's Table service on a free loopback port and waits until it answers. */
  static async start(port?: number): Promise<AzuriteTable> {
    const instance = new AzuriteTable({ table: port ?? (await freePort()) });
    await instance.restart();
    return instance;
  }

  get port(): number {
    return this.ports.table!;
  }
}
