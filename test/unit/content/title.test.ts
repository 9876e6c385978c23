import { expect } from 'chai';
import { chooseTitle } from '../../../src/content/title.js';

describe('document titles', () => {
  const empty = { text: 'nur Text', blocks: [], metadata: {} };

  it('takes the metadata title, then the first heading, then the file name without its extension', () => {
    const heading = {
      text: 'Einleitung\nText',
      blocks: [{ type: 'heading' as const, start: 0, end: 10, level: 1, page: 1 }],
      metadata: {},
    };
    expect(chooseTitle({ ...heading, metadata: { title: ' Handbuch ' } }, 'a.md')).to.equal('Handbuch');
    expect(chooseTitle(heading, 'a.md')).to.equal('Einleitung');
    expect(chooseTitle(empty, 'Übersicht 2026.txt')).to.equal('Übersicht 2026');
  });

  it('normalises a metadata title as the text is, and takes a number from front matter as its digits', () => {
    const meta = (metadata: Record<string, unknown>) => chooseTitle({ ...empty, metadata }, 'datei.md');
    expect(meta({ title: 'Kündigungs\u00ADschutz\u200Bgesetz\n im Betrieb' })).to.equal(
      'Kündigungsschutzgesetz im Betrieb',
    );
    expect(meta({ title: '\u00AD', frontMatter: { title: 'Handbuch' } })).to.equal('Handbuch');
    expect(meta({ frontMatter: { title: 1984 } })).to.equal('1984');
    expect(meta({ frontMatter: { title: true } })).to.equal('datei');
    expect(meta({ frontMatter: { title: Number.NaN } })).to.equal('datei');
  });

  it('composes a title from a decomposed (macOS, NFD) file name, as every other title is', () => {
    const title = chooseTitle(empty, 'Übungen für Prüfer.txt'.normalize('NFD'));
    expect(title).to.equal('Übungen für Prüfer'.normalize('NFC'));
    expect(title).to.not.equal('Übungen für Prüfer'.normalize('NFD'));
  });
});
