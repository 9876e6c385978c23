import {
  type RouteRequest,
  type RouteResult,
  type StartedServer,
  TestHttpServer,
} from './test-http-server.js';

/**
 * A fake Qdrant speaking the REST API as @qdrant/js-client-rest uses it: collections (create, exists, get,
 * delete), points (upsert, delete by ids or filter, search, query, scroll, count, retrieve) and payload indexes.
 * Responses are {result, status:"ok", time}; errors {status:{error}, time}. Exact cosine search in memory.
 */
export interface StoredPoint {
  id: string | number;
  vector: number[];
  payload: Record<string, unknown>;
}

export interface FakeCollection {
  size: number;
  distance: string;
  points: Map<string, StoredPoint>;
  payloadIndexes: Map<string, unknown>;
}

const ok = (result: unknown, status = 200): RouteResult => ({
  status,
  body: { result, status: 'ok', time: 0.0001 },
});
const fail = (status: number, error: string): RouteResult => ({
  status,
  body: { status: { error }, time: 0.0001 },
});

/** Qdrant's point ids: an unsigned integer or a UUID; anything else (the text "42") is refused as Qdrant does. */
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
function badId(ids: unknown[]): string | undefined {
  const bad = ids.find(
    (id) =>
      !(
        (typeof id === 'number' && Number.isInteger(id) && id >= 0) ||
        (typeof id === 'string' && UUID.test(id))
      ),
  );
  return bad === undefined
    ? undefined
    : `Unable to parse point id: value ${JSON.stringify(String(bad))} is not a valid point ID`;
}

function normalizeId(id: unknown): string {
  return typeof id === 'number' ? String(id) : String(id).toLowerCase();
}

function getPath(payload: Record<string, unknown>, key: string): unknown {
  return key
    .split('.')
    .reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as any)[k] : undefined), payload);
}

function matchCondition(point: StoredPoint, condition: any): boolean {
  if (condition.has_id) return condition.has_id.map(normalizeId).includes(normalizeId(point.id));
  if (condition.must || condition.should || condition.must_not) return matchFilter(point, condition);
  const value = getPath(point.payload, condition.key);
  const values = Array.isArray(value) ? value : [value];
  if (condition.match) {
    const m = condition.match;
    if ('value' in m) return values.some((v) => v === m.value);
    if ('any' in m) return values.some((v) => m.any.includes(v));
    if ('except' in m) return values.every((v) => !m.except.includes(v));
    if ('text' in m) return values.some((v) => typeof v === 'string' && v.includes(m.text));
  }
  if (condition.range) {
    const r = condition.range;
    return values.some(
      (v) =>
        typeof v === 'number' &&
        (r.gt === undefined || v > r.gt) &&
        (r.gte === undefined || v >= r.gte) &&
        (r.lt === undefined || v < r.lt) &&
        (r.lte === undefined || v <= r.lte),
    );
  }
  if (condition.is_empty) return values.every((v) => v === undefined || v === null);
  throw new Error(`unsupported filter condition ${JSON.stringify(condition)}`);
}

export function matchFilter(point: StoredPoint, filter: any): boolean {
  if (!filter) return true;
  const list = (x: any) => (x === undefined || x === null ? [] : Array.isArray(x) ? x : [x]);
  if (!list(filter.must).every((c) => matchCondition(point, c))) return false;
  const should = list(filter.should);
  if (should.length > 0 && !should.some((c) => matchCondition(point, c))) return false;
  if (list(filter.must_not).some((c) => matchCondition(point, c))) return false;
  return true;
}

function unit(vector: number[]): number[] {
  const norm = Math.sqrt(vector.reduce((s, v) => s + v * v, 0)) || 1;
  return vector.map((v) => v / norm);
}

function selectPayload(
  payload: Record<string, unknown>,
  withPayload: unknown,
): Record<string, unknown> | undefined {
  if (withPayload === false || withPayload === undefined) return undefined;
  if (Array.isArray(withPayload))
    return Object.fromEntries(withPayload.filter((k) => k in payload).map((k) => [k, payload[k]]));
  return payload;
}

function outputId(id: string | number): string | number {
  return typeof id === 'number' ? id : id;
}

