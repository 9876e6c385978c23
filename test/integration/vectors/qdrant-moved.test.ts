import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { createLocalEmbedder } from '../../../src/embed/local-hash.js';
import type { CpeError } from '../../../src/errors.js';
import { type EntityRow, storeEntityPoints } from '../../../src/knowledge/entities.js';
import { createVectorIndex } from '../../../src/vectors/create-vector-index.js';
import type { QdrantVectorIndex } from '../../../src/vectors/qdrant-vector-index.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { runCli } from '../../helpers/cli.js';
import { makeSourceFolder } from '../../helpers/files.js';
import { QdrantTestServer } from '../../servers/qdrant-server.js';
import { makeProviders, openTestDatabases, type TestDatabases } from './helpers.js';

/**
 * A data set (its ki_content) stamps the collections it makes with the Qdrant they are in. Pointed at another Qdrant
 * whose collection of the same name holds another data set's points, it must refuse it (search would answer with
 * those points, verify --repair would delete them); pointed at a copy of its own collection (moved to a new host),
 * it takes the copy on.
 */

const scrolls = (server: QdrantTestServer) => server.requests('POST /collections/:name/points/scroll');

/** The points of a collection as they are now, deep: to tell that nothing touched them. */
const snapshot = (server: QdrantTestServer, collection: string) =>
  JSON.parse(JSON.stringify(server.points(collection)));

/** A collection copied point for point from one Qdrant to another, as a snapshot restored there. */
function copyCollection(from: QdrantTestServer, to: QdrantTestServer, name: string) {
  const source = from.collections.get(name)!;
  to.collections.set(name, {
    size: source.size,
    distance: source.distance,
    points: new Map(
      [...source.points].map(([id, point]) => [id, JSON.parse(JSON.stringify(point)) as typeof point]),
    ),
    payloadIndexes: new Map(source.payloadIndexes),
  });
}

