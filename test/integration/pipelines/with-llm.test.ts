import { cpSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { createTestSetup, type TestSetup } from '../../helpers/backends.js';
import { projectRoot, runCli } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { type AnthropicTestServer, startAnthropicServer } from '../../servers/anthropic-server.js';

describe('the Standard pipeline with an LLM (Anthropic test server)', function () {
  this.timeout(300000);
  let server: AnthropicTestServer;
  let setup: TestSetup;
  before(async () => {
    server = await startAnthropicServer();
    setup = createTestSetup('sqlite');
    setup.env.ANTHROPIC_API_KEY = 'sk-ant-test-not-a-secret';
    setup.env.CPE_ANTHROPIC_BASE_URL = server.url;
  });
  after(async () => {
    await server?.close();
    await setup?.cleanup();
  });

  it('analyzes every document, sums tokens per run, pays nothing on a forced rerun, and answers `cpe ask` with sources', async () => {
    const engine = await setup.open();
    const source = tempDir('cpe-llm-');
    cpSync(path.join(projectRoot, 'examples/documents/handbuch'), source, { recursive: true });
    try {
      expect(engine.profile.llm).to.contain('Anthropic');
      const plan = await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard');
      const first = await runPipeline(engine, { plan, sourceDir: source, concurrency: 2 });
      expect(first.failures).to.deep.equal([]);
      expect(first.stepsSkipped).to.equal(0);
      expect(first.tokensIn).to.be.greaterThan(0);
      const calls = server.counters.requests;
      expect(calls).to.be.greaterThan(0);
      const [{ n }] = await engine.dbs.content.sql.query<{ n: number }>(
        'SELECT COUNT(*) AS n FROM chunk_semantics',
      );
      expect(Number(n)).to.be.greaterThan(0);

      const plain = await runPipeline(engine, { plan, sourceDir: source, concurrency: 2 });
      expect(plain.docsTotal).to.equal(0);
      expect(server.counters.requests, 'an unchanged rerun makes no call').to.equal(calls);

      // --force redoes every step: every call is answered from the cache, except the taxonomy placement, whose
      // prompt offers the categories other documents have by now (a different question, rightly asked again)
      const forced = await runPipeline(engine, { plan, sourceDir: source, concurrency: 2, force: true });
      expect(forced.docsDone).to.equal(2);
      const newCalls = server.bodies.slice(-(server.counters.requests - calls));
      expect(server.counters.requests - calls).to.be.at.most(4); // at most the placements, asked again
      for (const body of newCalls) {
        expect(JSON.stringify(body)).to.match(/[Tt]axonom|Kategorie/);
      }
    } finally {
      await engine.close();
    }
    const runs = await runCli(['runs', '--json'], setup.env);
    const [latest, , earlier] = JSON.parse(runs.stdout);
    expect(Number(earlier.tokens_in)).to.be.greaterThan(0);
    expect(Number(latest.tokens_in)).to.be.below(Number(earlier.tokens_in));
    expect(runs.stdout).to.not.contain('sk-ant-test-not-a-secret');

    const ask = await runCli(['ask', 'Was gehört zu gutem Feedback?'], setup.env);
    expect(ask.code, ask.stderr).to.equal(0);
    expect(ask.stdout).to.match(/\[Quelle 1\] .*feedback/i);
  });

  it('gives up on a hung server after the configured timeout and one retry, each retry in the run log', async () => {
    // answers that never come in time: CPE_LLM_TIMEOUT_SECONDS=1, and one attempt of the document
    const engine = await setup.open({ llmTimeoutSeconds: 1, maxAttempts: 1 });
    const source = tempDir('cpe-llm-hung-');
    writeFileSync(
      path.join(source, 'zeitlimit.md'),
      '# Zeitlimit\n\nEin Server, der nicht antwortet, hält keinen Lauf eine halbe Stunde auf.\n',
    );
    server.faults.stallNext(50, 2500);
    const before = server.counters.requests;
    try {
      const plan = await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard');
      const run = await runPipeline(engine, { plan, sourceDir: source, concurrency: 1 });
      expect(run.failures.map((f) => f.error).join('\n')).to.contain('anthropic: Request timed out');
      const logged = await engine.dbs.log.sql.query<{ message: string }>(
        "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'warn' AND message LIKE 'LLM request failed%'",
        [run.runId],
      );
      expect(logged.length).to.be.greaterThan(0);
      for (const { message } of logged)
        expect(message).to.match(/^LLM request failed \(anthropic: Request timed out\.?\): try 2 of \d+ in /);
      // a timed-out request is tried twice, not six times: one notice per call, two requests each
      expect(server.counters.requests - before).to.equal(2 * logged.length);
    } finally {
      server.faults.clear();
      await engine.close();
    }
  });

  it('without an LLM, `cpe ask` says so and shows the context it would have used', async () => {
    const env = { ...setup.env };
    delete env.ANTHROPIC_API_KEY;
    const ask = await runCli(['ask', 'Was gehört zu gutem Feedback?'], env);
    expect(ask.code).to.equal(0);
    expect(ask.stdout).to.contain('no LLM configured');
    expect(ask.stdout).to.contain('[Quelle 1:');
  });
});
