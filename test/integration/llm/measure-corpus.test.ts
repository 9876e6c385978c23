/**
 * Calls and tokens of the Schulungsunterlagen LLM steps over real Markdown files from ../shared/corpus,
 * against the Anthropic test server: first run, rerun (must make zero calls), and a run with 20% invalid
 * first answers (share of answers that needed a repair). Prints a table; skipped without the corpus.
 * The chunks here are cut by a simple heading/paragraph packer (~600 tokens), not by the chunk step.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../../../src/paths.js';
import { countTokens } from '../../../src/text/tokenizer.js';
import entityExtract from '../../../steps/entity_extract.js';
import questionGenerate from '../../../steps/question_generate.js';
import relationExtract from '../../../steps/relation_extract.js';
import semanticAnalyze from '../../../steps/semantic_analyze.js';
import summarize from '../../../steps/summarize.js';
import taxonomyBuild from '../../../steps/taxonomy_build.js';
import visionAnalyze from '../../../steps/vision_analyze.js';
import { type AnthropicTestServer, startAnthropicServer } from '../../servers/anthropic-server.js';
import {
  insertDocument,
  openTestDb,
  runStep,
  type TestChunk,
  type TestDb,
  testProviders,
} from './harness.js';

const corpus = path.resolve(packageRoot, '../shared/corpus/md');
const FILES = ['de_afu_StyleGuide.md', 'de_gesetze_nachwg.md', 'de_pro4bib_index.md', 'de_gesetze_burlg.md'];
const STEPS = [
  visionAnalyze,
  entityExtract,
  relationExtract,
  taxonomyBuild,
  semanticAnalyze,
  summarize,
  questionGenerate,
];

/** Heading-aware paragraph packing to about `target` tokens per chunk. */
function chunkMarkdown(text: string, target = 600): TestChunk[] {
  const chunks: TestChunk[] = [];
  const path: string[] = [];
  let current: string[] = [];
  let tokens = 0;
  let currentPath: string[] = [];
  const flush = () => {
    if (current.length > 0) chunks.push({ content: current.join('\n\n'), headingPath: currentPath });
    current = [];
    tokens = 0;
  };
  for (const block of text.split(/\n\s*\n/)) {
    const trimmed = block.trim();
    if (!trimmed) continue;
    const heading = /^(#{1,6})\s+(.*)$/.exec(trimmed.split('\n')[0]!);
    if (heading) {
      flush();
      path.length = heading[1]!.length - 1;
      path.push(heading[2]!.trim());
      currentPath = path.filter(Boolean);
    }
    const t = countTokens(trimmed);
    if (tokens + t > target && current.length > 0) flush();
    current.push(trimmed);
    tokens += t;
  }
  flush();
  return chunks;
}

describe('measure: Schulungsunterlagen LLM steps over corpus Markdown', function () {
  this.timeout(300000);
  let t: TestDb;
  let server: AnthropicTestServer;

  before(function () {
    if (!existsSync(corpus)) this.skip();
  });
  beforeEach(async () => {
    t = await openTestDb();
    server = await startAnthropicServer();
  });
  afterEach(async () => {
    await server?.close();
    await t?.close();
  });

  it('first run, rerun with zero calls, and the repair share at 20% invalid answers', async () => {
    const providers = testProviders(t.db, { anthropicApiKey: 'k', anthropicBaseUrl: server.url });
    const docs = [];
    for (const file of FILES) {
      const chunks = chunkMarkdown(readFileSync(path.join(corpus, file), 'utf8'));
      docs.push({
        file,
        chunks: chunks.length,
        tokens: chunks.map((c) => countTokens(c.content)),
        doc: await insertDocument(t.db, { filename: file, chunks }),
      });
    }
    const rows: string[] = [];
    const totals = { first: { calls: 0, in: 0, out: 0 }, rerun: { calls: 0, in: 0, out: 0 } };
    for (const { file, chunks, tokens, doc } of docs) {
      for (const plugin of STEPS) {
        const before = server.counters.requests;
        const first = await runStep(plugin, t.db, doc.ref, providers);
        const httpFirst = server.counters.requests - before;
        const rerun = await runStep(plugin, t.db, doc.ref, providers);
        const httpRerun = server.counters.requests - before - httpFirst;
        expect(httpRerun, `${file} ${plugin.type} rerun`).to.equal(0);
        totals.first.calls += httpFirst;
        totals.first.in += first.counts.tokensIn ?? 0;
        totals.first.out += first.counts.tokensOut ?? 0;
        totals.rerun.calls += httpRerun;
        totals.rerun.in += rerun.counts.tokensIn ?? 0;
        totals.rerun.out += rerun.counts.tokensOut ?? 0;
        const est = plugin.estimate({
          config: {},
          chunks: tokens.map((tokenCount) => ({ tokenCount })),
          pages: 1,
        });
        rows.push(
          [
            file.padEnd(28),
            String(chunks).padStart(6),
            plugin.type.padEnd(18),
            (first.outcome ? 'skipped' : 'ok').padEnd(10),
            String(httpFirst).padStart(6),
            String(first.counts.tokensIn ?? 0).padStart(8),
            String(first.counts.tokensOut ?? 0).padStart(8),
            String(httpRerun).padStart(6),
            String(rerun.counts.llmCached ?? 0).padStart(6),
            `${est.calls}/${est.tokensIn}/${est.tokensOut}`.padStart(16),
          ].join(' '),
        );
      }
    }
    console.log(
      `\n${['file'.padEnd(28), 'chunks'.padStart(6), 'step'.padEnd(18), 'outcome'.padEnd(10), 'calls'.padStart(6), 'tok_in'.padStart(8), 'tok_out'.padStart(8), 'rerun'.padStart(6), 'cached'.padStart(6), 'est c/in/out'.padStart(16)].join(' ')}\n${rows.join('\n')}`,
    );
    console.log(`first run: ${JSON.stringify(totals.first)}; rerun: ${JSON.stringify(totals.rerun)}`);
    expect(totals.rerun).to.deep.equal({ calls: 0, in: 0, out: 0 });

    // repair share: a second database, 20% of first answers invalid
    const t2 = await openTestDb();
    const server2 = await startAnthropicServer();
    try {
      server2.faults.invalidRate = 0.2;
      const p2 = testProviders(t2.db, { anthropicApiKey: 'k', anthropicBaseUrl: server2.url });
      let repaired = 0;
      let failed = 0;
      for (const { file } of docs) {
        const chunks = chunkMarkdown(readFileSync(path.join(corpus, file), 'utf8'));
        const doc = await insertDocument(t2.db, { filename: file, chunks });
        for (const plugin of STEPS) {
          const run = await runStep(plugin, t2.db, doc.ref, p2, { max_failed_items: 1000 });
          repaired += run.counts.llmRepaired ?? 0;
          failed += run.counts.itemsFailed ?? 0;
        }
      }
      const firstAnswers = server2.counters.answered - server2.counters.repairs;
      console.log(
        `invalid-answer mode (rate 0.2): ${firstAnswers} first answers, ${server2.counters.invalidAnswers} invalid, ${server2.counters.repairs} repair calls, ${repaired} repaired (${((100 * repaired) / firstAnswers).toFixed(1)}% of answers needed a repair), ${failed} items failed`,
      );
      expect(repaired).to.equal(server2.counters.repairs);
      expect(failed).to.equal(0);
    } finally {
      await server2.close();
      await t2.close();
    }
  });
});
