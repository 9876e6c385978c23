import { expect } from 'chai';
import { chooseTitle } from '../../../src/content/title.js';

describe('a title from the file name', () => {
  const untitled = { text: 'nur Text', blocks: [], metadata: {} };

  it('is normalised as other titles are: no control characters, on one line', () => {
    expect(chooseTitle(untitled, 'rot\x1b[31mROT\x1b[0m.txt')).to.equal('rot[31mROT[0m');
    expect(chooseTitle(untitled, 'zeile\nzwei.txt')).to.equal('zeile zwei');
    expect(chooseTitle(untitled, ' Tab\tund\u00ADTrenn  .md')).to.equal('Tab undTrenn');
  });

  it('keeps the extension when the name is nothing else', () => {
    expect(chooseTitle(untitled, '\x01\x02.txt')).to.equal('.txt');
  });
});
