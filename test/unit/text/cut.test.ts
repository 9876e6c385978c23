import { expect } from 'chai';
import { cutText } from '../../../src/text/cut.js';

describe('cutText', () => {
  it('cuts at the limit, one unit earlier where the cut would split a surrogate pair', () => {
    expect(cutText('Übung', 10)).to.equal('Übung');
    expect(cutText('Übung', 3)).to.equal('Übu');
    const name = `${'Ä'.repeat(189)}😀x`;
    expect(cutText(name, 190)).to.equal('Ä'.repeat(189));
    expect(cutText(name, 191)).to.equal(`${'Ä'.repeat(189)}😀`);
    expect(Buffer.from(cutText(name, 190), 'utf8').toString('utf8')).to.equal('Ä'.repeat(189));
  });
});
