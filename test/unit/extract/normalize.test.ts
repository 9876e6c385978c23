import { expect } from 'chai';
import { embedLocalHash } from '../../../src/embed/local-hash.js';
import { queryEmbedText } from '../../../src/embed/prepare.js';
import { DocumentBuilder } from '../../../src/extract/document-builder.js';
import { normalizeText, normalizeTitle } from '../../../src/extract/normalize.js';

/** words as typesetting marks them inside (a ligature blocked, a join), and as a search for them is typed */
const MARKED_WORDS: ReadonlyArray<readonly [string, string]> = [
  ['Auf\u200Clage', 'Auflage'],
  ['Schiff\u200Cfahrt', 'Schifffahrt'],
  ['Haftpflicht\u200Dversicherung', 'Haftpflichtversicherung'],
  ['Haftpflicht\u2060versicherung', 'Haftpflichtversicherung'],
  ['Ku\u0308ndigungs\u200C\u2060\u200Dschutz', 'Kündigungsschutz'],
];

/** emoji one character each through a zero-width joiner: family, rainbow flag, skin tone, gender, "heart on fire" */
const EMOJI_SEQUENCES = [
  '👨\u200D👩\u200D👧',
  '🏳\uFE0F\u200D🌈',
  '👩🏽\u200D💻',
  '🏃\u200D♂\uFE0F',
  '❤\uFE0F\u200D🔥',
];

describe('extract/normalize invisible characters inside words', () => {
  it('removes a zero-width non-joiner, a word joiner and a zero-width joiner between letters', () => {
    for (const [marked, plain] of MARKED_WORDS) {
      expect(normalizeText(marked), JSON.stringify(marked)).to.equal(plain);
      expect(normalizeText(`Die ${marked} gilt.\n`), JSON.stringify(marked)).to.equal(`Die ${plain} gilt.\n`);
      expect(normalizeTitle(`Merkblatt ${marked}`), JSON.stringify(marked)).to.equal(`Merkblatt ${plain}`);
    }
  });

  it('keeps the zero-width joiner that joins emoji, so their text does not change', () => {
    for (const emoji of EMOJI_SEQUENCES) {
      expect(normalizeText(emoji), JSON.stringify(emoji)).to.equal(emoji);
      expect(normalizeText(`Familie ${emoji} und Auf\u200Clage`), JSON.stringify(emoji)).to.equal(
        `Familie ${emoji} und Auflage`,
      );
    }
    // one that joins an emoji to a letter, or stands alone, joins nothing
    expect(normalizeText('a\u200D👩 👩\u200Da \u200D 👩\u200D\u200D👧')).to.equal('a👩 👩a  👩👧');
  });

  it('stores the blocks without them, offsets and title matching the text', () => {
    const builder = new DocumentBuilder('txt');
    builder.add('paragraph', 'Die Auf\u200Clage ist vergriffen.');
    builder.add('paragraph', 'Haftpflicht\u200Dversicherung für 👨\u200D👩\u200D👧');
    const doc = builder.build({ title: 'Schiff\u2060fahrt' });
    expect(doc.text).to.equal(
      'Die Auflage ist vergriffen.\n\nHaftpflichtversicherung für 👨\u200D👩\u200D👧',
    );
    expect(doc.blocks.map((b) => doc.text.slice(b.start, b.end))).to.deep.equal([
      'Die Auflage ist vergriffen.',
      'Haftpflichtversicherung für 👨\u200D👩\u200D👧',
    ]);
    expect(doc.metadata.title).to.equal('Schifffahrt');
  });

  it('embeds a query with them as the plain word, and a chunk cut from the text as the plain spelling', () => {
    for (const [marked, plain] of MARKED_WORDS) {
      expect(queryEmbedText(marked, { kind: 'local' }, 800), JSON.stringify(marked)).to.equal(plain);
      const builder = new DocumentBuilder('txt');
      builder.add('paragraph', `Die ${marked} gilt.`);
      expect(Array.from(embedLocalHash(builder.build().text)), JSON.stringify(marked)).to.deep.equal(
        Array.from(embedLocalHash(`Die ${plain} gilt.`)),
      );
    }
  });
});
