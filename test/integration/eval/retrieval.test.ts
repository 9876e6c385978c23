import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import {
  computeMetrics,
  formatReport,
  loadQuestions,
  type QuestionResult,
  type RetrievalEvalReport,
  runRetrievalEval,
} from '../../../scripts/lib/retrieval-eval.js';
import { projectRoot } from '../../helpers/cli.js';

const corpus = path.resolve(projectRoot, '../shared/corpus');

/**
 * Floors for the embedded default (Standard pipeline, local-hash-v2, SQLite) over ../shared/corpus/md with the
 * 62 questions of eval/retrieval-questions.json. Measured (npm run eval:retrieval):
 *
 *   level                          hit@1   hit@5   MRR@10
 *   section (heading_path)         0.403   0.597   0.474
 *   section (chunk reaches in)     0.452   0.677   0.536
 *   document                       0.742   0.903   0.806
 *
 * (Before a hit cited the section of its chunk the query matches best, heading_path named the one the chunk starts
 * in: 0.177 0.371 0.260. Before hits were ranked by their exact feature score, by the index's estimate: 0.161 0.274 0.209 / 0.387
 * 0.597 0.475 / 0.694 0.871 0.752; local-hash-v1 with the first 800 characters of each chunk, before that: 0.048
 * 0.194 0.101 / 0.113 0.435 0.234 / 0.403 0.661 0.527.) Each floor is the measured value less two questions (2/62 = 0.032) for hit rates and
 * less 0.03 for MRR, rounded down: everything is deterministic (hashed features, exact cosine search), so a
 * drop below a floor means a change made retrieval worse, not noise. When a change improves retrieval, raise
 * the floors to the new measurement less the same margin.
 */
const FLOORS = {
  section: { hitAt1: 0.37, hitAt5: 0.56, mrr: 0.44 },
  span: { hitAt1: 0.42, hitAt5: 0.64, mrr: 0.5 },
  document: { hitAt1: 0.71, hitAt5: 0.87, mrr: 0.77 },
} as const;

describe('retrieval evaluation (eval/retrieval-questions.json)', function () {
  this.timeout(300000);

  it('has a question set of at least 40 questions over at least 15 files, laws and handbook chapters', () => {
    const questions = loadQuestions();
    expect(questions.length).to.be.at.least(40);
    const files = new Set(questions.map((q) => q.file));
    expect(files.size).to.be.at.least(15);
    expect([...files].filter((f) => f.startsWith('de_gesetze_')).length).to.be.at.least(8);
    expect([...files].filter((f) => f.startsWith('de_pro4bib_')).length).to.be.at.least(5);
    expect(new Set(questions.map((q) => q.question)).size).to.equal(questions.length);
  });

  it('scores ranks as hit@1, hit@5 and MRR per level', () => {
    const result = (sectionRank: number | null, documentRank: number | null): QuestionResult => ({
      id: 'x',
      question: 'x',
      file: 'f.md',
      section: 's',
      answer_hint: 'h',
      sectionRank,
      spanRank: sectionRank,
      documentRank,
      top: [],
    });
    const metrics = computeMetrics([result(1, 1), result(3, 1), result(null, 7), result(null, null)]);
    expect(metrics.questions).to.equal(4);
    expect(metrics.section).to.deep.equal({ hitAt1: 0.25, hitAt5: 0.5, mrr: (1 + 1 / 3) / 4 });
    expect(metrics.document.hitAt1).to.equal(0.5);
    expect(metrics.document.hitAt5).to.equal(0.5);
    expect(metrics.document.mrr).to.be.closeTo((1 + 1 + 1 / 7) / 4, 1e-12);
  });

  describe('over ../shared/corpus/md on the embedded default', () => {
    let report: RetrievalEvalReport;
    before(async function () {
      if (!existsSync(path.join(corpus, 'md'))) {
        console.log(`    (no corpus at ${corpus}: the retrieval evaluation is skipped)`);
        this.skip();
      }
      report = await runRetrievalEval({ corpusDir: corpus });
    });

    it('finds every expected file, section and answer passage in the ingested corpus', () => {
      expect(report.problems).to.deep.equal([]);
      expect(report.embedder).to.equal('local-hash-v2');
      expect(report.results).to.have.length(report.metrics.questions);
    });

    it('keeps hit@1, hit@5 and MRR at or above the measured floors', () => {
      const { metrics } = report;
      const failures: string[] = [];
      for (const level of ['section', 'span', 'document'] as const) {
        for (const key of ['hitAt1', 'hitAt5', 'mrr'] as const) {
          const value = metrics[level][key];
          const floor = FLOORS[level][key];
          if (value < floor) failures.push(`${level} ${key} ${value.toFixed(3)} < floor ${floor}`);
        }
      }
      expect(failures, formatReport(report)).to.deep.equal([]);
    });

    it('reports the metrics as a Markdown table', () => {
      const markdown = formatReport(report);
      expect(markdown).to.match(/^\| level \| hit@1 \| hit@5 \| MRR@10 \| questions \|$/m);
      expect(markdown).to.match(/^\| section \(heading_path\) \| [\d.]+ % \| [\d.]+ % \| [\d.]+ \| \d+ \|$/m);
      expect(markdown).to.match(/^\| document \| [\d.]+ % \| [\d.]+ % \| [\d.]+ \| \d+ \|$/m);
      expect(markdown).to.contain(`- **q01** `);
    });
  });
});
