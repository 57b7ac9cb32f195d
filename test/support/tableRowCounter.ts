import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What went through the proxy: requests by shape, the rows the service returned, the filters it was asked. */
export interface TableTraffic {
  /** Point reads: `GET /<table>(PartitionKey='..',RowKey='..')`. */
  pointReads: number;
  /** Queries: `GET /<table>()?$filter=...` (each page is one). */
  queries: number;
  /** Queries whose filter has an `or`: the Table service runs them as a scan of the partition (design guide). */
  orQueries: number;
  /** The PartitionKey each `or` query names (one entry per query): Azure reads that whole partition to answer it. */
  orPartitions: string[];
  /** `$batch` transactions. */
  transactions: number;
  /** Other requests (single writes, table operations). */
  other: number;
  /** Entities in the answers to reads: 1 per point read found, the page's rows per query. */
  rowsReturned: number;
}

const empty = (): TableTraffic => ({ pointReads: 0, queries: 0, orQueries: 0, orPartitions: [], transactions: 0, other: 0, rowsReturned: 0 });

/**
 * A counting proxy on loopback in front of Azurite's table endpoint: every request (each SDK retry too) is forwarded
 * unchanged and counted by shape, with the rows each read returned. It counts what the client asks and gets back;
 * what Azure reads to answer is the query's shape: a point read reads one row, an "or" of RowKeys the partition.
 */
export class TableRowCounter {
  private traffic = empty();
  private queryUrls: string[] = [];
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });

  private constructor(
    private readonly server: Server,
    private readonly original: string,
  ) {}

  static async start(connectionString: string): Promise<TableRowCounter> {
    const target = /TableEndpoint=http:\/\/127\.0\.0\.1:(\d+)/.exec(connectionString);
    if (!target) throw new Error('TableRowCounter: the connection string names no loopback TableEndpoint');
    const self: { counter?: TableRowCounter } = {};
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const upstream = httpRequest(
          { host: '127.0.0.1', port: Number(target[1]), method: req.method, path: req.url, headers: req.headers, agent: self.counter!.agent },
          (answer) => {
            const parts: Buffer[] = [];
            answer.on('data', (chunk: Buffer) => parts.push(chunk));
            answer.on('end', () => {
              const payload = Buffer.concat(parts);
              self.counter!.count(req.method ?? 'GET', req.url ?? '/', answer.statusCode ?? 0, payload);
              res.writeHead(answer.statusCode ?? 502, answer.headers).end(payload);
            });
            answer.on('error', () => res.destroy());
          },
        );
        upstream.on('error', () => res.destroy());
        upstream.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    self.counter = new TableRowCounter(server, connectionString);
    return self.counter;
  }

  /** The connection string with the table endpoint pointing at the proxy. */
  get connectionString(): string {
    const port = (this.server.address() as AddressInfo).port;
    return this.original.replace(/(TableEndpoint=http:\/\/127\.0\.0\.1:)\d+/, `$1${port}`);
  }

  /** The counts since the last `take` (or the start), and a fresh count from here. */
  take(): TableTraffic {
    const taken = this.traffic;
    this.traffic = empty();
    return taken;
  }

  /** The query URLs (path and query string, decoded) since the last call, in the order sent. */
  takeQueryUrls(): string[] {
    const taken = this.queryUrls;
    this.queryUrls = [];
    return taken;
  }

  async stop(): Promise<void> {
    this.agent.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private count(method: string, url: string, status: number, payload: Buffer): void {
    const path = decodeURIComponent(url.split('?')[0]);
    const query = new URLSearchParams(url.split('?')[1] ?? '');
    const t = this.traffic;
    if (path.includes('$batch')) t.transactions++;
    else if (method === 'GET' && /\(PartitionKey='.*',\s*RowKey='.*'\)$/.test(path)) {
      t.pointReads++;
      if (status === 200) t.rowsReturned++;
    } else if (method === 'GET' && !/\/Tables(\(|$)/.test(path)) {
      t.queries++;
      this.queryUrls.push(decodeURIComponent(url));
      const filter = query.get('$filter') ?? '';
      if (/\bor\b/.test(filter)) {
        t.orQueries++;
        t.orPartitions.push(/PartitionKey eq '([^']*)'/.exec(filter)?.[1] ?? '?');
      }
      if (status === 200) t.rowsReturned += ((JSON.parse(payload.toString('utf8')) as { value?: unknown[] }).value ?? []).length;
    } else t.other++;
  }
}