for (const backend of testBackends()) {
  describe(`a data set pointed at another Qdrant (${backend})`, function () {
    this.timeout(180000);
    const servers: QdrantTestServer[] = [];
    const urls: string[] = [];
    const folders: string[] = [];
    let a: TestSetup;
    let b: TestSetup;

    beforeEach(async () => {
      for (let i = 0; i < 3; i++) {
        const server = new QdrantTestServer();
        urls.push((await server.start()).url);
        servers.push(server);
      }
      a = createTestSetup(backend);
      b = createTestSetup(backend);
    });
    afterEach(async () => {
      for (const server of servers.splice(0)) await server.close();
      urls.splice(0);
      await a?.cleanup();
      await b?.cleanup();
      for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
    });

    const cpe = (setup: TestSetup, url: string, args: string[]) =>
      runCli(args, { ...setup.env, CPE_QDRANT_URL: url });
    const folder = (files: Record<string, string>) => {
      const dir = makeSourceFolder(files);
      folders.push(dir);
      return dir;
    };
    const stampOf = async (setup: TestSetup, name: string) => {
      const engine = await setup.open();
      try {
        const [row] = await engine.dbs.content.sql.query<{ location: string }>(
          `SELECT location FROM vector_collections WHERE backend = 'qdrant' AND name = ?`,
          [name],
        );
        return row?.location;
      } finally {
        await engine.close();
      }
    };
    const ids = (server: QdrantTestServer) =>
      server
        .points('documents')
        .map((p) => String(p.id))
        .sort();

    it('refuses the same-named collection of another data set in another Qdrant (run, search, verify) and leaves its points alone, though its stamp names a collection of that name', async () => {
      const [one, two] = servers as [QdrantTestServer, QdrantTestServer];
      const [url1, url2] = urls as [string, string];
      const sourceA = folder({
        'dienstplan.md': '# Dienstplan\n\nDer Dienstplan der Station wird monatlich erstellt.\n',
        'urlaub.md': '# Urlaub\n\nUrlaubsanträge stellen Sie bis zum 31. März.\n',
      });
      const sourceB = folder({
        'kantine.md': '# Kantine\n\nDie Kantine öffnet um 11:30 Uhr und schließt um 14 Uhr.\n',
        'brandschutz.md': '# Brandschutz\n\nFluchtwege sind freizuhalten, Feuerlöscher werden geprüft.\n',
      });
      const runA = await cpe(a, url1, ['run', '--pipeline=Standard', `--source=${sourceA}`]);
      expect(runA.code, runA.stderr).to.equal(0);
      const runB = await cpe(b, url2, ['run', '--pipeline=Standard', `--source=${sourceB}`]);
      expect(runB.code, runB.stderr).to.equal(0);
      expect(await stampOf(a, 'documents')).to.equal(url1);
      // point ids come from document ids and chunk indexes: B's are the very ids of A's, so ids alone cannot tell
      expect(ids(two)).to.have.length(2).and.deep.equal(ids(one));
      const pointsOfB = snapshot(two, 'documents');

      const refusal = (result: { code: number | null; stdout: string; stderr: string }, what: string) => {
        expect(result.code, `${what}\n${result.stdout}${result.stderr}`).to.equal(2);
        expect(result.stderr, what)
          .to.include(`collection 'documents' in Qdrant ${url2} holds 2 points, but this data set`)
          .and.include(`it made its collection 'documents' in Qdrant ${url1}`)
          .and.include('it belongs to another data set using this Qdrant');
        expect(snapshot(two, 'documents'), what).to.deep.equal(pointsOfB);
      };
      for (const args of [['verify'], ['verify', '--repair'], ['search', 'Dienstplan Station']]) {
        refusal(await cpe(a, url2, args), args.join(' '));
      }
      // A's stamp still names its own Qdrant, where it goes on as before
      expect(await stampOf(a, 'documents')).to.equal(url1);
      const own = await cpe(a, url1, ['verify']);
      expect(own.code, own.stdout + own.stderr).to.equal(0);
      expect(own.stdout).to.contain('OK: SQL and the vector index agree.');

      // a run with a new file stores nothing into B's collection (the checkpoints of the others say done)
      writeFileSync(path.join(sourceA, 'kantine.md'), '# Kantine\n\nEssen gibt es ab 11:30 Uhr.\n');
      const run = await cpe(a, url2, ['run', '--pipeline=Standard', `--source=${sourceA}`]);
      // the refusal fails the document's embed step, and with it the run (exit 1, as for a collection with no stamp)
      expect(run.code, run.stdout + run.stderr).to.equal(1);
      expect(run.stdout)
        .to.include("step 'embed' failed on document")
        .and.include(`collection 'documents' in Qdrant ${url2} holds 2 points, but this data set`);
      expect(snapshot(two, 'documents')).to.deep.equal(pointsOfB);
      expect(await stampOf(a, 'documents')).to.equal(url1);
    });

    it('takes on a copy of its own collection in another Qdrant (moved there), names that Qdrant in its stamp, and searches it', async () => {
      const [one, , three] = servers as [QdrantTestServer, QdrantTestServer, QdrantTestServer];
      const [url1, , url3] = urls as [string, string, string];
      const source = folder({
        'dienstplan.md': '# Dienstplan\n\nDer Dienstplan der Station wird monatlich erstellt.\n',
        'urlaub.md': '# Urlaub\n\nUrlaubsanträge stellen Sie bis zum 31. März.\n',
      });
      const run = await cpe(a, url1, ['run', '--pipeline=Standard', `--source=${source}`]);
      expect(run.code, run.stderr).to.equal(0);
      copyCollection(one, three, 'documents');

      const search = await cpe(a, url3, ['search', 'Dienstplan Station']);
      expect(search.code, search.stdout + search.stderr).to.equal(0);
      expect(search.stdout).to.include('dienstplan.md');
      expect(search.stderr).to.include(
        `collection 'documents' in Qdrant ${url3} holds this data set's points, although cpe had made it at ${url1}`,
      );
      expect(await stampOf(a, 'documents')).to.equal(url3);
      // from now on the stamp names this Qdrant: no more looking at points, no more saying so
      const before = scrolls(three);
      const verify = await cpe(a, url3, ['verify']);
      expect(verify.code, verify.stdout + verify.stderr).to.equal(0);
      expect(verify.stdout).to.contain('OK: SQL and the vector index agree.');
      expect(verify.stderr).to.not.include('holds this data set');
      // verify scrolls the collection once to list its points, and looks at no sample
      expect(scrolls(three) - before).to.equal(1);
      expect(ids(three)).to.deep.equal(ids(one));
    });
  });

  describe(`the entities collection in another Qdrant (${backend})`, () => {
    const servers: QdrantTestServer[] = [];
    const urls: string[] = [];
    let a: TestDatabases;
    let b: TestDatabases;
    const local = createLocalEmbedder();
    const spec = { size: local.dimensions, distance: 'Cosine' as const, model: local.model };

    beforeEach(async () => {
      for (let i = 0; i < 3; i++) {
        const server = new QdrantTestServer();
        urls.push((await server.start()).url);
        servers.push(server);
      }
      a = await openTestDatabases(backend);
      b = await openTestDatabases(backend);
    });
    afterEach(async () => {
      for (const server of servers.splice(0)) await server.close();
      urls.splice(0);
      await a?.cleanup();
      await b?.cleanup();
    });

    const indexOf = (t: TestDatabases, url: string, warnings: string[] = []) =>
      createVectorIndex({
        qdrantUrl: url,
        db: t.db,
        log: { warn: (message) => warnings.push(message) },
      }) as QdrantVectorIndex;
    /** The data set's entities, their points stored into the Qdrant at `url`. */
    async function storeEntities(t: TestDatabases, url: string, names: string[]) {
      for (const name of names) {
        await t.db.run('INSERT INTO entities (name, normalized_name, type) VALUES (?, ?, ?)', [
          name,
          name.toLowerCase(),
          'CONCEPT',
        ]);
      }
      const rows = await t.db.query<EntityRow>(
        'SELECT id, name, normalized_name, type, description FROM entities ORDER BY id',
      );
      const index = indexOf(t, url);
      await storeEntityPoints({ db: t.db, providers: makeProviders(local, index) }, rows);
    }
    const stampOf = async (t: TestDatabases) =>
      (
        await t.db.query<{ location: string }>(
          `SELECT location FROM vector_collections WHERE backend = 'qdrant' AND name = 'entities'`,
        )
      )[0]?.location;

    it("refuses another data set's entities once per process, and takes on a copy of its own", async () => {
      const [one, two, three] = servers as [QdrantTestServer, QdrantTestServer, QdrantTestServer];
      const [url1, url2, url3] = urls as [string, string, string];
      await storeEntities(a, url1, ['Station', 'Dienstplan']);
      await storeEntities(b, url2, ['Kantine', 'Brandschutz']);
      const pointsOfB = snapshot(two, 'entities');

      const warnings: string[] = [];
      const atTwo = indexOf(a, url2, warnings);
      const scrolled = scrolls(two);
      for (const attempt of [
        () => atTwo.ensureCollection('entities', spec),
        () => atTwo.describeCollection('entities'),
        () => atTwo.ensureCollection('entities', spec),
      ]) {
        const error = (await attempt().catch((e: unknown) => e)) as CpeError;
        expect(error.code).to.equal('COLLECTION_MISMATCH');
        expect(error.message)
          .to.include(`collection 'entities' in Qdrant ${url2} holds 2 points, but this data set`)
          .and.include(`it made its collection 'entities' in Qdrant ${url1}`)
          .and.include(`set CPE_QDRANT_URL to ${url1} again`)
          .and.include("the name of the 'entities' collection is fixed");
      }
      // the points were looked at once, not on every call
      expect(scrolls(two) - scrolled).to.equal(1);
      expect(snapshot(two, 'entities')).to.deep.equal(pointsOfB);
      expect(await stampOf(a)).to.equal(url1);
      expect(warnings).to.deep.equal([]);

      // an empty collection there is used as before: nobody's points to protect, the stamp left as it is
      const empty = indexOf(a, url2, warnings);
      two.collections.get('entities')!.points.clear();
      await empty.ensureCollection('entities', spec);
      expect(await stampOf(a)).to.equal(url1);
      two.collections.get('entities')!.points = new Map(
        pointsOfB.map((p: { id: string }) => [String(p.id), p]),
      );

      // a copy of A's own collection is taken on, said once
      copyCollection(one, three, 'entities');
      const atThree = indexOf(a, url3, warnings);
      await atThree.ensureCollection('entities', spec);
      expect(await stampOf(a)).to.equal(url3);
      expect((await atThree.describeCollection('entities')).points).to.equal(2);
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.include(
        `collection 'entities' in Qdrant ${url3} holds this data set's points, although cpe had made it at ${url1}`,
      );
      expect(scrolls(three)).to.equal(1);
    });
  });
}
