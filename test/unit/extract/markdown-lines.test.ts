import { expect } from 'chai';
import { extractMarkdown } from '../../../src/extract/markdown.js';
import {
  atxHeading,
  isColumnDashes,
  isDashRow,
  isTableDelimiter,
  isThematicBreak,
  withoutPandocAttributes,
} from '../../../src/extract/markdown-lines.js';
import { normalizeText } from '../../../src/extract/normalize.js';

/** Random strings over an alphabet, from a seeded generator (the same strings on every run). */
function randomStrings(alphabet: string[], maxLength: number, count: number, seed = 11): string[] {
  let state = seed;
  const random = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  return Array.from({ length: count }, () => {
    let s = '';
    const length = Math.floor(random() * (maxLength + 1));
    for (let i = 0; i < length; i++) s += alphabet[Math.floor(random() * alphabet.length)];
    return s;
  });
}

// the expressions the loops replace: each took quadratic time on a long run of spaces or tabs
const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const TABLE_DELIMITER = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
const PANDOC_ATTRIBUTES = /[ \t]*\{[#.][^}]*\}$/;
// these repeated a group, and threw on a line of a few million repetitions
const THEMATIC_BREAK = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const DASH_ROW = /^ {0,3}-{3,}(?:[ \t]+-{2,})*[ \t]*$/;
const COLUMN_DASHES = /^ {0,3}-{2,}(?:[ \t]+-{2,})+[ \t]*$/;

describe('extract/markdown-lines', () => {
  it('atxHeading gives what the ATX expression gave, on 100,000 random lines', () => {
    const tails = randomStrings([' ', '\t', '#', 'a', 'x', '{', '}', '.', '\\'], 14, 100_000);
    const heads = randomStrings([' ', '#'], 9, 100_000, 5);
    for (let i = 0; i < tails.length; i++) {
      const line = heads[i]! + tails[i]!;
      const match = ATX.exec(line);
      const want = match ? { level: match[1]!.length, text: match[2] ?? '' } : undefined;
      expect(atxHeading(line), JSON.stringify(line)).to.deep.equal(want);
    }
    expect(atxHeading('## Ziele ##')).to.deep.equal({ level: 2, text: 'Ziele' });
    expect(atxHeading('####### sieben')).to.equal(undefined);
  });

  it('isTableDelimiter decides as the delimiter expression did, on 100,000 random lines', () => {
    for (const line of randomStrings([' ', '\t', '|', '-', ':', 'a'], 12, 100_000)) {
      expect(isTableDelimiter(line), JSON.stringify(line)).to.equal(TABLE_DELIMITER.test(line));
    }
    expect(isTableDelimiter('| --- |:---:| ---: |')).to.equal(true);
    expect(isTableDelimiter('    | --- |')).to.equal(false); // four spaces: code, not a table
  });

  it('withoutPandocAttributes removes what the attribute expression removed, on 100,000 random texts', () => {
    for (const text of randomStrings([' ', '\t', '{', '}', '#', '.', 'a'], 12, 100_000)) {
      expect(withoutPandocAttributes(text), JSON.stringify(text)).to.equal(
        text.replace(PANDOC_ATTRIBUTES, ''),
      );
    }
    expect(withoutPandocAttributes('Einleitung {#sec-intro .unnumbered}')).to.equal('Einleitung');
  });

  it('isThematicBreak, isDashRow and isColumnDashes decide as their expressions did, on 100,000 random lines', () => {
    const differ = randomStrings([' ', '\t', '-', '-', '-', '*', '_', 'x'], 14, 100_000).filter(
      (line) =>
        isThematicBreak(line) !== THEMATIC_BREAK.test(line) ||
        isDashRow(line) !== DASH_ROW.test(line) ||
        isColumnDashes(line) !== COLUMN_DASHES.test(line),
    );
    expect(differ).to.deep.equal([]);
    const yes = [isThematicBreak(' * * *'), isDashRow('  ----- ---'), isColumnDashes('-- --')];
    expect(yes).to.deep.equal([true, true, true]);
    const no = [isThematicBreak('    ---'), isDashRow('-- --'), isColumnDashes('-----')];
    expect(no).to.deep.equal([false, false, false]);
  });

  it('reads lines of millions of marks, on which the expressions threw "Maximum call stack size exceeded"', () => {
    // each threw from about 2.1 million repetitions of its group
    expect(isThematicBreak('-'.repeat(2_500_000))).to.equal(true);
    expect(isThematicBreak(`${'* '.repeat(2_500_000)}x`)).to.equal(false);
    expect(isDashRow(`---${' --'.repeat(2_500_000)}`)).to.equal(true);
    expect(isColumnDashes('-- '.repeat(2_500_000))).to.equal(true);
    expect(isColumnDashes(`${'-- '.repeat(2_500_000)}x`)).to.equal(false);
  });

  it('normalizeText removes trailing spaces and tabs per line as /[ \\t]+$/gm did', () => {
    for (const text of randomStrings([' ', '\t', '\n', 'a', '\r', 'ä'], 14, 100_000)) {
      expect(normalizeText(text), JSON.stringify(text)).to.equal(
        text
          .replace(/\r\n?/g, '\n')
          .normalize('NFC')
          .replace(/[ \t]+$/gm, ''),
      );
    }
  });

  it('reads lines with runs of 100,000 spaces and tabs (the expressions took ~40 s on each such line)', async () => {
    const run = ' \t'.repeat(50_000);
    const markdown = [
      `# Titel${run}mit Lücke`,
      '',
      `## Zweiter${run}#x`,
      '',
      `### Attribute {#${'{#'.repeat(50_000)}`,
      '',
      `Absatz${run}Ende${run}`,
      `|${'-'.repeat(50_000)}${run}x`,
      '',
      '```',
      `code${run}`,
      '```',
    ].join('\n');
    const doc = await extractMarkdown(new TextEncoder().encode(markdown), 'lang.md');
    const blocks = doc.blocks.map((b) => [b.type, doc.text.slice(b.start, b.end).length]);
    expect(blocks).to.deep.equal([
      ['heading', `Titel${run}mit Lücke`.length],
      ['heading', `Zweiter${run}#x`.length],
      ['heading', `Attribute {#${'{#'.repeat(50_000)}`.length],
      ['paragraph', `Absatz${run}Ende\n|${'-'.repeat(50_000)}${run}x`.length],
      ['code', '```\ncode\n```'.length],
    ]);
  });
});
