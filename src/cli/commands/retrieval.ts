import type { Argv, CommandModule } from 'yargs';
import type { Engine } from '../../engine/engine.js';
import { CpeError, ErrorCodes } from '../../errors.js';
import {
  contextJson,
  formatContext,
  formatSearchHits,
  formatVerifyReport,
  searchHitsJson,
} from '../../retrieval/format.js';
import { printable } from '../../util/printable.js';
import { type GlobalArgs, globalOptions, withEngineWithoutSteps } from '../engine-options.js';
import { EXIT_FAILURES, EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { printJson } from '../table.js';

// The retrieval modules are imported by the command that runs them: every command's start loads this file, and
// they were ~25 ms of it (the context builder's tokenizer tables above all).
const retrieval = {
  search: () => import('../../retrieval/search.js'),
  context: () => import('../../retrieval/context.js'),
  verify: () => import('../../retrieval/verify.js'),
  prompts: () => import('../../llm/prompts.js'),
  settings: () => import('../../retrieval/embed-settings.js'),
};

interface IndexArgs extends GlobalArgs {
  collection?: string;
  pipeline?: string;
}

interface QueryArgs extends IndexArgs {
  query: string;
  limit?: number;
  'max-tokens'?: number;
}

/** --collection and --pipeline: which collection to read, and whose embed settings to read it with */
const indexOptions = <T>(y: Argv<T>) =>
  globalOptions(y)
    .option('collection', {
      type: 'string',
      describe: "collection to use (default: the one the pipeline's vector_store or embed step writes)",
    })
    .option('pipeline', {
      type: 'string',
      describe:
        'pipeline whose embed settings (collection, max_embed_chars) apply (default: the default one)',
    });

const queryOptions = <T>(y: Argv<T>) =>
  indexOptions(y)
    .positional('query', { type: 'string', demandOption: true })
    .option('json', { type: 'boolean' });

/**
 * The collection and text preparation for these arguments: the options, else the pipeline's embed settings. A
 * collection named with --collection must exist (a pipeline's own may not yet: nothing has been ingested).
 */
async function indexSettings(engine: Engine, args: IndexArgs) {
  const { embedSettings } = await retrieval.settings();
  const settings = await embedSettings(engine.dbs.content.sql, args.pipeline ?? engine.config.pipeline);
  if (
    args.collection !== undefined &&
    !(await (await engine.providers.vectors()).describeCollection(args.collection)).exists
  )
    throw new CpeError(
      ErrorCodes.USAGE,
      `collection '${args.collection}' does not exist (the default is the one the pipeline's embed or vector_store step writes: '${settings.collection}')`,
    );
  return {
    collection: args.collection ?? settings.collection,
    maxEmbedChars: settings.maxEmbedChars,
    embedModel: settings.embedModel,
  };
}

export const searchModule: CommandModule<object, QueryArgs> = {
  command: 'search <query>',
  describe: 'similarity search over the chunks: score, document, heading path, page, snippet',
  builder: (y) =>
    queryOptions(y).option('limit', { type: 'number', default: 10 }) as unknown as Argv<QueryArgs>,
  handler: async (args) => {
    const { searchChunks } = await retrieval.search();
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      const hits = await searchChunks(
        { db: engine.dbs.content.sql, providers: engine.providers },
        args.query,
        { limit: args.limit, ...(await indexSettings(engine, args)) },
      );
      if (args.json) printJson(searchHitsJson(hits));
      else process.stdout.write(`${formatSearchHits(args.query, hits)}\n`);
      return EXIT_OK;
    });
  },
};

export const contextModule: CommandModule<object, QueryArgs> = {
  command: 'context <query>',
  describe: 'the context block an assistant would get: [Quelle N: title] blocks within a token budget',
  builder: (y) =>
    queryOptions(y).option('max-tokens', { type: 'number', default: 3000 }) as unknown as Argv<QueryArgs>,
  handler: async (args) => {
    const { buildContext } = await retrieval.context();
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      const context = await buildContext(
        { db: engine.dbs.content.sql, providers: engine.providers },
        args.query,
        { maxTokens: args['max-tokens'], ...(await indexSettings(engine, args)) },
      );
      if (args.json) printJson(contextJson(context));
      else process.stdout.write(`${formatContext(context, args.query)}\n`);
      return EXIT_OK;
    });
  },
};