export class QdrantTestServer extends TestHttpServer {
  readonly collections = new Map<string, FakeCollection>();
  /** what the client sent as api-key, per request (so tests can see the key arrives) */
  readonly apiKeysSeen: Array<string | undefined> = [];

  constructor(private readonly options: { apiKey?: string } = {}) {
    super((message) => ({ status: { error: message }, time: 0.0001 }));
    const guarded =
      (handler: (r: RouteRequest) => RouteResult) =>
      (request: RouteRequest): RouteResult => {
        const key = request.headers['api-key'];
        this.apiKeysSeen.push(typeof key === 'string' ? key : undefined);
        if (this.options.apiKey && key !== this.options.apiKey) return fail(401, 'Invalid api-key');
        return handler(request);
      };
    const withCollection =
      (handler: (c: FakeCollection, r: RouteRequest) => RouteResult) =>
      (request: RouteRequest): RouteResult => {
        const collection = this.collections.get(request.params.name);
        if (!collection) return fail(404, `Not found: Collection \`${request.params.name}\` doesn't exist!`);
        return handler(collection, request);
      };

    this.route(
      'GET',
      '/',
      guarded(() => ({ body: { title: 'qdrant - vector search engine', version: '1.18.0' } })),
    );
    this.route(
      'GET',
      '/collections',
      guarded(() => ok({ collections: [...this.collections.keys()].map((name) => ({ name })) })),
    );
    this.route(
      'GET',
      '/collections/:name/exists',
      guarded((r) => ok({ exists: this.collections.has(r.params.name) })),
    );
    this.route(
      'GET',
      '/collections/:name',
      guarded(
        withCollection((c) =>
          ok({
            status: 'green',
            optimizer_status: 'ok',
            points_count: c.points.size,
            indexed_vectors_count: 0,
            segments_count: 1,
            config: { params: { vectors: { size: c.size, distance: c.distance } } },
            payload_schema: Object.fromEntries(
              [...c.payloadIndexes].map(([k, v]) => [k, { data_type: v, points: c.points.size }]),
            ),
          }),
        ),
      ),
    );
    this.route(
      'PUT',
      '/collections/:name',
      guarded((r) => {
        if (this.collections.has(r.params.name))
          return fail(409, `Wrong input: Collection \`${r.params.name}\` already exists!`);
        const vectors = r.body?.vectors;
        if (
          !vectors ||
          typeof vectors.size !== 'number' ||
          !['Cosine', 'Dot', 'Euclid', 'Manhattan'].includes(vectors.distance)
        ) {
          return fail(400, 'Wrong input: vectors.size and vectors.distance are required');
        }
        this.collections.set(r.params.name, {
          size: vectors.size,
          distance: vectors.distance,
          points: new Map(),
          payloadIndexes: new Map(),
        });
        return ok(true);
      }),
    );
    this.route(
      'DELETE',
      '/collections/:name',
      guarded((r) => ok(this.collections.delete(r.params.name))),
    );
    this.route(
      'PUT',
      '/collections/:name/index',
      guarded(
        withCollection((c, r) => {
          c.payloadIndexes.set(r.body.field_name, r.body.field_schema);
          return ok({ operation_id: 0, status: 'completed' });
        }),
      ),
    );
    this.route(
      'PUT',
      '/collections/:name/points',
      guarded(
        withCollection((c, r) => {
          const points: StoredPoint[] = r.body?.points ?? [];
          const invalid = badId(points.map((p) => p.id));
          if (invalid) return fail(400, `Wrong input: ${invalid}`);
          for (const p of points) {
            if (!Array.isArray(p.vector) || p.vector.length !== c.size) {
              return fail(
                400,
                `Wrong input: Vector dimension error: expected dim: ${c.size}, got ${p.vector?.length}`,
              );
            }
          }
          for (const p of points) {
            const vector = c.distance === 'Cosine' ? unit(p.vector) : p.vector;
            c.points.set(normalizeId(p.id), {
              id: typeof p.id === 'number' ? p.id : normalizeId(p.id),
              vector,
              payload: p.payload ?? {},
            });
          }
          return ok({ operation_id: 1, status: 'completed' });
        }),
      ),
    );
    this.route(
      'POST',
      '/collections/:name/points',
      guarded(
        withCollection((c, r) =>
          ok(
            (r.body?.ids ?? [])
              .map((id: unknown) => c.points.get(normalizeId(id)))
              .filter(Boolean)
              .map((p: StoredPoint) => ({
                id: outputId(p.id),
                payload: selectPayload(p.payload, r.body?.with_payload ?? true),
              })),
          ),
        ),
      ),
    );
    this.route(
      'POST',
      '/collections/:name/points/delete',
      guarded(
        withCollection((c, r) => {
          if (Array.isArray(r.body?.points)) {
            const invalid = badId(r.body.points);
            if (invalid) return fail(400, `Wrong input: ${invalid}`);
            for (const id of r.body.points) c.points.delete(normalizeId(id));
          } else if (r.body?.filter) {
            for (const [key, p] of c.points) if (matchFilter(p, r.body.filter)) c.points.delete(key);
          } else {
            return fail(400, 'Wrong input: points or filter required');
          }
          return ok({ operation_id: 2, status: 'completed' });
        }),
      ),
    );
    const search = (c: FakeCollection, vector: number[], body: any) => {
      if (!Array.isArray(vector) || vector.length !== c.size) {
        return {
          error: `Wrong input: Vector dimension error: expected dim: ${c.size}, got ${vector?.length}`,
        };
      }
      const q = c.distance === 'Cosine' ? unit(vector) : vector;
      const scored = [...c.points.values()]
        .filter((p) => matchFilter(p, body.filter))
        .map((p) => ({ p, score: p.vector.reduce((s, v, i) => s + v * q[i], 0) }))
        .sort((a, b) => b.score - a.score)
        .slice(body.offset ?? 0, (body.offset ?? 0) + (body.limit ?? 10));
      return {
        hits: scored.map(({ p, score }) => ({
          id: outputId(p.id),
          version: 1,
          score,
          payload: selectPayload(p.payload, body.with_payload),
        })),
      };
    };
    this.route(
      'POST',
      '/collections/:name/points/search',
      guarded(
        withCollection((c, r) => {
          const result = search(c, r.body?.vector, { with_payload: true, ...r.body });
          return result.error ? fail(400, result.error) : ok(result.hits);
        }),
      ),
    );
    this.route(
      'POST',
      '/collections/:name/points/query',
      guarded(
        withCollection((c, r) => {
          const result = search(c, r.body?.query, r.body ?? {});
          return result.error ? fail(400, result.error) : ok({ points: result.hits });
        }),
      ),
    );
    this.route(
      'POST',
      '/collections/:name/points/scroll',
      guarded(
        withCollection((c, r) => {
          const body = r.body ?? {};
          const limit = body.limit ?? 10;
          const all = [...c.points.values()]
            .filter((p) => matchFilter(p, body.filter))
            .sort((a, b) => (normalizeId(a.id) < normalizeId(b.id) ? -1 : 1));
          const start =
            body.offset === undefined || body.offset === null
              ? 0
              : all.findIndex((p) => normalizeId(p.id) >= normalizeId(body.offset));
          const from = start < 0 ? all.length : start;
          const page = all.slice(from, from + limit);
          const next = all[from + limit];
          return ok({
            points: page.map((p) => ({
              id: outputId(p.id),
              payload: selectPayload(p.payload, body.with_payload ?? true),
              ...(body.with_vector ? { vector: p.vector } : {}),
            })),
            next_page_offset: next ? outputId(next.id) : null,
          });
        }),
      ),
    );
    this.route(
      'POST',
      '/collections/:name/points/count',
      guarded(
        withCollection((c, r) =>
          ok({ count: [...c.points.values()].filter((p) => matchFilter(p, r.body?.filter)).length }),
        ),
      ),
    );
  }

  /** The stored points of a collection (tests assert on them). */
  points(collection: string): StoredPoint[] {
    return [...(this.collections.get(collection)?.points.values() ?? [])];
  }
}

/** Starts a fake Qdrant on 127.0.0.1 (random port). */
export async function startQdrantServer(
  options: { apiKey?: string } = {},
): Promise<StartedServer & { server: QdrantTestServer }> {
  const server = new QdrantTestServer(options);
  const started = await server.start();
  return { ...started, server };
}
