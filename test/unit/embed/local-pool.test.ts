import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { expect } from 'chai';
import { textHash } from '../../../src/embed/cache.js';
import { createLocalEmbedder, embedLocalHash } from '../../../src/embed/local-hash.js';
import {
  closeLocalEmbedPools,
  LocalEmbedPool,
  sharedLocalEmbedPool,
  spawnLocalEmbedWorker,
  splitByLength,
} from '../../../src/embed/local-pool.js';
import { chunkEmbedInput, prepareEmbedText } from '../../../src/embed/prepare.js';
import { CpeError, ProviderError } from '../../../src/errors.js';

const sentences = [
  'Der Arbeitgeber trägt die Kosten der Maßnahme.',
  'Kündigungen des Arbeitnehmers bedürfen der Schriftform.',
  'Die Übergröße der Fenster verlangt einen Sonnenschutz.',
  'Urlaubsanträge sind spätestens vier Wochen vorher einzureichen.',
  'Brandschutzhelfer werden jährlich unterwiesen; 10 % der Belegschaft.',
];
/** texts of chunk size (a few thousand characters), different from each other, and a few odd ones */
const corpus: string[] = [
  ...Array.from({ length: 40 }, (_, i) =>
    Array.from(
      { length: 12 + (i % 7) },
      (_, j) => `${sentences[(i + j) % sentences.length]} Abschnitt ${i}.${j}`,
    ).join(' '),
  ),
  '',
  'x',
  '😀 Emoji und ß',
];

const bytes = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);

/** A stand-in worker (same protocol) that exits on the text 'exit' and throws on 'throw'. */
const fakeWorker = () =>
  new Worker(
    `const { parentPort } = require('node:worker_threads');
     parentPort.on('message', (job) => {
       if (job.texts.includes('exit')) process.exit(7);
       if (job.texts.includes('throw')) throw new Error('boom');
       parentPort.postMessage({ id: job.id, vectors: job.texts.map((t) => new Float32Array(job.dimensions).fill(t.length)) });
     });`,
    { eval: true },
  );

/**
 * Runs `body` as an ES module in a child process (TypeScript through tsx) with createLocalEmbedder imported. A
 * worker left referenced keeps the child alive until `timeout` kills it: status null, signal SIGTERM.
 */
function runWithLocalEmbedder(body: string, timeout: number) {
  const localHash = fileURLToPath(new URL('../../../src/embed/local-hash.ts', import.meta.url));
  const script = `const { createLocalEmbedder } = await import(${JSON.stringify(localHash)});\n${body}`;
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout,
  });
}