interface Answer {
  answer: string;
  sources: number[];
}

/** The answer's shape for a context of `sources` sources: each cited once, none outside the context. */
const answerSchema = (sources: number) => ({
  type: 'object',
  additionalProperties: false,
  required: ['answer', 'sources'],
  properties: {
    answer: { type: 'string', minLength: 1 },
    sources: { type: 'array', uniqueItems: true, items: { type: 'integer', minimum: 1, maximum: sources } },
  },
});

export const askModule: CommandModule<object, QueryArgs & { provider?: string; model?: string }> = {
  command: 'ask <query>',
  describe:
    'answer a question from the context with an LLM, citing [Quelle N]; without an LLM, show the context',
  builder: (y) =>
    queryOptions(y)
      .option('max-tokens', { type: 'number', default: 3000, describe: 'context budget' })
      .option('provider', { type: 'string', choices: ['anthropic', 'ollama'] })
      .option('model', { type: 'string' }) as unknown as Argv<
      QueryArgs & { provider?: string; model?: string }
    >,
  handler: async (args) => {
    const { buildContext } = await retrieval.context();
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      const context = await buildContext(
        { db: engine.dbs.content.sql, providers: engine.providers },
        args.query,
        { maxTokens: args['max-tokens'], ...(await indexSettings(engine, args)) },
      );
      const resolution = await engine.providers.llm({ provider: args.provider, model: args.model });
      // a provider asked for by name that cannot answer is a configuration error, not a reason to show the context
      if (!resolution.llm && args.provider)
        throw new CpeError(ErrorCodes.CONFIG_INVALID, `--provider=${args.provider}: ${resolution.reason}`);
      if (!resolution.llm) {
        if (args.json) printJson({ answer: null, reason: resolution.reason, context: contextJson(context) });
        else
          process.stdout.write(
            `${resolution.reason}\nThe context that would have been used:\n\n${formatContext(context, args.query)}\n`,
          );
        return EXIT_OK;
      }
      const { fillPrompt, resolvePromptTemplate } = await retrieval.prompts();
      // filled verbatim: "$&", "$$" or "{{context}}" in the question or a source are text, not patterns
      const prompt = fillPrompt(resolvePromptTemplate('ask'), {
        question: args.query,
        context: context.text || '(keine passenden Quellen gefunden)',
      });
      const result = await resolution.llm.generate<Answer>({
        prompt,
        schema: answerSchema(context.sources.length),
        schemaName: 'answer',
        maxTokens: 1500,
      });
      const cited = result.value.sources.map((n) => context.sources[n - 1]).filter(Boolean);
      if (args.json) {
        printJson({
          answer: result.value.answer,
          sources: cited,
          model: result.model,
          provider: result.provider,
          cached: result.cached,
        });
      } else {
        process.stdout.write(`${result.value.answer}\n\n`);
        for (const n of result.value.sources) {
          const source = context.sources[n - 1];
          if (source)
            process.stdout.write(`[Quelle ${n}] ${printable(source.title)} (${printable(source.path)})\n`);
        }
      }
      return EXIT_OK;
    });
  },
};

export const verifyModule: CommandModule<object, IndexArgs & { repair?: boolean; json?: boolean }> = {
  command: 'verify',
  describe:
    'compare SQL with the vector index (missing, orphan, stale points; model and dimension); --repair fixes',
  builder: (y) =>
    indexOptions(y)
      .option('repair', { type: 'boolean', describe: 'make the index agree with SQL' })
      .option('json', { type: 'boolean' }) as unknown as Argv<
      IndexArgs & { repair?: boolean; json?: boolean }
    >,
  handler: async (args) => {
    const { verifyIndex } = await retrieval.verify();
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      const report = await verifyIndex(
        { db: engine.dbs.content.sql, providers: engine.providers },
        {
          repair: args.repair,
          ...(await indexSettings(engine, args)),
          pipeline: args.pipeline ?? engine.config.pipeline,
        },
      );
      if (args.json) printJson(report);
      else process.stdout.write(`${formatVerifyReport(report)}\n`);
      // a collection built with another model is a configuration error, as for search: --repair cannot mend it
      if (report.mismatch) return EXIT_USAGE;
      return report.ok ? EXIT_OK : EXIT_FAILURES;
    });
  },
};
