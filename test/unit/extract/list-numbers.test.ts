import { expect } from 'chai';
import { autoNumberLabel } from '../../../src/extract/list-numbers.js';

describe('extract/list-numbers', () => {
  it('labels a number in each Latin scheme of a:buAutoNum, as PowerPoint shows it', () => {
    const labels = (type: string, numbers: number[]) => numbers.map((n) => autoNumberLabel(type, n));
    expect(labels('arabicPeriod', [1, 10])).to.deep.equal(['1.', '10.']);
    expect(labels('arabicParenR', [2])).to.deep.equal(['2)']);
    expect(labels('arabicParenBoth', [3])).to.deep.equal(['(3)']);
    expect(labels('arabicPlain', [4])).to.deep.equal(['4']);
    expect(labels('alphaLcPeriod', [1, 26, 27, 28])).to.deep.equal(['a.', 'z.', 'aa.', 'bb.']);
    expect(labels('alphaUcParenR', [3])).to.deep.equal(['C)']);
    expect(labels('alphaLcParenBoth', [2])).to.deep.equal(['(b)']);
    expect(labels('romanLcParenBoth', [4])).to.deep.equal(['(iv)']);
    expect(labels('romanUcPeriod', [9, 14, 1999])).to.deep.equal(['IX.', 'XIV.', 'MCMXCIX.']);
    expect(labels('romanLcParenR', [40])).to.deep.equal(['xl)']);
  });

  it('numbers schemes it does not draw, and types that are none, as arabicPeriod', () => {
    for (const type of [
      'circleNumDbPlain',
      'ea1JpnKorPeriod',
      'thaiAlphaParenR',
      'alphaLcPlain',
      '',
      'bogus',
    ])
      expect(autoNumberLabel(type, 2), type).to.equal('2.');
  });
});
