/**
 * Markdown files up to 8 MB are extracted in cpe's own process, without the time and memory limits of the isolated
 * extractor: the reader must do bounded work per byte whatever the input. Each input here took the reader before
 * its fix minutes, or forever, or threw; the tests assert what it reads now, and mocha's timeout stands for the rest.
 */
import { expect } from 'chai';
import { extractMarkdown } from '../../../src/extract/markdown.js';
import type { ExtractedDocument } from '../../../src/extract/types.js';

const md = (text: string) => extractMarkdown(new TextEncoder().encode(text), 'doc.md');
const types = (doc: ExtractedDocument) => doc.blocks.map((b) => b.type);

/** YAML front matter of `levels` levels of `width` aliases each to the level below ("billion laughs"). */
function laughs(levels: number, width: number): string {
  const lines = ['---', `a0: &a0 ["${'lol'.repeat(22)}", "lol"]`];
  for (let i = 1; i <= levels; i++)
    lines.push(
      `a${i}: &a${i} [${Array(width)
        .fill(`*a${i - 1}`)
        .join(', ')}]`,
    );
  return `${lines.join('\n')}\n---\n\n# Lachen\n\nText.\n`;
}

describe('extract/markdown: bounded work on hostile input', () => {
  it('refuses YAML front matter whose aliases expand it far beyond its text, with a warning, in no time', async () => {
    // 8^5 leaves: JSON wrote 2.3 MB of metadata from 300 bytes; 8^12 (721 bytes, 96 aliases) hung the process
    for (const levels of [5, 12]) {
      const doc = await md(laughs(levels, 8));
      expect(doc.metadata.frontMatter, `${levels} levels`).to.equal(undefined);
      expect(doc.metadata.frontMatterRaw)
        .to.be.a('string')
        .that.matches(/^a0: &a0/);
      expect(doc.warnings).to.have.length(1);
      expect(doc.warnings[0]).to.match(
        /^front matter is too large with its aliases expanded \(more than \d+ values and characters\); kept as raw text in the metadata \(frontMatterRaw\)$/,
      );
      expect(doc.metadata.title).to.equal('Lachen');
      expect(doc.text).to.equal('Lachen\n\nText.');
    }
    // a cycle (js-yaml allows one) is refused the same way
    const cycle = await md('---\nliste: &l [*l, *l]\n---\nText.\n');
    expect(cycle.warnings[0]).to.match(/^front matter is too large with its aliases expanded/);
    // anchors used a few times are read as ever
    const shared = await md(
      '---\ntitle: Handbuch\nstandard: &s {sprache: de, stand: 2024}\nteil1: *s\nteil2: *s\n---\nText.\n',
    );
    expect(shared.warnings).to.deep.equal([]);
    expect(shared.metadata.frontMatter).to.deep.equal({
      title: 'Handbuch',
      standard: { sprache: 'de', stand: 2024 },
      teil1: { sprache: 'de', stand: 2024 },
      teil2: { sprache: 'de', stand: 2024 },
    });
  });

  it('reads 2 MB of "---" lines in one pass (a 500-line look-ahead from every one took 33 s)', async () => {
    const doc = await md('---\n'.repeat(500_000));
    expect(doc.blocks).to.deep.equal([]);
    // a table after such a stretch is still found
    const table = '---\n---\n---\nEins  Zwei\n---';
    const tail = await md(`${'---\n'.repeat(2_000)}Absatz\n\n${table}\n\nDanach.\n`);
    expect(tail.text).to.equal(`Absatz\n\n${table}\n\nDanach.`);
    expect(types(tail)).to.deep.equal(['paragraph', 'table', 'paragraph']);
  });

  it('continues a pandoc table look-ahead from a later dash row as a fresh one would read it', async () => {
    // from the first dash row the comment is text at the margin without columns: no table; from the second, the
    // rows after it have columns only, so the table starts there (the comment is dropped as always)
    const doc = await md('---\n<!-- Kommentar -->\n---\nEins  Zwei\n---\nDrei  Vier\n---\n\nDanach.\n');
    expect(doc.text).to.equal('---\nEins  Zwei\n---\nDrei  Vier\n---\n\nDanach.');
    expect(types(doc)).to.deep.equal(['table', 'paragraph']);
    // the closing row 501 lines below the third dash row is within its 500-line reach, not the first two's
    const rows = Array(498).fill('a  b').join('\n');
    const far = await md(`---\n---\n---\n${rows}\n---\n\nDanach.\n`);
    expect(far.text).to.equal(`---\n${rows}\n---\n\nDanach.`);
    expect(types(far)).to.deep.equal(['table', 'paragraph']);
  });

  it('reads 30,000 "===" lines under a long paragraph in one pass (each joined the paragraph again: ~1 min)', async () => {
    const first = 'x'.repeat(200);
    const doc = await md(`${first}\n${'===\n'.repeat(30_000)}`);
    expect(types(doc)).to.deep.equal(['paragraph']);
    expect(doc.text).to.equal(`${first}${'\n==='.repeat(30_000)}`);
    // what makes a heading still does; a sentence or a long line over an underline does not
    const short = await md('Kapitel\n===\n\nEin Satz.\n===\n');
    expect(short.blocks.map((b) => [b.type, short.text.slice(b.start, b.end)])).to.deep.equal([
      ['heading', 'Kapitel'],
      ['paragraph', 'Ein Satz.\n==='],
    ]);
  });

  it('refuses a TOML array nested 50,000 deep with a warning (each level was read again, then the stack overflowed)', async () => {
    const doc = await md(`+++\nt = ${'['.repeat(50_000)}${']'.repeat(50_000)}\n+++\nText.\n`);
    expect(doc.warnings).to.have.length(1);
    expect(doc.warnings[0]).to.match(
      /^front matter is not read as TOML \(TOML beyond simple pairs: t = \[\[\[/,
    );
    expect(doc.text).to.equal('Text.');
    const flat = await md('+++\ntags = ["a", 1, true]\nn = [[1]]\n+++\nText.\n');
    expect(flat.warnings[0]).to.match(
      /^front matter is not read as TOML \(TOML beyond simple pairs: n = \[\[1\]\]\)/,
    );
  });

  it('reads a line of millions of marks, on which a regular expression threw "Maximum call stack size exceeded"', async () => {
    // each expression kept a backtrack entry per repetition of a group and threw from about 2.1 million (dashes
    // of a thematic break) or 3.4 million (`>` marks of a quote whose word a soft hyphen breaks)
    const rule = await md(`Oben.\n\n${'-'.repeat(2_500_000)}\n\nUnten.\n`);
    expect(rule.text).to.equal('Oben.\n\nUnten.');
    const quote = await md(`> Kündigungs\u00AD\n${'> '.repeat(4_000_000)}schutz\n`);
    expect(quote.text).to.equal('> Kündigungsschutz');
  });

  it('reads a TOML number of millions of digit groups, on which its expression threw', async () => {
    const number = await md(`+++\nn = ${'1_'.repeat(4_000_000)}1\n+++\nText.\n`);
    expect(number.warnings).to.deep.equal([]);
    expect(number.metadata.frontMatter).to.deep.equal({ n: Number.POSITIVE_INFINITY });
    const numbers = await md('+++\na = 1_000\nb = -2.5_0\nc = 1__0\n+++\nText.\n');
    expect(numbers.warnings[0]).to.match(/TOML beyond simple pairs: c = 1__0\)/);
    const valid = await md('+++\na = 1_000\nb = -2.5_0\n+++\nText.\n');
    expect(valid.metadata.frontMatter).to.deep.equal({ a: 1000, b: -2.5 });
  });
});
