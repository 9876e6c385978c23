/**
 * npm run eval:retrieval — retrieval quality of the embedded default on the German corpus: ingests
 * ../shared/corpus/md with the Standard pipeline into a fresh temporary data folder, asks the questions of
 * eval/retrieval-questions.json and prints hit@1, hit@5 and MRR at section and document level as Markdown;
 * writes the same report to eval/retrieval-results.md. Always exits 0 when it could measure: it reports,
 * the regression test (test/integration/eval/retrieval.test.ts) judges.
 *
 * To compare a change of step configuration without touching the seeds:
 *   npm run eval:retrieval -- --step-config='embed={"max_embed_chars":2000}' --out=/tmp/eval.md
 * (--step-config may repeat; --out=- prints only.)
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defaultCorpusDir, formatReport, projectRoot, runRetrievalEval } from './lib/retrieval-eval.js';

function parseArgs(argv: readonly string[]): {
  stepConfigs: Record<string, Record<string, unknown>>;
  out: string;
} {
  const stepConfigs: Record<string, Record<string, unknown>> = {};
  let out = path.join(projectRoot, 'eval/retrieval-results.md');
  for (const arg of argv) {
    const step = /^--step-config=([a-z_]+)=(.+)$/s.exec(arg);
    if (step) {
      const config: unknown = JSON.parse(step[2]!);
      if (typeof config !== 'object' || config === null || Array.isArray(config)) {
        throw new Error(`--step-config ${step[1]}: expected a JSON object`);
      }
      stepConfigs[step[1]!] = config as Record<string, unknown>;
    } else if (arg.startsWith('--out=')) {
      out = arg.slice('--out='.length);
    } else {
      throw new Error(`unknown argument '${arg}' (known: --step-config=TYPE=JSON, --out=FILE|-)`);
    }
  }
  return { stepConfigs, out };
}

async function main(): Promise<void> {
  const { stepConfigs, out } = parseArgs(process.argv.slice(2));
  if (!existsSync(path.join(defaultCorpusDir, 'md'))) {
    console.log(`No corpus at ${path.join(defaultCorpusDir, 'md')}; nothing to evaluate (skipped).`);
    return;
  }
  const report = await runRetrievalEval({
    stepConfigs,
    onProgress: (line) => process.stderr.write(`${line}\n`),
  });
  const markdown = formatReport(report);
  console.log(markdown);
  if (out !== '-') {
    writeFileSync(out, markdown);
    console.log(`written to ${path.relative(process.cwd(), out) || out}`);
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
