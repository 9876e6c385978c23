/**
 * The real DOCX/PPTX files of the shared corpus: every odd file ends in a correct result or the expected
 * typed error naming the file. Skips when the corpus is not checked out next to the project.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { extractDocx } from '../../../src/extract/docx.js';
import { extractPptx } from '../../../src/extract/pptx.js';
import { validateFile } from '../../../src/extract/sniff.js';
import { defaultExtractOptions, type ExtractedDocument } from '../../../src/extract/types.js';
import { corpusRoot } from './office-fixtures.js';

const extract = (file: string): Promise<ExtractedDocument> => {
  const bytes = new Uint8Array(readFileSync(file));
  return file.endsWith('.docx')
    ? extractDocx(bytes, file, defaultExtractOptions)
    : extractPptx(bytes, file, defaultExtractOptions);
};

const texts = (doc: ExtractedDocument, type: string) =>
  doc.blocks.filter((b) => b.type === type).map((b) => doc.text.slice(b.start, b.end));

interface BadCase {
  file: string;
  code: string;
  message: string;
  /** validate rejects it too (content sniffing); false when only extraction can tell */
  validateRejects: boolean;
}

const BAD: BadCase[] = [
  {
    file: 'bad/tika_testWORD_protected_passtika.docx',
    code: ErrorCodes.ENCRYPTED_DOCUMENT,
    message: 'encrypted Office document',
    validateRejects: true,
  },
  {
    file: 'bad/tika_testPPT_protected_passtika.pptx',
    code: ErrorCodes.ENCRYPTED_DOCUMENT,
    message: 'encrypted Office document',
    validateRejects: true,
  },
  {
    file: 'bad/tika_testWORD_truncated.docx',
    code: ErrorCodes.CORRUPT_FILE,
    message: 'truncated or corrupt ZIP',
    validateRejects: true,
  },
  {
    file: 'bad/poi_clusterfuzz_POIXSLFFuzzer-6254434927378432.pptx',
    code: ErrorCodes.CORRUPT_FILE,
    message: 'truncated or corrupt ZIP',
    validateRejects: true,
  },
  {
    file: 'bad/poi_clusterfuzz_POIXWPFFuzzer-5313273089884160.docx',
    code: ErrorCodes.CORRUPT_FILE,
    message: 'truncated or corrupt ZIP',
    validateRejects: true,
  },
  {
    file: 'bad/tika_testWORD_OLE2-doc-renamed.docx',
    code: ErrorCodes.LEGACY_FORMAT,
    message: 'legacy binary Word/PowerPoint format',
    validateRejects: true,
  },
  {
    file: 'bad/mammoth_empty-zip-renamed.docx',
    code: ErrorCodes.FORMAT_MISMATCH,
    message: 'not a Word document (word/document.xml missing)',
    validateRejects: true,
  },
  {
    file: 'bad/docspell_letter-en-pdf-renamed.pptx',
    code: ErrorCodes.FORMAT_MISMATCH,
    message: 'file is a PDF, not a PowerPoint document',
    validateRejects: true,
  },
];

