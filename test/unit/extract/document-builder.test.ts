import { expect } from 'chai';
import { Document, Packer, Paragraph } from 'docx';
import PptxGenJSModule from 'pptxgenjs';
import { DocumentBuilder } from '../../../src/extract/document-builder.js';
import { extractDocx } from '../../../src/extract/docx.js';
import { extractPptx } from '../../../src/extract/pptx.js';
import { extractOptions } from './office-fixtures.js';

// pptxgenjs ships CJS-style typings for an ESM default export: under nodenext the types see a namespace
const PptxGenJS = PptxGenJSModule as unknown as typeof PptxGenJSModule.default;

/** a title as core properties or front matter may hold it: soft hyphens, a zero-width space, a line break */
const MARKED_TITLE = 'Kündigungs\u00ADschutz\u00ADgesetz\u200B\n  für Kleinbetriebe';
const TITLE = 'Kündigungsschutzgesetz für Kleinbetriebe';

describe('extract/DocumentBuilder', () => {
  it('normalises the title as the text is: NFC, no soft hyphen or invisible character, one line', () => {
    const build = (title: unknown) => {
      const builder = new DocumentBuilder('txt');
      builder.add('paragraph', 'Text');
      return builder.build({ title, encoding: 'utf-8' }).metadata;
    };
    expect(build(MARKED_TITLE)).to.deep.equal({ title: TITLE, encoding: 'utf-8' });
    expect(build('Prüfung'.normalize('NFD')).title).to.equal('Prüfung'.normalize('NFC'));
    // nothing left once normalised: no title (the document's title is then found elsewhere)
    expect(build('\u00AD\u200B ')).to.deep.equal({ encoding: 'utf-8' });
  });

  it('normalises a title from DOCX and PPTX core properties', async () => {
    const docx = new Document({
      title: MARKED_TITLE,
      sections: [{ children: [new Paragraph('Der Text des Merkblatts.')] }],
    });
    const fromDocx = await extractDocx(new Uint8Array(await Packer.toBuffer(docx)), 'a.docx', extractOptions);
    expect(fromDocx.metadata.title).to.equal(TITLE);

    const pptx = new PptxGenJS();
    pptx.title = MARKED_TITLE;
    pptx.addSlide().addText('Der Text der Folie', { x: 0.5, y: 1, w: 8, h: 1 });
    const bytes = new Uint8Array((await pptx.write({ outputType: 'nodebuffer' })) as Buffer);
    const fromPptx = await extractPptx(bytes, 'a.pptx', extractOptions);
    expect(fromPptx.metadata.title).to.equal(TITLE);
  });
});
