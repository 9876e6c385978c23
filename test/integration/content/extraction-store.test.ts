import { expect } from 'chai';
import { loadExtraction, saveExtraction } from '../../../src/content/extraction.js';
import type { ExtractedDocument } from '../../../src/extract/types.js';
import { backends, insertDocument, openTestDatabases, type TestDatabases } from '../vectors/helpers.js';

/** Three pages as DocumentBuilder lays them out: blocks joined by a blank line, an empty page in between. */
function threePages(): ExtractedDocument {
  const text = 'Kapitel 1\n\nErster Absatz.\n\nKapitel 2\n\nZweiter Absatz über Brandschutz.';
  const at = (s: string) => text.indexOf(s);
  return {
    format: 'pdf',
    text,
    blocks: [
      { type: 'heading', start: 0, end: 9, page: 1, level: 1 },
      { type: 'paragraph', start: at('Erster'), end: at('Erster') + 14, page: 1 },
      { type: 'heading', start: at('Kapitel 2'), end: at('Kapitel 2') + 9, page: 3, level: 1 },
      { type: 'paragraph', start: at('Zweiter'), end: text.length, page: 3 },
    ],
    pages: [
      { number: 1, start: 0, end: at('Erster') + 14, metadata: {} },
      { number: 2, start: at('Erster') + 14, end: at('Erster') + 14, metadata: { images: 1 } },
      { number: 3, start: at('Kapitel 2'), end: text.length, metadata: {} },
    ],
    metadata: { title: 'Handbuch' },
    ocrNeeded: false,
    warnings: [],
  };
}

for (const backend of backends()) {
  describe(`stored extractions (${backend})`, () => {
    let t: TestDatabases;
    let documentId: number;
    beforeEach(async () => {
      t = await openTestDatabases(backend);
      documentId = await insertDocument(t.db, { sourcePath: '/src/handbuch.pdf' });
    });
    afterEach(async () => {
      await t.cleanup();
    });

    const stored = async () =>
      (
        await t.db.query<{ text: string; text_in_pages: number }>(
          'SELECT text, text_in_pages FROM document_extracts WHERE document_id = ?',
          [documentId],
        )
      ).map((r) => ({ text: r.text, textInPages: Number(r.text_in_pages) }));

    it('keeps the text once, in the pages, when it writes the pages too, and loads it back exactly', async () => {
      const doc = threePages();
      await saveExtraction(t.db, documentId, doc, { withPages: true });
      expect(await stored()).to.deep.equal([{ text: '', textInPages: 1 }]);
      const pages = await t.db.query<{ page_number: number; content: string }>(
        'SELECT page_number, content FROM document_pages WHERE document_id = ? ORDER BY page_number',
        [documentId],
      );
      expect(pages.map((p) => p.content)).to.deep.equal([
        'Kapitel 1\n\nErster Absatz.',
        '',
        'Kapitel 2\n\nZweiter Absatz über Brandschutz.',
      ]);
      const loaded = await loadExtraction(t.db, documentId);
      expect(loaded).to.deep.include({ text: doc.text, blocks: doc.blocks, pages: doc.pages, format: 'pdf' });
    });

    it('stores the text itself without pages, or when the pages do not reproduce it', async () => {
      const doc = threePages();
      await saveExtraction(t.db, documentId, doc);
      expect(await stored()).to.deep.equal([{ text: doc.text, textInPages: 0 }]);

      // a separator the pages do not account for (not DocumentBuilder's blank line)
      const odd = { ...doc, text: doc.text.replace('Absatz.\n\nKapitel', 'Absatz.\n\n\nKapitel') };
      odd.pages = [
        doc.pages[0]!,
        doc.pages[1]!,
        { ...doc.pages[2]!, start: doc.pages[2]!.start + 1, end: odd.text.length },
      ];
      await saveExtraction(t.db, documentId, odd, { withPages: true });
      expect(await stored()).to.deep.equal([{ text: odd.text, textInPages: 0 }]);
      expect((await loadExtraction(t.db, documentId))?.text).to.equal(odd.text);
    });

    it('gives no extraction when the pages were changed by hand, so the archived file is extracted again', async () => {
      await saveExtraction(t.db, documentId, threePages(), { withPages: true });
      await t.db.run(
        "UPDATE document_pages SET content = 'anders' WHERE document_id = ? AND page_number = 3",
        [documentId],
      );
      expect(await loadExtraction(t.db, documentId)).to.equal(undefined);
    });
  });
}