/** Files that must extract: each check states what a reader of the result must see. */
const GOOD: Record<string, (doc: ExtractedDocument) => void> = {
  'bad/unstructured_fake-power-point-malformed.pptx': (doc) => {
    expect(texts(doc, 'heading')).to.deep.equal(['Test Slide']);
    expect(doc.text).to.contain('Problem Date Placeholder');
  },
  'bad/poi_ExternalEntityInText_XXE.docx': (doc) => {
    expect(doc.text).to.equal('Here should not be the POI web site: ""');
  },
  'bad/tika_test_recursive_embedded.docx': (doc) => {
    expect(doc.text).to.contain('embed_0');
    expect(doc.metadata.embeddedObjects).to.equal(1);
    expect(doc.warnings.join(' ')).to.contain('embedded object');
  },
  'docx/de_poi_stress008_CGJung-Forum.docx': (doc) => {
    expect(doc.text).to.contain('Ego-State-Therapie').and.contain('Psychotraumatologie');
    expect(
      doc.blocks.find((b) => doc.text.slice(b.start, b.end) === '2.1. Umgang mit dem Tod – früher und heute')
        ?.level,
    ).to.equal(2);
    expect(texts(doc, 'footnote').length).to.be.greaterThan(20);
    expect(doc.text.length).to.be.greaterThan(300_000);
  },
  'docx/de_qm-handbuch-template.docx': (doc) => {
    expect(texts(doc, 'heading')).to.include('Anwendungsbereich / Kontext der Organisation');
    expect(texts(doc, 'table')[0]).to.contain('Firma: | {{FIRMENNAME}}');
    expect(doc.pages.length).to.be.greaterThan(1);
  },
  'docx/de_barthusel_CSS-Spezifitaet.docx': (doc) => {
    expect(doc.text).to.contain('Welche Spezifitäten haben die folgenden Beispiele');
    expect(texts(doc, 'table').join('\n')).to.contain('div#head { color:orange; } | 101');
    expect((doc.metadata.headers as string[])[0]).to.contain('Einführung CSS');
  },
  'docx/de_onlyoffice_new-de-DE-blank.docx': (doc) => {
    expect(doc.text).to.equal('');
  },
  'docx/poi_heading123.docx': (doc) => {
    expect(
      doc.blocks.filter((b) => b.type === 'heading').map((b) => [doc.text.slice(b.start, b.end), b.level]),
    ).to.deep.equal([
      ['First paragraph', 1],
      ['Second paragraph', 2],
      ['Third paragraph', 3],
    ]);
  },
  'docx/mammoth_tables.docx': (doc) => {
    expect(texts(doc, 'table')).to.deep.equal(['Top left | Top right\nBottom left | Bottom right']);
  },
  'docx/mammoth_simple-list.docx': (doc) => {
    expect(texts(doc, 'list_item')).to.deep.equal(['Apple', 'Banana']);
  },
  'docx/tika_testWORD_numbered_list.docx': (doc) => {
    const multi = doc.blocks.find((b) => doc.text.slice(b.start, b.end) === 'i) A multi');
    expect(multi).to.include({ type: 'list_item', level: 2 });
    // the numbers Word shows, in their formats, restarts and continuations (mammoth drops them): the ones Apache
    // Tika's tests expect of this file (its "2. A ii 2" comes out "1. A ii 2" here)
    expect(texts(doc, 'list_item')).to.include.members([
      '1) This',
      'a) Is',
      'ii) Level',
      'iii) List',
      '2) foo',
      'ii) baz',
      'ii) foo',
      'II. bar',
      '6. six',
      '7. seven',
      'a. seven a',
      'e. seven e',
      '3. page break list 3',
    ]);
    expect(texts(doc, 'table')[0]).to.contain('1. Within cell 1').and.contain('b. Cell b');
    expect(texts(doc, 'table')[0]).to.contain('Intervening table');
    expect(doc.text).to.contain('Footnote list 2a');
  },
  'docx/mammoth_footnotes.docx': (doc) => {
    expect(texts(doc, 'footnote')).to.deep.equal(['[1] A tachyon walks into a bar.', '[2] Fin.']);
  },
  'docx/mammoth_comments.docx': (doc) => {
    // comments are review notes, not text
    expect(doc.text).to.equal('Ouch.');
  },
  'docx/mammoth_text-box.docx': (doc) => {
    expect(doc.text).to.contain('Datum plane');
  },
  'docx/mammoth_strict-format.docx': (doc) => {
    expect(doc.text).to.equal('Test');
  },
  'docx/mammoth_utf8-bom.docx': (doc) => {
    expect(doc.text).to.equal('This XML has a byte order mark.');
  },
  'docx/python-docx_hdr-header-footer.docx': (doc) => {
    expect(doc.metadata.headers).to.include('Header for section-1');
    expect(doc.metadata.footers).to.include('Footer for section 1');
    expect(doc.text).not.to.contain('Header for');
  },
  'docx/tika_testWORD_various.docx': (doc) => {
    expect(doc.text).to.contain('Here is a text box');
    expect(texts(doc, 'table')[0]).to.equal(
      'Row 1 Col 1 | Row 1 Col 2 | Row 1 Col 3\nRow 2 Col 1 | Row 2 Col 2 | Row 2 Col 3',
    );
    expect(texts(doc, 'footnote')).to.deep.equal(['[1] This is a footnote.']);
    expect(doc.metadata.headers).to.deep.equal(['This is the header text.']);
  },
  'docx/poi_delins_tracked-changes.docx': (doc) => {
    expect(doc.text).to.contain('March 2009: Apache Tika Release');
    expect(doc.text).not.to.contain('Maang Tika');
    expect(doc.text).not.to.contain('DragonLance');
  },
  'pptx/de_poi_Scheinecker-Workshop.pptx': (doc) => {
    expect(doc.pages).to.have.length(23);
    expect(doc.blocks[0]).to.include({ type: 'heading', level: 1, page: 1 });
    expect(texts(doc, 'heading')[0]).to.equal('Ideen erfolgreich umsetzen. Mit Strategie begeistern.');
    expect(doc.text).to.contain('Augendialog');
  },
  'pptx/de_onlyoffice_new-de-DE-blank.pptx': (doc) => {
    expect(doc.text).to.equal('');
  },
  'pptx/python-pptx_no-slides.pptx': (doc) => {
    expect(doc.text).to.equal('');
    expect(doc.pages).to.have.length(0);
  },
  'pptx/python-pptx_prs-notes.pptx': (doc) => {
    expect(texts(doc, 'notes')).to.deep.equal(['Notes']);
    expect(doc.pages[0]!.metadata.hasNotes).to.equal(true);
  },
  'pptx/python-pptx_tbl-cell.pptx': (doc) => {
    expect(texts(doc, 'table')).to.include('a | b | c\nd | e | f\ng | h | i');
  },
  'pptx/tika_testPPT_groups.pptx': (doc) => {
    for (const text of ['MyTitle', 'Text box1', 'Text box5', 'smart1', 'WordArt2', 'Ungrouped text box']) {
      expect(doc.text).to.contain(text);
    }
  },
  'pptx/unstructured_group-shapes-nested.pptx': (doc) => {
    expect(doc.text.split('\n\n').sort()).to.deep.equal(['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J']);
  },
  'pptx/python-pptx_cht-charts.pptx': (doc) => {
    expect(texts(doc, 'caption')[0]).to.contain('Category 1').and.contain('Series 1');
  },
  'pptx/tika_testPPT_various.pptx': (doc) => {
    expect(texts(doc, 'table')[0]).to.equal(
      'Row 1 Col 1 | Row 1 Col 2 | Row 1 Col 3\nRow 2 Col 1 | Row 2 Col 2 | Row 2 Col 3',
    );
    expect(texts(doc, 'list_item')).to.include('Bullet 1');
  },
  'pptx/tika_testPPT_masterFooter.pptx': (doc) => {
    expect(doc.text).to.contain('Master footer is here');
  },
  'pptx/tika_testPPT_diagramData.pptx': (doc) => {
    expect(doc.text).to.contain('President').and.contain('VP – HR');
  },
  'pptx/tika_testPPT_comment.pptx': (doc) => {
    expect(texts(doc, 'heading')).to.deep.equal(['title']);
    expect(doc.text).not.to.contain('tps deck');
  },
};

