import { expect } from 'chai';
import { createEmbedder } from '../../../src/embed/create-embedder.js';
import { createOllamaEmbedder } from '../../../src/embed/ollama.js';
import { EmbedInputError } from '../../../src/embed/types.js';
import { type CpeError, ProviderError } from '../../../src/errors.js';
import { hashedVector, OllamaTestServer } from '../../servers/ollama-server.js';

const texts = (n: number, prefix = 'Text') => Array.from({ length: n }, (_, i) => `${prefix} Nummer ${i}`);
const expectVectorOf = (vector: Float32Array, text: string, dims: number) => {
  const expected = hashedVector(text, dims);
  expect(vector.length).to.equal(dims);
  for (let i = 0; i < dims; i++) expect(vector[i]).to.be.closeTo(expected[i], 1e-6);
};

describe('Ollama embedder against a fake Ollama over HTTP', () => {
  let server: OllamaTestServer;
  let url: string;

  beforeEach(async () => {
    server = new OllamaTestServer({ dimensions: 8 });
    url = (await server.start()).url;
  });
  afterEach(async () => {
    await server.close();
  });

  const embedder = (options: Partial<Parameters<typeof createOllamaEmbedder>[0]> = {}) =>
    createOllamaEmbedder({
      hosts: [url],
      model: 'mxbai-embed-large',
      dimensions: 8,
      retryDelayMs: 5,
      ...options,
    });

  it('returns one vector per text in order, in batches bounded by count and characters', async () => {
    const input = texts(50);
    const vectors = await embedder({ batchSize: 16, concurrency: 2 }).embed(input);
    expect(vectors).to.have.length(50);
    vectors.forEach((v, i) => {
      expectVectorOf(v, input[i], 8);
    });
    expect(Math.max(...server.batchSizes)).to.be.at.most(16);
    expect(server.batchSizes.reduce((a, b) => a + b, 0)).to.equal(50);
    expect(server.stats.maxInFlight).to.be.at.most(2);

    server.batchSizes.length = 0;
    const long = Array.from({ length: 10 }, (_, i) => `${'x'.repeat(95)} ${i}`.padEnd(100, '.'));
    await embedder({ batchSize: 100, maxBatchChars: 300 }).embed(long);
    expect(server.batchSizes.every((n) => n <= 3)).to.equal(true);
  });

  it('spreads a small job over requests of at least 16 inputs instead of one request', async () => {
    await embedder({ concurrency: 4, batchSize: 256 }).embed(texts(40));
    expect(server.batchSizes).to.deep.equal([20, 20]);
  });

  it('starts a large job with a few small requests, then cuts the rest into equal ones', async () => {
    await embedder({ concurrency: 4, batchSize: 64 }).embed(texts(1000));
    const sizes = [...server.batchSizes].sort((a, b) => a - b);
    expect(sizes.reduce((a, b) => a + b, 0)).to.equal(1000);
    // 2 starters of 16 (half the slots; 1/16 of the batch size, at least 16); 968 left: 16 requests of at most 61
    expect(sizes.slice(0, 2)).to.deep.equal([16, 16]);
    expect(sizes.slice(2)).to.have.length(16);
    expect(sizes.slice(2).every((n) => n >= 53 && n <= 61)).to.equal(true);
  });

  it('pools the inputs of concurrent calls into shared requests; each caller gets its own vectors', async () => {
    const shared = embedder({ concurrency: 1, batchSize: 64 });
    const jobs = Array.from({ length: 10 }, (_, k) => texts(5, `Dokument ${k}`));
    const results = await Promise.all(jobs.map((job) => shared.embed(job)));
    results.forEach((vectors, k) => {
      expect(vectors).to.have.length(5);
      vectors.forEach((v, i) => {
        expectVectorOf(v, jobs[k][i], 8);
      });
    });
    // 50 inputs of 10 callers in 2 requests (a small starter of 16, then the other 34), not 10
    expect(server.requests('POST /api/embed')).to.equal(2);
    expect(server.stats.maxInFlight).to.equal(1);
  });

  it('a bad input in a shared request fails only its own caller', async () => {
    server.badInput = 'KAPUTT';
    server.badInputStatus = 400;
    const shared = embedder({ concurrency: 1, batchSize: 64 });
    const bad = ['gut eins', 'KAPUTT', 'gut zwei'];
    const good = texts(4, 'Nachbar');
    const [a, b] = await Promise.allSettled([shared.embed(bad), shared.embed(good)]);
    expect(a.status).to.equal('rejected');
    const error = (a as PromiseRejectedResult).reason as EmbedInputError;
    expect(error).to.be.instanceOf(EmbedInputError);
    expect(error.failures.map((f) => f.index)).to.deep.equal([1]);
    expectVectorOf(error.vectors[2]!, 'gut zwei', 8);
    expect(b.status).to.equal('fulfilled');
    (b as PromiseFulfilledResult<Float32Array[]>).value.forEach((v, i) => {
      expectVectorOf(v, good[i], 8);
    });
  });

  it('a caller that cancels does not fail another that shares its requests', async () => {
    server.faults.delayMs = 200;
    const shared = embedder({ concurrency: 1, batchSize: 64 });
    const controller = new AbortController();
    const first = shared.embed(texts(20, 'Abbruch'), controller.signal);
    const second = shared.embed(texts(20, 'Bleibt'));
    // a starter of 16 'Abbruch' first; then a request of 4 'Abbruch' and 20 'Bleibt' is in flight
    setTimeout(() => controller.abort(), 300);
    const [a, b] = await Promise.allSettled([first, second]);
    expect(((a as PromiseRejectedResult).reason as CpeError).code).to.equal('CANCELLED');
    expect(b.status).to.equal('fulfilled');
    (b as PromiseFulfilledResult<Float32Array[]>).value.forEach((v, i) => {
      expectVectorOf(v, `Bleibt Nummer ${i}`, 8);
    });
  });

  it('retries 429 and 500 answers and dropped connections, then succeeds', async () => {
    server.faults.failNext = 2;
    server.faults.failStatus = 429;
    const a = await embedder().embed(['eins']);
    expectVectorOf(a[0], 'eins', 8);
    expect(server.requests('POST /api/embed')).to.equal(3);

    server.resetCounters();
    server.faults.failNext = 1;
    server.faults.failStatus = 500;
    server.faults.dropNext = 0;
    await embedder().embed(['zwei']);
    expect(server.requests('POST /api/embed')).to.equal(2);

    server.resetCounters();
    server.faults.dropNext = 2;
    const c = await embedder().embed(['drei']);
    expectVectorOf(c[0], 'drei', 8);
    expect(server.counters.dropped).to.equal(2);
  });

  it("waits out a 429's Retry-After before the host gets another request", async () => {
    server.faults.failNext = 1;
    server.faults.failStatus = 429;
    server.faults.failRetryAfter = 0.4;
    const began = Date.now();
    const [vector] = await embedder({ retryDelayMs: 1 }).embed(['eins']);
    expectVectorOf(vector!, 'eins', 8);
    expect(server.requests('POST /api/embed')).to.equal(2);
    // the retry's own backoff is 1-2 ms: a wait this long is the server's 400 ms (a lower bound, never flaky)
    expect(Date.now() - began).to.be.at.least(390);
  });

  it('fails at once, without splitting the batch, when the host refuses every request (401, 403, 3xx, 405)', async () => {
    for (const status of [401, 403, 301, 405]) {
      server.resetCounters();
      server.faults.failNext = 1_000;
      server.faults.failStatus = status;
      const error = await embedder()
        .embed(texts(64))
        .then(
          () => undefined,
          (e: unknown) => e as CpeError,
        );
      expect(error?.code, String(status)).to.equal('PROVIDER_UNAVAILABLE');
      expect(error?.retryable, String(status)).to.equal(false);
      expect(error?.message).to.contain(`answered ${status}`).and.contain('CPE_OLLAMA_HOST');
      // before: each batch retried, then split down to single inputs (64 inputs: 260 requests)
      expect(server.requests('POST /api/embed'), String(status)).to.be.at.most(4);
    }
  });

  it('gives up after maxRetries with a retryable ProviderError that names the host', async () => {
    server.faults.failNext = 100;
    server.faults.failStatus = 503;
    try {
      await embedder({ maxRetries: 2 }).embed(['eins', 'zwei']);
      expect.fail('expected failure');
    } catch (e) {
      expect(e).to.be.instanceOf(ProviderError);
      expect((e as ProviderError).retryable).to.equal(true);
      expect((e as Error).message).to.include(`${url} answered 503`);
    }
    expect(server.requests('POST /api/embed')).to.equal(3);
  });

  it('times out a request that does not answer, and retries it', async () => {
    server.faults.delayMs = 2000;
    try {
      await embedder({ timeoutMs: 100, maxRetries: 1 }).embed(['langsam']);
      expect.fail('expected a timeout');
    } catch (e) {
      expect(e).to.be.instanceOf(ProviderError);
      expect((e as Error).message).to.include('no answer within 100 ms');
    }
    expect(server.requests('POST /api/embed')).to.equal(2);
  });

  it('does not time out requests queued behind others while the host keeps answering', async () => {
    await server.close();
    // one request at a time, 60 ms each: the 4th of 4 sent at once is answered after 240 ms
    server = new OllamaTestServer({
      dimensions: 8,
      cost: { perRequestMs: 60, perInputMs: 0, maxConcurrent: 1 },
    });
    url = (await server.start()).url;
    const input = texts(32);
    const vectors = await embedder({ batchSize: 8, concurrency: 4, timeoutMs: 100, maxRetries: 0 }).embed(
      input,
    );
    vectors.forEach((v, i) => {
      expectVectorOf(v, input[i], 8);
    });
    expect(server.requests('POST /api/embed')).to.equal(4);
    expect(server.stats.maxInFlight).to.equal(4);
  });

  it('survives the server going down and coming back', async () => {
    await server.down();
    setTimeout(() => void server.up(), 300);
    const vectors = await embedder({ maxRetries: 6, retryDelayMs: 100 }).embed(['wieder da']);
    expectVectorOf(vectors[0], 'wieder da', 8);
  });

  it('splits a failing batch to find the one bad input; the others come back', async () => {
    server.badInput = 'KAPUTT';
    const input = texts(12);
    input[7] = 'Dieser Text ist KAPUTT';
    try {
      await embedder({ batchSize: 12, concurrency: 1, maxRetries: 1 }).embed(input);
      expect.fail('expected an EmbedInputError');
    } catch (e) {
      expect(e).to.be.instanceOf(EmbedInputError);
      const error = e as EmbedInputError;
      expect(error.failures.map((f) => f.index)).to.deep.equal([7]);
      expect(error.vectors[7]).to.equal(undefined);
      error.vectors.forEach((v, i) => {
        if (i !== 7) expectVectorOf(v!, input[i], 8);
      });
    }
    // a 400 (input rejected) is split at once, without retrying the whole batch
    server.resetCounters();
    server.badInputStatus = 400;
    const failed = await embedder({ batchSize: 4, concurrency: 1, maxRetries: 3 })
      .embed(['a', 'KAPUTT', 'c', 'd'])
      .catch((e) => e);
    expect((failed as EmbedInputError).failures.map((f) => f.index)).to.deep.equal([1]);
    expect(server.requests('POST /api/embed')).to.equal(1 + 2 + 2);
  });

  it('a 500 outage blames no input: the caller gets a retryable error, never some inputs failed for good', async () => {
    // the reviewer's case: 27 consecutive 500s on /api/embed, an 8-chunk document
    server.faults.failNext = 27;
    server.faults.failStatus = 500;
    const input = texts(8);
    const first = await embedder()
      .embed(input)
      .catch((e: unknown) => e);
    expect(first, 'not some inputs failed for good').to.not.be.instanceOf(EmbedInputError);
    expect(first).to.be.instanceOf(ProviderError);
    expect((first as ProviderError).retryable).to.equal(true);
    expect((first as Error).message).to.include('answered 500');
    // the batch (5 attempts) and its two halves (2 each): not split down to single inputs during the outage
    expect(server.requests('POST /api/embed')).to.equal(9);
    // what a retry of the document sees: the same, until the outage is over; then every vector
    let vectors: Float32Array[] | undefined;
    for (let attempt = 0; attempt < 4 && !vectors; attempt++) {
      vectors = await embedder()
        .embed(input)
        .catch((e: unknown) => {
          expect(e).to.not.be.instanceOf(EmbedInputError);
          return undefined;
        });
    }
    expect(vectors).to.have.length(8);
    vectors!.forEach((v, i) => {
      expectVectorOf(v, input[i], 8);
    });
  });

  it('a 500 outage of any length ending at any request never marks an input failed', async () => {
    const input = texts(8);
    for (let outage = 1; outage <= 40; outage++) {
      server.resetCounters();
      server.faults.failNext = outage;
      server.faults.failStatus = 500;
      for (let attempt = 0; ; attempt++) {
        const result = await embedder({ retryDelayMs: 1 })
          .embed(input)
          .catch((e: unknown) => e);
        expect(result, `outage of ${outage} requests`).to.not.be.instanceOf(EmbedInputError);
        if (Array.isArray(result)) break;
        expect((result as ProviderError).retryable, `outage of ${outage} requests`).to.equal(true);
        expect(attempt, `outage of ${outage} requests`).to.be.below(10);
      }
    }
  });

  it('a 500 on one input is found while the others are answered, with requests in parallel', async () => {
    server.badInput = 'KAPUTT';
    const input = texts(16);
    input[5] = 'Dieser Text ist KAPUTT';
    const error = await embedder({ batchSize: 16 })
      .embed(input)
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(EmbedInputError);
    expect((error as EmbedInputError).failures.map((f) => f.index)).to.deep.equal([5]);
    (error as EmbedInputError).vectors.forEach((v, i) => {
      if (i !== 5) expectVectorOf(v!, input[i], 8);
    });
  });

  it('an unknown model fails at once with how to fix it', async () => {
    await server.close();
    server = new OllamaTestServer({ dimensions: 8, models: ['mxbai-embed-large'] });
    url = (await server.start()).url;
    try {
      await embedder({ model: 'nicht-da' }).embed(['x']);
      expect.fail('expected failure');
    } catch (e) {
      expect((e as CpeError).code).to.equal('PROVIDER_UNAVAILABLE');
      expect((e as Error).message).to.include('ollama pull nicht-da');
    }
    expect(server.requests('POST /api/embed')).to.equal(1);
  });

  it('refuses vectors of another size than configured', async () => {
    try {
      await embedder({ dimensions: 16 }).embed(['x']);
      expect.fail('expected failure');
    } catch (e) {
      expect((e as CpeError).code).to.equal('COLLECTION_MISMATCH');
      expect((e as Error).message).to.include('returned 8-dimensional vectors, but 16 were expected');
    }
  });

  it('refuses a value beyond float32 (it would become Infinity, and NaN once normalised), naming it', async () => {
    await server.close();
    server = new OllamaTestServer({
      dimensions: 8,
      vectorize: (text, dims) => {
        const vector = Array.from(hashedVector(text, dims));
        if (text.includes('riesig')) vector[3] = 1e39;
        return vector;
      },
    });
    url = (await server.start()).url;
    const failed = (await embedder({ maxRetries: 1 })
      .embed(['normal', 'riesig'])
      .catch((e: unknown) => e)) as Error;
    expect(failed).to.be.instanceOf(Error);
    expect(failed.message).to.contain('an embedding in the answer holds 1e+39, beyond the range of float32');
  });

  it('spreads requests over several hosts', async () => {
    const second = new OllamaTestServer({ dimensions: 8 });
    const secondUrl = (await second.start()).url;
    try {
      await createOllamaEmbedder({
        hosts: [url, secondUrl],
        model: 'm',
        dimensions: 8,
        batchSize: 8,
        concurrency: 1,
      }).embed(texts(64));
      expect(server.stats.inputs).to.be.greaterThan(0);
      expect(second.stats.inputs).to.be.greaterThan(0);
      expect(server.stats.inputs + second.stats.inputs).to.equal(64);
    } finally {
      await second.close();
    }
  });

  it('stops when the signal aborts', async () => {
    server.faults.delayMs = 300;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    try {
      await embedder().embed(texts(4), controller.signal);
      expect.fail('expected cancellation');
    } catch (e) {
      expect((e as CpeError).code).to.equal('CANCELLED');
    }
  });

  it('createEmbedder probes the size of a model it does not know; without hosts it is local-hash-v2', async () => {
    const probed = await createEmbedder({ ollamaHosts: [url], model: 'some-new-model' });
    expect(probed).to.include({ kind: 'ollama', model: 'some-new-model', dimensions: 8 });
    // the tag Ollama adds by itself is no other model: the cache, stamps and search see one name
    const tagged = await createEmbedder({ ollamaHosts: [url], model: 'mxbai-embed-large:latest' });
    expect(tagged).to.include({ model: 'mxbai-embed-large', dimensions: 1024 });
    const local = await createEmbedder({ ollamaHosts: [], model: 'mxbai-embed-large' });
    expect(local).to.include({ kind: 'local', model: 'local-hash-v2', dimensions: 1024 });
  });
});
