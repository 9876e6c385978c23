import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A small HTTP server for tests: a router with `:param` paths, JSON in and out, and fault injection shared by
 * the fake Ollama and Qdrant servers (fail the next N requests with a status, fail every Nth, delay, drop the
 * connection, go down and come back up on the same port).
 */
export interface RouteRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: any;
  /** true once the client gave up (timeout, abort): long handlers may stop early */
  readonly aborted: boolean;
}

export interface RouteResult {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
}

export type RouteHandler = (request: RouteRequest) => Promise<RouteResult> | RouteResult;

/**
 * A handler that writes the response itself (e.g. handleOllamaChat from ollama-chat.ts); returns false when the
 * request is not its own. Raw handlers are tried before the routes and are not subject to fault injection.
 */
export type RawHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  rawBody: string,
) => Promise<boolean> | boolean;

export interface FaultState {
  /** the next N requests answer with `failStatus` */
  failNext: number;
  failStatus: number;
  failMessage: string;
  /** a Retry-After header on those answers: seconds (may be fractional), or a text as is (an HTTP date); unset: none */
  failRetryAfter?: number | string;
  /** every Nth request (1-based count of all requests) answers 500; 0 = off */
  failEvery: number;
  /** the next N requests have their connection destroyed without an answer */
  dropNext: number;
  /** extra delay before every answer */
  delayMs: number;
  /** only requests whose path matches are subject to faults (default: all) */
  pathFilter?: RegExp;
}

export interface StartedServer {
  url: string;
  close(): Promise<void>;
}

interface Route {
  method: string;
  path: string;
  pattern: RegExp;
  names: string[];
  handler: RouteHandler;
}

export class TestHttpServer {
  readonly faults: FaultState = {
    failNext: 0,
    failStatus: 500,
    failMessage: 'injected failure',
    failEvery: 0,
    dropNext: 0,
    delayMs: 0,
  };
  /** requests seen, per 'METHOD /registered/:path' and in total */
  readonly counters = { total: 0, failed: 0, dropped: 0, byRoute: new Map<string, number>() };
  private readonly routes: Route[] = [];
  private readonly rawHandlers: RawHandler[] = [];
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private port = 0;

  constructor(
    /** how faults answer: Ollama {error}, Qdrant {status:{error}} */
    private readonly errorBody: (message: string) => unknown = (message) => ({ error: message }),
  ) {}

  /** Registers a route; `path` may hold `:name` segments. Later registrations win over earlier ones. */
  route(method: string, path: string, handler: RouteHandler): this {
    const names: string[] = [];
    const pattern = new RegExp(
      `^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:(\w+)/g, (_m, name) => {
        names.push(name);
        return '([^/]+)';
      })}$`,
    );
    this.routes.unshift({ method: method.toUpperCase(), path, pattern, names, handler });
    return this;
  }

  /** Mounts a raw handler, e.g. `server.mount((req, res, body) => handleOllamaChat(state, req, res, body))`. */
  mount(handler: RawHandler): this {
    this.rawHandlers.push(handler);
    return this;
  }

  private count(key: string) {
    this.counters.byRoute.set(key, (this.counters.byRoute.get(key) ?? 0) + 1);
  }

  /** How many requests a route pattern got, e.g. count('POST /api/embed'). */
  requests(key: string): number {
    return this.counters.byRoute.get(key) ?? 0;
  }

  resetCounters(): void {
    this.counters.total = 0;
    this.counters.failed = 0;
    this.counters.dropped = 0;
    this.counters.byRoute.clear();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    for (const raw of this.rawHandlers) {
      if (await raw(req, res, Buffer.concat(chunks).toString('utf8'))) return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = (req.method ?? 'GET').toUpperCase();
    this.counters.total++;
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      if (res.destroyed) return;
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
        ...headers,
      });
      res.end(text);
    };

    let route: Route | undefined;
    let match: RegExpExecArray | null = null;
    for (const candidate of this.routes) {
      if (candidate.method !== method) continue;
      match = candidate.pattern.exec(url.pathname);
      if (match) {
        route = candidate;
        break;
      }
    }
    if (!route || !match) return send(404, this.errorBody(`no route for ${method} ${url.pathname}`));
    this.count(`${method} ${route.path}`);

    const faulty = !this.faults.pathFilter || this.faults.pathFilter.test(url.pathname);
    if (faulty && this.faults.delayMs > 0) await new Promise((r) => setTimeout(r, this.faults.delayMs));
    if (faulty && this.faults.dropNext > 0) {
      this.faults.dropNext--;
      this.counters.dropped++;
      req.socket.destroy();
      return;
    }
    if (faulty && this.faults.failNext > 0) {
      this.faults.failNext--;
      this.counters.failed++;
      const retryAfter = this.faults.failRetryAfter;
      return send(
        this.faults.failStatus,
        this.errorBody(this.faults.failMessage),
        retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) },
      );
    }
    if (faulty && this.faults.failEvery > 0 && this.counters.total % this.faults.failEvery === 0) {
      this.counters.failed++;
      return send(500, this.errorBody(`injected failure (every ${this.faults.failEvery}th request)`));
    }

    let body: any;
    try {
      const text = Buffer.concat(chunks).toString('utf8');
      body = text ? JSON.parse(text) : undefined;
    } catch {
      return send(400, this.errorBody('request body is not JSON'));
    }
    const params: Record<string, string> = {};
    route.names.forEach((name, i) => {
      params[name] = decodeURIComponent(match![i + 1]);
    });
    let aborted = false;
    res.on('close', () => {
      if (!res.writableFinished) aborted = true;
    });
    try {
      const result = await route.handler({
        method,
        path: url.pathname,
        params,
        query: url.searchParams,
        headers: req.headers,
        body,
        get aborted() {
          return aborted;
        },
      });
      send(result.status ?? 200, result.body, result.headers);
    } catch (error) {
      send(500, this.errorBody((error as Error).message));
    }
  }

  async start(): Promise<StartedServer> {
    await this.listen(0);
    return { url: this.url, close: () => this.stop() };
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private listen(port: number): Promise<void> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
    server.keepAliveTimeout = 1000;
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        this.port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Stops listening and drops every connection: clients see ECONNREFUSED until up(). */
  async down(): Promise<void> {
    await this.stop();
  }

  /** Listens again on the same port. */
  async up(): Promise<void> {
    if (!this.server) await this.listen(this.port);
  }

  async close(): Promise<void> {
    await this.stop();
  }
}
