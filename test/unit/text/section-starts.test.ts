import { expect } from 'chai';
import { sectionStart, sectionStartPath } from '../../../src/text/section-starts.js';

describe('section starts inside a chunk', () => {
  const before = ['Buch 2', 'Abschnitt 8', '§ 591 Wirtschaftserschwernis'];

  it('stores a path that continues the one before it by heading and depth, and rebuilds it', () => {
    const path = ['Buch 2', 'Abschnitt 8', '§ 591a Wegnahme von Einrichtungen'];
    const entry = sectionStart(780, 3, path, before);
    expect(entry).to.deep.equal({
      offset: 780,
      heading: '§ 591a Wegnahme von Einrichtungen',
      depth: 3,
      page: 3,
    });
    expect(sectionStartPath(entry, before)).to.deep.equal(path);
    // a section one level up, and one at the top
    expect(sectionStartPath(sectionStart(1, 1, ['Buch 2', 'Abschnitt 9'], before), before)).to.deep.equal([
      'Buch 2',
      'Abschnitt 9',
    ]);
    expect(sectionStartPath(sectionStart(1, 1, ['Anlage'], before), before)).to.deep.equal(['Anlage']);
  });

  it('stores a path whole when the path before it does not lead to it, or it has none', () => {
    const odd = ['Buch 3', 'Abschnitt 1', '§ 854'];
    expect(sectionStart(5, 1, odd, before)).to.deep.equal({ offset: 5, headingPath: odd, page: 1 });
    expect(sectionStart(5, 1, [], before)).to.deep.equal({ offset: 5, headingPath: [], page: 1 });
    expect(sectionStartPath({ offset: 5, headingPath: odd, page: 1 }, before)).to.deep.equal(odd);
  });

  it('reads no path from an entry that names none or cannot be rebuilt', () => {
    for (const entry of [
      null,
      'x',
      { offset: 1 },
      { heading: 'x', depth: 'drei' },
      { heading: 'x', depth: 0 },
      { heading: 'x', depth: 5 },
      { heading: 7, depth: 1 },
    ])
      expect(sectionStartPath(entry, before), JSON.stringify(entry)).to.equal(undefined);
  });
});
