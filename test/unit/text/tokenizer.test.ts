import { expect } from 'chai';
import { codeUnits } from '../../../src/text/chars.js';
import { splitSentences } from '../../../src/text/sentences.js';
import {
  countTokens,
  countTokensInRange,
  estimateTokensByChars,
  tokenizerName,
  tokenWeight,
  weightThirds,
} from '../../../src/text/tokenizer.js';

describe('tokenizer', () => {
  it('names itself', () => {
    expect(tokenizerName).to.equal('cpe-estimate-v1');
  });

  it('counts nothing for empty or blank text', () => {
    expect(countTokens('')).to.equal(0);
    expect(countTokens('   ')).to.equal(1); // an indentation run is a token, as in BPE vocabularies
    expect(countTokens(' ')).to.equal(0);
  });

  it('counts short words as one token each and long compounds as several', () => {
    expect(countTokens('der die das')).to.equal(3);
    const compound = countTokens('Berufsausbildungsverhältnis');
    expect(compound).to.be.greaterThan(5);
    expect(compound).to.be.lessThan(12);
  });

  it('groups digits in threes and counts punctuation', () => {
    expect(countTokens('123456')).to.equal(2);
    expect(countTokens('§ 5')).to.equal(2);
    expect(countTokens('(1)')).to.equal(3);
  });

  it('gives German prose about 3-4.5 characters per token', () => {
    const prose =
      'Die Auszubildende dokumentiert ihre Tätigkeiten im Ausbildungsnachweis. Der Betrieb prüft die Einträge ' +
      'regelmäßig und bespricht sie mit ihr. Bei Fragen wendet sie sich an die zuständige Stelle.';
    const ratio = prose.length / countTokens(prose);
    expect(ratio).to.be.within(3, 4.5);
  });

  it('is monotonic: appending text never lowers the count', () => {
    const text =
      'Nach § 14 Abs. 2 BBiG hat der Ausbildende die Auszubildenden zum Führen der Ausbildungsnachweise anzuhalten.';
    let previous = 0;
    for (let i = 1; i <= text.length; i++) {
      const n = countTokens(text.slice(0, i));
      expect(n, text.slice(0, i)).to.be.at.least(previous - 1);
      previous = Math.max(previous, n);
    }
    expect(countTokens(text + text)).to.be.at.least(2 * countTokens(text) - 1);
  });

  it('counts a range without slicing, and pieces split at white space add up to the whole', () => {
    const text = 'Erster Satz mit Wörtern. Zweiter Satz, länger als der erste!\n\nDritter Absatz 2024.';
    expect(countTokensInRange(text, 5, 40)).to.equal(countTokens(text.slice(5, 40)));
    const cut1 = text.indexOf(' Zweiter');
    const cut2 = text.indexOf('\n\n');
    const sum =
      tokenWeight(text, 0, cut1) + tokenWeight(text, cut1, cut2) + tokenWeight(text, cut2, text.length);
    expect(Math.round(sum)).to.equal(countTokens(text));
  });

  it('counts runs the same however the text is walked: code units, string, any range starting a run', () => {
    const text =
      'Nr. 1234567 vom 01.02.2024 ---- ==== „Zitat“!!!\n\n   Einrückung\tund\u00a0Leerzeichen… ' +
      'Donaudampfschifffahrtsgesellschaftskapitän 😀 und 12 kurze Wörter: a, bb, ccc, dddd, eeeee.\r\n';
    const codes = codeUnits(text);
    expect(weightThirds(codes, 0, codes.length)).to.equal(Math.round(tokenWeight(text, 0, text.length) * 3));
    // every range that starts where a character run starts weighs what its text weighs on its own
    for (let s = 0; s < text.length; s++) {
      if (s > 0 && !/\s/.test(text[s - 1] as string)) continue;
      for (let e = s; e <= text.length; e += 7) {
        expect(weightThirds(codes, s, e), `${s}-${e}`).to.equal(
          Math.round(tokenWeight(text.slice(s, e), 0, e - s) * 3),
        );
      }
    }
    // digit runs in threes, repeated symbols in fours, long words a third per letter beyond four
    expect(countTokens('1234567')).to.equal(3);
    expect(countTokens('--------')).to.equal(2);
    expect(countTokens('-.-.')).to.equal(4);
    expect(countTokens('Donaudampfschifffahrtsgesellschaftskapitän')).to.equal(14);
  });

  it('counts digit and symbol runs exactly wherever a step of four meets them', () => {
    // the rules of tokenizer.ts, one character at a time, for ASCII text: the fast walk takes four
    // characters a step and runs of digits or symbols one at a time, so runs of every length at every
    // offset must come out the same
    const reference = (text: string): number => {
      let thirds = 0;
      let i = 0;
      while (i < text.length) {
        const c = text[i] as string;
        const kind = /[A-Za-z]/.test(c)
          ? 'letter'
          : /\d/.test(c)
            ? 'digit'
            : /\s/.test(c)
              ? 'white'
              : 'symbol';
        let j = i + 1;
        const same = (d: string) =>
          kind === 'letter'
            ? /[A-Za-z]/.test(d)
            : kind === 'digit'
              ? /\d/.test(d)
              : kind === 'white'
                ? /\s/.test(d)
                : d === c;
        while (j < text.length && same(text[j] as string)) j++;
        const n = j - i;
        if (kind === 'letter') thirds += Math.max(3, n - 1);
        else if (kind === 'digit') thirds += 3 * Math.ceil(n / 3);
        else if (kind === 'symbol') thirds += 3 * (1 + Math.floor((n - 1) / 4));
        else if (c === '\n' || n > 1) thirds += 3;
        i = j;
      }
      return thirds;
    };
    const pieces = [
      '1',
      '22',
      '333',
      '4444',
      '55555',
      '1234567890123',
      '-',
      '--',
      '---',
      '-----',
      '.........',
    ];
    pieces.push(
      '(1)',
      '§§',
      '**',
      '1.',
      '2024,',
      ')(',
      '=-=-',
      'a',
      'abcd',
      'Wort',
      ' ',
      '  ',
      '\n',
      '\n\n',
      ' \n',
    );
    let text = '';
    for (let k = 0; k < 400; k++) text += pieces[(k * 7 + (k >> 3)) % pieces.length];
    const codes = codeUnits(text);
    for (let s = 0; s < 60; s++) {
      for (let e = s; e <= text.length; e += 13) {
        expect(weightThirds(codes, s, e), `${s}-${e}`).to.equal(reference(text.slice(s, e)));
      }
    }
  });

  it('keeps the original chars/4 rule as the fallback', () => {
    expect(estimateTokensByChars('a'.repeat(2000))).to.equal(500);
    expect(estimateTokensByChars('abc')).to.equal(1);
  });
});

