import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { extractMarkdown } from '../../../src/extract/markdown.js';
import { defaultExtractOptions } from '../../../src/extract/types.js';
import { chunkDocument, defaultChunkConfig, tinyChunkChars } from '../../../src/text/chunk.js';
import {
  type ChunkQuality,
  chunkQuality,
  locateChunks,
  mergeChunkQuality,
} from '../../../src/text/quality.js';
import { buildSections } from '../../../src/text/structure.js';
import { markdownDocument } from './markdown-doc.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const corpusMd = path.resolve(projectRoot, '../shared/corpus/md');

describe('chunkQuality', () => {
  const doc = markdownDocument(
    ['## Eins', 'Ein Satz steht hier. Noch ein Satz.', '## Zwei', 'Text im zweiten Teil.'].join('\n\n'),
  );
  const text = doc.text;

  it('flags mid-word cuts, a dangling heading, tiny chunks and chunks over the cap', () => {
    const cut = text.indexOf('Satz') + 2; // inside "Satz"
    const headingEnd = text.indexOf('Zwei') + 'Zwei'.length;
    const q = chunkQuality(
      text,
      [
        { start: 0, end: cut },
        { start: cut, end: headingEnd },
        { start: headingEnd + 2, end: text.length },
      ],
      { maxChars: 20, tinyChars: 25, blocks: doc.blocks },
    );
    expect(q.midWordEnd).to.be.closeTo(1 / 3, 1e-9);
    expect(q.midWordStart).to.be.closeTo(1 / 3, 1e-9);
    expect(q.headingAtEnd).to.be.closeTo(1 / 3, 1e-9);
    expect(q.tiny).to.be.closeTo(2 / 3, 1e-9);
    expect(q.overCap).to.equal(1);
    expect(q.endsAtSentenceOrParagraph).to.be.closeTo(2 / 3, 1e-9);
  });

  it('measures overlap and checks heading paths against the sections', () => {
    const sections = buildSections(doc);
    const second = text.indexOf('Noch');
    const q = chunkQuality(
      text,
      [
        { start: 0, end: text.indexOf('Zwei') - 2, headingPath: ['Eins'] },
        { start: second, end: text.length, headingPath: ['Zwei'] },
      ],
      { maxChars: 2000, tinyChars: 0, sections, blocks: doc.blocks },
    );
    expect(q.overlapAll).to.be.greaterThan(0);
    expect(q.headingPathCorrect).to.equal(0.5); // the second chunk starts in "Eins" but claims "Zwei"
  });

  it('locates chunks of other splitters, also when they changed white space', () => {
    const located = locateChunks(text, ['Ein Satz steht hier.', 'Noch   ein\nSatz.', 'nicht im Text']);
    expect(located[0]).to.deep.equal({ start: text.indexOf('Ein Satz'), end: text.indexOf('Ein Satz') + 20 });
    expect(located[1]?.start).to.equal(text.indexOf('Noch'));
    expect(located[2]).to.equal(null);
  });
});

describe('chunk quality on the German corpus', function () {
  this.timeout(120000);

  it('meets the quality figures on every Markdown file of the corpus', async function () {
    if (!existsSync(corpusMd)) this.skip();
    const config = defaultChunkConfig;
    const parts: ChunkQuality[] = [];
    for (const file of readdirSync(corpusMd).filter((f) => f.endsWith('.md'))) {
      let doc: Awaited<ReturnType<typeof extractMarkdown>>;
      try {
        doc = await extractMarkdown(readFileSync(path.join(corpusMd, file)), file, defaultExtractOptions);
      } catch {
        continue; // files the extractor refuses are its own tests' business
      }
      const sections = buildSections(doc);
      const chunks = chunkDocument(doc, { config, sections });
      for (const c of chunks) expect(c.content, file).to.equal(doc.text.slice(c.start, c.end));
      parts.push(
        chunkQuality(doc.text, chunks, {
          maxChars: config.maxChars,
          tinyChars: tinyChunkChars(config),
          blocks: doc.blocks,
          sections,
        }),
      );
    }
    const q = mergeChunkQuality(parts);
    expect(q.chunks).to.be.greaterThan(1000);
    expect(q.midWordStart).to.equal(0);
    expect(q.midWordEnd).to.equal(0);
    expect(q.endsAtSentenceOrParagraph).to.be.at.least(0.98);
    expect(q.headingAtEnd).to.be.at.most(0.01);
    expect(q.tiny).to.be.at.most(0.05);
    expect(q.overCap).to.equal(0);
    expect(q.overlapContinued).to.be.within(0.05, 0.15);
    expect(q.headingPathCorrect).to.equal(1);
    expect(q.offsetsExact).to.equal(1);
  });
});
