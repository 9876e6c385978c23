import type { SqlExecutor } from '../db/sql.js';
import { sha256, stableStringify } from '../util/hash.js';
import { sqlTime } from '../util/time.js';
import type { JsonSchema } from './types.js';

export interface CacheKeyParts {
  provider: string;
  model: string;
  system?: string;
  prompt: string;
  schema: JsonSchema;
  images?: Uint8Array[];
}

export interface CachedAnswer {
  value: unknown;
  tokensIn: number;
  tokensOut: number;
  repaired: boolean;
}

/**
 * The key of one LLM call: provider, model, the whole prompt (system, user text, image hashes) and the schema.
 * Anything that changes the answer changes the key; nothing else does (not the step, the document or the run).
 */
export function cacheKey(parts: CacheKeyParts): string {
  return sha256(
    stableStringify({
      v: 1,
      provider: parts.provider,
      model: parts.model,
      system: parts.system ?? '',
      prompt: parts.prompt,
      schema: parts.schema,
      images: (parts.images ?? []).map((image) => sha256(image)),
    }),
  );
}

/** Validated LLM answers in SQL (`llm_cache`), so no call is paid for twice. */
export class LlmCache {
  constructor(private readonly db: SqlExecutor) {}

  async get(key: string): Promise<CachedAnswer | undefined> {
    const rows = await this.db.query<{
      response: string;
      tokens_in: number;
      tokens_out: number;
      repaired: number;
    }>('SELECT response, tokens_in, tokens_out, repaired FROM llm_cache WHERE cache_key = ?', [key]);
    const row = rows[0];
    if (!row) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(row.response);
    } catch {
      return undefined; // a damaged row is a miss; put() overwrites it
    }
    // bookkeeping only: a failed hit counter must not fail the call
    await this.db
      .run('UPDATE llm_cache SET hits = hits + 1, last_hit_at = ? WHERE cache_key = ?', [sqlTime(), key])
      .catch(() => undefined);
    return {
      value,
      tokensIn: Number(row.tokens_in),
      tokensOut: Number(row.tokens_out),
      repaired: Boolean(row.repaired),
    };
  }

  async put(
    key: string,
    entry: { provider: string; model: string; schemaName: string } & CachedAnswer,
  ): Promise<void> {
    const params = [
      key,
      entry.provider,
      entry.model,
      entry.schemaName.slice(0, 100),
      JSON.stringify(entry.value),
      entry.tokensIn,
      entry.tokensOut,
      entry.repaired ? 1 : 0,
    ];
    const columns = '(cache_key, provider, model, schema_name, response, tokens_in, tokens_out, repaired)';
    // two processes may answer the same prompt at once; both answers are valid, the later one replaces
    if (this.db.dialect === 'sqlite') {
      await this.db.run(
        `INSERT OR REPLACE INTO llm_cache ${columns} VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        params,
      );
    } else {
      await this.db.run(
        `INSERT INTO llm_cache ${columns} VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON DUPLICATE KEY UPDATE response = VALUES(response), tokens_in = VALUES(tokens_in),
         tokens_out = VALUES(tokens_out), repaired = VALUES(repaired)`,
        params,
      );
    }
  }
}