describe('extract/corpus-office (shared corpus)', () => {
  before(function () {
    if (!existsSync(path.join(corpusRoot, 'MANIFEST.tsv'))) {
      console.log(`    corpus not found at ${corpusRoot}; skipping`);
      this.skip();
    }
  });

  for (const bad of BAD) {
    it(`${bad.file} -> ${bad.code}`, async () => {
      const file = path.join(corpusRoot, bad.file);
      try {
        await extract(file);
        expect.fail('expected an error');
      } catch (error) {
        expect(error).to.be.instanceOf(CpeError);
        expect((error as CpeError).code, (error as Error).message).to.equal(bad.code);
        expect((error as Error).message)
          .to.contain(file)
          .and.contain(bad.message);
      }
      if (bad.validateRejects) {
        const options = { maxFileBytes: 50 << 20, maxUnzippedBytes: 500 << 20, maxCompressionRatio: 200 };
        try {
          await validateFile(file, options);
          expect.fail('validate should reject it');
        } catch (error) {
          expect((error as CpeError).code).to.equal(bad.code);
        }
      }
    });
  }

  for (const [name, check] of Object.entries(GOOD)) {
    it(`${name} extracts`, async () => {
      const file = path.join(corpusRoot, name);
      const doc = await extract(file);
      check(doc);
      for (const block of doc.blocks) expect(doc.text.slice(block.start, block.end).trim()).not.to.equal('');
      const validated = await validateFile(file, {
        maxFileBytes: 50 << 20,
        maxUnzippedBytes: 500 << 20,
        maxCompressionRatio: 200,
      });
      expect(validated.format).to.equal(doc.format);
    });
  }

  it('covers every DOCX/PPTX file of the corpus', () => {
    const manifest = readFileSync(path.join(corpusRoot, 'MANIFEST.tsv'), 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.split('\t')[0]!)
      .filter((p) => /\.(docx|pptx)$/.test(p));
    const covered = new Set([...BAD.map((b) => b.file), ...Object.keys(GOOD)]);
    expect(manifest.filter((p) => !covered.has(p))).to.deep.equal([]);
  });
});
