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

  it('composes a title from a decomposed (macOS, NFD) file name, as every other title is', () => {
    const title = chooseTitle(empty, 'Übungen für Prüfer.txt'.normalize('NFD'));
    expect(title).to.equal('Übungen für Prüfer'.normalize('NFC'));
    expect(title).to.not.equal('Übungen für Prüfer'.normalize('NFD'));
  });
});
