import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { parseRetryAfter } from '../llm/provider-errors.js';

/** Ollama answered with a status other than 2xx; the message is Ollama's `error` text. */
export class OllamaHttpError extends Error {
  readonly status: number;
  /** the answer's Retry-After (a proxy's or a gateway's in front of Ollama, on 429 and 503), in ms */
  readonly retryAfterMs: number | undefined;

  constructor(status: number, message: string, retryAfterMs?: number) {
    super(message);
    this.name = 'OllamaHttpError';
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

/** Ollama's `{"error": "..."}`, or the text itself when the answer is not that. */
function errorText(text: string): string {
  try {
    const error = (JSON.parse(text) as { error?: unknown }).error;
    if (typeof error === 'string' && error) return error;
  } catch {
    // not JSON: the text is the message
  }
  return text.trim().slice(0, 500);
}

/**
 * JSON POSTs to Ollama over node:http(s), with connections kept open between requests. fetch (undici's streams
 * and Request objects) and the `ollama` client's wrapping cost about as much CPU per request as building the
 * body; when the client shares a machine with the server, that CPU is the server's.
 */
export class OllamaHttp {
  private readonly httpAgent = new HttpAgent({ keepAlive: true });
  private readonly httpsAgent = new HttpsAgent({ keepAlive: true });

  /** The parsed answer; rejects with OllamaHttpError for a non-2xx answer, else with the socket's error. */
  post(url: string, body: unknown, signal: AbortSignal): Promise<unknown> {
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    const payload = Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const request = (secure ? httpsRequest : httpRequest)(
        target,
        {
          method: 'POST',
          agent: secure ? this.httpsAgent : this.httpAgent,
          signal,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            'content-length': payload.length,
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', reject);
          response.on('close', () => {
            if (!response.complete) {
              reject(
                Object.assign(new Error('the connection closed during the answer'), { code: 'ECONNRESET' }),
              );
            }
          });
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = response.statusCode ?? 0;
            if (status < 200 || status >= 300) {
              const header = (name: string) => {
                const value = response.headers[name];
                return (Array.isArray(value) ? value[0] : value) ?? null;
              };
              reject(
                new OllamaHttpError(
                  status,
                  errorText(text) || `HTTP ${status}`,
                  parseRetryAfter({ get: header }),
                ),
              );
              return;
            }
            try {
              resolve(JSON.parse(text));
            } catch {
              reject(new Error(`the answer is not JSON: ${text.slice(0, 200)}`));
            }
          });
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  }
}