describe('sentence weights', () => {
  it('are the same wherever a line break or blank line falls in a step of four', () => {
    // the walk takes four characters a step from each sentence start: words of every length move the
    // line breaks through all four places of a step
    for (let pad = 0; pad < 8; pad++) {
      const word = `Wort${'e'.repeat(pad)}`;
      const text = `${word} am Zeilenende\nund weiter\n \n${word}\n\n${word} (3)\t\nnoch\n\t\n${word}\n  eingerückt`;
      const spans = splitSentences(text);
      expect(spans.map((s) => text.slice(s.start, s.end))).to.deep.equal([
        `${word} am Zeilenende\nund weiter`,
        word,
        `${word} (3)\t\nnoch`,
        `${word}\n  eingerückt`,
      ]);
      for (const s of spans) expect(s.weight).to.be.closeTo(tokenWeight(text, s.start, s.end), 1e-9);
    }
  });

  it('give each sentence the token weight the tokenizer gives its text', () => {
    const text =
      'Nach § 14 Abs. 2 BBiG gilt das. Die Frist beträgt 1.000 Tage, d. h. knapp drei Jahre!\n\n„Wirklich?“ fragte sie… ' +
      'Ja.   Das   steht   im 3. Kapitel (S. 12).';
    const spans = splitSentences(text);
    expect(spans.length).to.be.greaterThan(3);
    for (const s of spans) expect(s.weight).to.be.closeTo(tokenWeight(text, s.start, s.end), 1e-9);
  });
});
