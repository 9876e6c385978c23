import { expect } from 'chai';
import { formatSourceBlock } from '../../../src/retrieval/context.js';

describe('retrieval/context formatSourceBlock', () => {
  it('gives a source block a one-line header, whatever title was stored before titles were normalised', () => {
    expect(formatSourceBlock(1, { document_title: 'Handbuch', content: 'Text.' })).to.equal(
      '[Quelle 1: Handbuch]\nText.',
    );
    // a title from a file name stored by an earlier version: a line break and an escape sequence in it
    expect(
      formatSourceBlock(2, { document_title: 'zeile\nzwei \u001b[31mrot\u00ADes', content: 'Inhalt.' }),
    ).to.equal('[Quelle 2: zeile zwei [31mrotes]\nInhalt.');
  });
});
