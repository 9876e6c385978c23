import { expect } from 'chai';
import { assembleContext } from '../../../src/retrieval/context.js';
import { compareHits, type SearchHit } from '../../../src/retrieval/search.js';

const hit = (score: number, source_path: string, chunk_index: number, document_id: number): SearchHit => ({
  score,
  document_id,
  document_title: source_path,
  source_path,
  heading_path: [],
  page: null,
  chunk_index,
  chunk_id: document_id * 100 + chunk_index,
  content: `${source_path} ${chunk_index}`,
  section_offset: 0,
});

describe('retrieval hit order', () => {
  // equal scores as two backends return them: document ids and the order differ, source paths do not
  const hits = [
    hit(0.5, '/src/b.md', 0, 1),
    hit(0.5, '/src/a.md', 3, 2),
    hit(0.9, '/src/z.md', 0, 3),
    hit(0.5, '/src/a.md', 1, 4),
  ];
  const expected = ['/src/z.md 0', '/src/a.md 1', '/src/a.md 3', '/src/b.md 0'];

  it('orders by score, then source path, then chunk index, whatever order the hits came in', () => {
    for (const order of [hits, [...hits].reverse()]) {
      expect([...order].sort(compareHits).map((h) => h.content)).to.deep.equal(expected);
    }
  });

  it('cites equal scores in a context in that order', () => {
    for (const order of [hits, [...hits].reverse()]) {
      const context = assembleContext(order, 1000);
      expect(context.sources.map((s) => `${s.path} ${s.chunk_index}`)).to.deep.equal(expected);
    }
  });
});
