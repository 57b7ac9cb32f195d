import { AzuriteProcess, freePort } from './AzuriteProcess';

/** An Azurite Blob service in memory on a loopback port: the local Event Hubs' checkpoint store (the host keeps its checkpoints in blobs). */
export class AzuriteBlob extends AzuriteProcess {
  static async start(port?: number): Promise<AzuriteBlob> {
    const instance = new AzuriteBlob({ blob: port ?? (await freePort()) });
    await instance.restart();
    return instance;
  }
}