describe('local-hash-v2 on worker threads', function () {
  // a TypeScript worker loads its modules through tsx first
  this.timeout(60_000);

  after(() => closeLocalEmbedPools());

  it('returns exactly the vectors of the in-thread function, in order, as views of one buffer per part', async () => {
    const pool = new LocalEmbedPool({ size: 2 });
    try {
      for (const dimensions of [1024, 256]) {
        const vectors = await pool.embed(corpus, dimensions);
        expect(vectors).to.have.length(corpus.length);
        corpus.forEach((text, i) => {
          const expected = embedLocalHash(text, dimensions);
          expect(vectors[i]!.byteLength, `text ${i}`).to.equal(dimensions * 4);
          // a part's vectors come back in one transferred buffer, each a view of its own slice
          expect(vectors[i]!.buffer.byteLength % (dimensions * 4), `text ${i}`).to.equal(0);
          expect(bytes(vectors[i]!).equals(bytes(expected)), `text ${i} at ${dimensions}`).to.equal(true);
        });
      }
      // the call was cut into one part per worker, and each part's vectors share its buffer
      expect(pool.threads).to.equal(2);
      const buffers = new Set((await pool.embed(corpus, 1024)).map((v) => v.buffer));
      expect(buffers.size).to.equal(2);
    } finally {
      await pool.close();
    }
  });

  it('prepareAndEmbed prepares, hashes and embeds chunk inputs as the calling thread would, on the workers and in-thread', async () => {
    const inputs = corpus.map((text, i) =>
      chunkEmbedInput(`${text}\n\n  Kapitel ${i} ........ 12`, {
        title: `Titel ${i % 3}`,
        headingPath: ['§ 3'],
      }),
    );
    inputs.push(chunkEmbedInput('ohne Kontext', {}), chunkEmbedInput('— … —', {}));
    for (const maxChars of [800, Number.POSITIVE_INFINITY]) {
      const texts = inputs.map((input) => prepareEmbedText(input, maxChars));
      const want = {
        hashes: texts.map(textHash),
        vectors: texts.map((text) => bytes(embedLocalHash(text)).toString('base64')),
      };
      for (const threads of [2, 0]) {
        const got = await createLocalEmbedder({ threads }).prepareAndEmbed!(inputs, maxChars);
        expect(got.hashes, `threads ${threads}, cap ${maxChars}`).to.deep.equal(want.hashes);
        expect(got.vectors.map((v) => bytes(v).toString('base64'))).to.deep.equal(want.vectors);
        // unit length, or all zeros for a text without words: the embed step relies on it (PreparedVectors)
        const squaredLengths = got.vectors.map((v) => v.reduce((sum, x) => sum + x * x, 0));
        expect(squaredLengths.at(-1)).to.equal(0);
        for (const squared of squaredLengths.slice(0, -1)) expect(squared).to.be.closeTo(1, 1e-6);
      }
    }
    expect(sharedLocalEmbedPool(2).threads).to.equal(2);
  });

  it('the embedder keeps small calls (a query) on the calling thread until its workers run, and sends chunks to the workers', async () => {
    const embedder = createLocalEmbedder({ threads: 3 });
    const pool = sharedLocalEmbedPool(3);
    expect(embedder).to.include({ model: 'local-hash-v2', dimensions: 1024, kind: 'local' });
    const [query] = await embedder.embed(['Kündigungsschutz im Betrieb']);
    expect(pool.threads).to.equal(0);
    expect(bytes(query!).equals(bytes(embedLocalHash('Kündigungsschutz im Betrieb')))).to.equal(true);
    const vectors = await embedder.embed(corpus);
    expect(pool.threads).to.be.greaterThan(0);
    const inThread = await createLocalEmbedder({ threads: 0 }).embed(corpus);
    expect(vectors.map((v) => bytes(v).toString('base64'))).to.deep.equal(
      inThread.map((v) => bytes(v).toString('base64')),
    );
    // with the workers running, a small call goes to them too (the calling thread need not compile the embedder)
    const calls: number[] = [];
    const original = pool.embed;
    pool.embed = (texts, dimensions, signal) => {
      calls.push(texts.length);
      return original.call(pool, texts, dimensions, signal);
    };
    try {
      const [again] = await embedder.embed(['Kündigungsschutz im Betrieb']);
      expect(calls).to.deep.equal([1]);
      expect(bytes(again!).equals(bytes(query!))).to.equal(true);
    } finally {
      pool.embed = original;
    }
  });

  it('a worker that exits or throws fails only its call, with a clear error, and is replaced', async () => {
    let spawned = 0;
    const pool = new LocalEmbedPool({
      size: 1,
      name: 'local-hash-v2',
      spawn: () => {
        spawned++;
        return fakeWorker();
      },
    });
    try {
      const exited = await pool.embed(['exit'], 4).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(exited).to.be.instanceOf(ProviderError);
      expect((exited as Error).message).to.equal('local-hash-v2: a worker thread exited (code 7)');
      expect((await pool.embed(['abc'], 4))[0]).to.deep.equal(new Float32Array([3, 3, 3, 3]));
      const thrown = await pool.embed(['throw'], 4).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect((thrown as Error).message).to.equal('local-hash-v2: a worker thread failed: boom');
      expect((await pool.embed(['ab'], 2))[0]).to.deep.equal(new Float32Array([2, 2]));
      expect(spawned).to.equal(3);
      // a part queued behind the one the worker died on (two parts are posted at once) goes to the next worker
      const [dying, next] = await Promise.allSettled([pool.embed(['exit'], 4), pool.embed(['abcd'], 1)]);
      expect(dying.status).to.equal('rejected');
      expect(next).to.deep.equal({ status: 'fulfilled', value: [new Float32Array([4])] });
      expect(spawned).to.equal(4);
    } finally {
      await pool.close();
    }
  });

  it('a real worker stopped in the middle of a call rejects that call; the next call gets a new worker', async () => {
    const workers: Worker[] = [];
    const pool = new LocalEmbedPool({
      size: 1,
      spawn: () => {
        const worker = spawnLocalEmbedWorker();
        workers.push(worker);
        return worker;
      },
    });
    try {
      const call = pool.embed(corpus, 1024);
      await workers[0]!.terminate();
      const error = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as Error).message).to.match(/^local embedder: a worker thread exited \(code \d+\)$/);
      const vectors = await pool.embed(corpus.slice(0, 3), 1024);
      expect(bytes(vectors[2]!).equals(bytes(embedLocalHash(corpus[2]!)))).to.equal(true);
      expect(workers).to.have.length(2);
    } finally {
      await pool.close();
    }
  });

  it('an aborted call rejects with the abort reason; close() rejects waiting calls; the pool works again after', async () => {
    const pool = new LocalEmbedPool({ size: 1, spawn: fakeWorker });
    try {
      const controller = new AbortController();
      const first = pool.embed(['eins'], 2, controller.signal);
      const second = pool.embed(['zwei'], 2, controller.signal);
      controller.abort(new Error('stop'));
      const outcomes = await Promise.allSettled([first, second]);
      expect(outcomes.map((o) => o.status === 'rejected' && (o.reason as Error).message)).to.deep.equal([
        'stop',
        'stop',
      ]);
      const waiting = pool.embed(['drei'], 2).then(
        () => undefined,
        (e: unknown) => e,
      );
      await pool.close();
      const closed = await waiting;
      expect(closed).to.be.instanceOf(CpeError);
      expect((closed as CpeError).code).to.equal('CANCELLED');
      expect(pool.threads).to.equal(0);
      expect((await pool.embed(['vier'], 2))[0]).to.deep.equal(new Float32Array([4, 4]));
    } finally {
      await pool.close();
    }
  });

  it('warmUp starts the workers ahead of the first call, which then uses them', async () => {
    let spawned = 0;
    const pool = new LocalEmbedPool({
      size: 2,
      spawn: () => {
        spawned++;
        return fakeWorker();
      },
    });
    try {
      pool.warmUp();
      expect(pool.threads).to.equal(2);
      pool.warmUp();
      expect(await pool.embed(['abc', 'de'], 1)).to.deep.equal([
        new Float32Array([3]),
        new Float32Array([2]),
      ]);
      expect(spawned).to.equal(2);
    } finally {
      await pool.close();
    }
  });

  it('cuts a call into contiguous parts of similar length, in order', () => {
    const texts = ['aaaa', 'bb', 'cc', 'dddd', 'e', 'fff'];
    const parts = splitByLength(texts, 2);
    expect(parts.flat()).to.deep.equal(texts);
    expect(parts.map((p) => p.join('').length)).to.deep.equal([8, 8]);
    expect(splitByLength(texts, 10)).to.have.length(6);
    expect(splitByLength(['x'], 3)).to.deep.equal([['x']]);
  });

  it('idle workers do not keep the process alive: a script that embedded on them exits by itself', () => {
    const child = runWithLocalEmbedder(
      `const vectors = await createLocalEmbedder({ threads: 2 }).embed(Array.from({ length: 20 }, (_, i) => 'Wort '.repeat(400) + i));
       console.log('embedded', vectors.length);`,
      50_000,
    );
    expect(child.stderr).to.equal('');
    expect(child.stdout.trim()).to.equal('embedded 20');
    // killed by the timeout it would have status null and signal SIGTERM
    expect(child.status).to.equal(0);
  });

  it('workers started ahead (warmUp) and never used do not keep the process alive either', () => {
    const child = runWithLocalEmbedder(
      `const embedder = createLocalEmbedder({ threads: 2 });
       embedder.warmUp();
       const [vector] = await embedder.embed(['kurze Anfrage']);
       console.log('embedded', vector.length);`,
      30_000,
    );
    expect(child.stderr).to.equal('');
    expect(child.stdout.trim()).to.equal('embedded 1024');
    expect(child.status, 'the process had to be killed: a worker kept it alive').to.equal(0);
  });
});
