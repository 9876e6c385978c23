import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import PDFDocument from 'pdfkit';
import { sha256 } from '../../../src/util/hash.js';
import { parseJsonColumn } from '../../../src/util/json.js';
import visionAnalyze from '../../../steps/vision_analyze.js';
import { type OllamaChatTestServer, startOllamaChatServer } from '../../servers/ollama-chat.js';
import { insertDocument, openTestDb, runStep, type TestDb, testProviders } from './harness.js';

/** A two-page PDF: page 1 text only, page 2 a drawn bar chart with a caption. */
async function chartPdf(): Promise<Buffer> {
  const doc = new PDFDocument({ size: 'A4' });
  const parts: Buffer[] = [];
  doc.on('data', (b: Buffer) => parts.push(b));
  const done = new Promise<Buffer>((resolve) => doc.on('end', () => resolve(Buffer.concat(parts))));
  doc.fontSize(14).text('Einleitung: Die Ausbildung dauert drei Jahre.');
  doc.addPage();
  doc.fontSize(12).text('Abbildung 1: Prüfungsergebnisse nach Jahrgang');
  [60, 120, 90].forEach((h, i) => {
    doc.rect(100 + i * 80, 400 - h, 50, h).fill(i === 1 ? '#c33' : '#36c');
  });
  doc.end();
  return done;
}

describe('vision_analyze on a real database', function () {
  this.timeout(60000);
  let t: TestDb;
  let ollama: OllamaChatTestServer;
  let dir: string;

  beforeEach(async () => {
    t = await openTestDb();
    ollama = await startOllamaChatServer(['llama3.2-vision:11b']);
    dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-vision-'));
  });
  afterEach(async () => {
    await ollama.close();
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The chart PDF as a stored document: page 1 text, page 2 the chart (an image for the page split). */
  async function chartDocument(filename: string) {
    const bytes = await chartPdf();
    const file = path.join(dir, filename);
    writeFileSync(file, bytes);
    return insertDocument(t.db, {
      filename,
      sourcePath: file,
      contentHash: sha256(bytes),
      chunks: [
        { content: 'Einleitung: Die Ausbildung dauert drei Jahre.', page: 1 },
        { content: 'Abbildung 1: Prüfungsergebnisse nach Jahrgang', page: 2 },
      ],
      pageMetadata: { 1: { images: 0, tables: 0 }, 2: { images: 1, tables: 0 } },
    });
  }

  it('renders the pages with images or tables to PNG, has them described, and stores the description on the page', async () => {
    const doc = await chartDocument('bericht.pdf');
    const providers = testProviders(t.db, { ollamaHosts: [ollama.url] });
    const run = await runStep(visionAnalyze, t.db, doc.ref, providers);
    expect(run.outcome).to.equal(undefined);
    expect(run.counts).to.include({ itemsIn: 1, itemsOut: 1, llmCalls: 1 });

    const sent = ollama.state.bodies[0];
    expect(sent.model).to.equal('llama3.2-vision:11b');
    const image = Buffer.from(sent.messages.at(-1).images[0], 'base64');
    expect([...image.subarray(1, 4)].map((c) => String.fromCharCode(c)).join('')).to.equal('PNG');

    const pages = await t.db.query<{ page_number: number; metadata: string }>(
      'SELECT page_number, metadata FROM document_pages WHERE document_id = ? ORDER BY page_number',
      [doc.ref.id],
    );
    const page1 = parseJsonColumn<Record<string, any>>(pages[0]!.metadata, {});
    const page2 = parseJsonColumn<Record<string, any>>(pages[1]!.metadata, {});
    expect(page1.vision).to.equal(undefined);
    expect(page2.images).to.equal(1);
    expect(page2.vision).to.include({ provider: 'ollama', model: 'llama3.2-vision:11b' });
    expect(page2.vision.description).to.contain('1 Abbildung');

    // rerun: from the cache, same result
    const again = await runStep(visionAnalyze, t.db, doc.ref, providers);
    expect(again.counts.llmCalls).to.equal(0);
    expect(ollama.state.counters.answered).to.equal(1);
  });

  it('counts the tokens of a page whose description stayed invalid', async () => {
    const doc = await chartDocument('ungueltig.pdf');
    ollama.state.faults.alwaysInvalid = true;
    const run = await runStep(
      visionAnalyze,
      t.db,
      doc.ref,
      testProviders(t.db, { ollamaHosts: [ollama.url] }),
      {
        max_failed_items: 1,
      },
    );
    expect(run.outcome).to.equal(undefined);
    expect(ollama.state.counters.answered).to.equal(2); // the answer and its repair
    expect(run.counts).to.include({ llmCalls: 1, tokensIn: ollama.state.counters.tokensIn });
  });

  it('ends skipped with the reason when no page holds images or tables', async () => {
    const doc = await insertDocument(t.db, { filename: 'a.md', chunks: [{ content: 'Nur Text.' }] });
    const run = await runStep(
      visionAnalyze,
      t.db,
      doc.ref,
      testProviders(t.db, { ollamaHosts: [ollama.url] }),
    );
    expect(run.outcome).to.deep.equal({ status: 'skipped', reason: 'no page holds images or tables' });
    expect(ollama.state.counters.requests).to.equal(0);
  });
});
