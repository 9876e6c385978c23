import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { entityPointId } from '../../../src/knowledge/entities.js';
import { assembleContext } from '../../../src/retrieval/context.js';
import { formatSearchHits, formatVerifyReport, snippet } from '../../../src/retrieval/format.js';
import type { SearchHit } from '../../../src/retrieval/search.js';
import type { VerifyReport } from '../../../src/retrieval/verify.js';
import { countTokens } from '../../../src/text/tokenizer.js';
import { chunkPointId } from '../../../src/vectors/point-id.js';

describe('chunkPointId', () => {
  it('is a UUID derived from sha256 of "document_id:chunk_index", stable and distinct', () => {
    const id = chunkPointId(12, 3);
    expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(chunkPointId(12, 3)).to.equal(id);
    const hex = createHash('sha256').update('12:3').digest('hex');
    expect(id.replace(/-/g, '').slice(0, 12)).to.equal(hex.slice(0, 12));
    expect(id.replace(/-/g, '').slice(20)).to.equal(hex.slice(20, 32));
    const all = new Set<string>();
    for (let d = 1; d <= 50; d++) for (let c = 0; c < 50; c++) all.add(chunkPointId(d, c));
    expect(all.size).to.equal(2500);
    expect(chunkPointId(1, 23)).to.not.equal(chunkPointId(12, 3));
  });

  it('keeps the ids that points already stored carry (chunks and entities)', () => {
    expect(chunkPointId(1, 0)).to.equal('a6685f3b-62d5-8bfc-8935-263140bae87f');
    expect(chunkPointId(42, 7)).to.equal('755dac37-2902-8e2e-a976-249c4e03b160');
    expect(entityPointId('bundesagentur für arbeit', 'Organisation')).to.equal(
      '10ae684f-a5b0-8777-9a4f-7db873acca0c',
    );
  });
});

const hit = (score: number, title: string, content: string, extra: Partial<SearchHit> = {}): SearchHit => ({
  score,
  document_id: 1,
  document_title: title,
  source_path: `/src/${title}.pdf`,
  heading_path: ['Kapitel 1', 'Abschnitt 2'],
  page: 4,
  chunk_index: 0,
  chunk_id: 1,
  content,
  section_offset: 0,
  ...extra,
});

describe('context assembly', () => {
  it('sorts by score, formats [Quelle N: title] blocks joined by ---, and stops before the budget', () => {
    const hits = [
      hit(0.5, 'Zweites', 'B '.repeat(50)),
      hit(0.9, 'Erstes', 'Inhalt des ersten Treffers.'),
      hit(0.1, 'Drittes', 'C '.repeat(400)),
      hit(0.05, 'Viertes', 'kurz'),
    ];
    const context = assembleContext(hits, 120);
    expect(
      context.text.startsWith(
        '[Quelle 1: Erstes]\nInhalt des ersten Treffers.\n\n---\n\n[Quelle 2: Zweites]\n',
      ),
    ).to.equal(true);
    // the third block would pass the budget: it stops there (the short fourth is not pulled forward)
    expect(context.sources.map((s) => s.title)).to.deep.equal(['Erstes', 'Zweites']);
    expect(context.tokens).to.equal(countTokens(context.text));
    expect(context.tokens).to.be.at.most(120);
    expect(context.sources[0]).to.deep.include({
      n: 1,
      path: '/src/Erstes.pdf',
      heading_path: ['Kapitel 1', 'Abschnitt 2'],
    });
    expect(assembleContext(hits, 5).text).to.equal('');
  });

  it('cuts the best hit to the budget at a word when it alone is over it, instead of giving no context', () => {
    const long = hit(0.9, 'Langes', Array.from({ length: 400 }, (_, i) => `Wort${i}`).join(' '));
    const context = assembleContext([long, hit(0.5, 'Kurz', 'kurz')], 60);
    expect(context.sources.map((s) => s.title)).to.deep.equal(['Langes']);
    expect(context.tokens).to.be.at.most(60);
    expect(context.text).to.match(/^\[Quelle 1: Langes\]\nWort0 Wort1 .* Wort\d+ …$/);
    // a budget that ends inside the first word keeps none of it
    const one = assembleContext(
      [hit(0.9, 'Auftrag', `Auftragsklärung${'sehrlang'.repeat(20)} und mehr`)],
      12,
    );
    expect(one.text).to.equal('[Quelle 1: Auftrag]\n…');
  });
});

describe('plain-text renderers', () => {
  it('shows score, title, heading path, page and a one-line snippet per hit', () => {
    const text = formatSearchHits('Urlaub', [
      hit(0.8123, 'Handbuch', 'Der Urlaub\nwird beantragt. '.repeat(30)),
    ]);
    const lines = text.split('\n');
    expect(lines[0]).to.equal('1. 0.812  Handbuch');
    expect(lines[1]).to.equal('   Kapitel 1 > Abschnitt 2 · page 4');
    expect(lines[2].length).to.be.at.most(250);
    expect(lines[2].endsWith('…')).to.equal(true);
    expect(formatSearchHits('nichts', [])).to.equal('No results for "nichts".');
    expect(snippet('kurz')).to.equal('kurz');
  });

  it('renders a verify report with its verdict', () => {
    const report: VerifyReport = {
      ok: false,
      backend: 'embedded',
      location: 'sqlite:x',
      collection: 'documents',
      model: 'local-hash-v1',
      dimensions: 1024,
      collectionExists: true,
      collectionModel: 'local-hash-v1',
      collectionDimensions: 1024,
      counts: {
        expected: 3,
        points: 2,
        missing: 1,
        unembedded: 0,
        orphans: 0,
        stale: 0,
        outdated: 0,
        inFlight: 0,
        foreign: 0,
        wrongSize: 0,
        wrongChunkRefs: 0,
        failedChunks: 0,
        entitiesWithoutPoint: 0,
        entityOrphans: 0,
      },
      problems: ['1 chunks of current documents have no point'],
    };
    const text = formatVerifyReport(report);
    expect(text).to.include(
      "collection 'documents' (embedded, sqlite:x): model local-hash-v1, 1024 dimensions",
    );
    expect(text).to.include('missing points: 1');
    expect(text.split('\n').at(-1)).to.equal('NOT OK: SQL and the vector index disagree.');
    expect(text).not.to.include('entity points');
    const withEntities = formatVerifyReport({
      ...report,
      counts: { ...report.counts, entitiesWithoutPoint: 1, entityOrphans: 2 },
    });
    expect(withEntities).to.include('entities without a point: 1   entity points of no entity: 2');
  });
});
