import type { StepContext } from '../src/engine/plugin.js';
import {
  ENTITY_PROMPT_KEYS,
  type EntityConfig,
  entityConfigProperties,
  runEntityExtraction,
} from '../src/knowledge/entities.js';
import { type LlmStepPlugin, perChunkEstimate, sumEstimates } from '../src/knowledge/estimate.js';
import {
  type LlmStepConfig,
  LlmTally,
  llmConfigProperties,
  makeAsker,
  openLlm,
  stepTemplate,
} from '../src/knowledge/llm-step.js';
import {
  RELATION_PROMPT_KEYS,
  type RelationConfig,
  relationConfigProperties,
  runRelationExtraction,
} from '../src/knowledge/relations.js';
import {
  runSemanticAnalysis,
  SEMANTIC_PROMPT_KEYS,
  type SemanticConfig,
  semanticConfigProperties,
} from '../src/knowledge/semantics.js';
import {
  runTaxonomyBuild,
  TAXONOMY_PROMPT_KEYS,
  type TaxonomyConfig,
  taxonomyConfigProperties,
} from '../src/knowledge/taxonomy.js';
import taxonomyStep from './taxonomy_build.js';

type Config = Omit<LlmStepConfig, 'prompt' | 'prompt_file'> &
  EntityConfig &
  RelationConfig &
  TaxonomyConfig &
  SemanticConfig & {
    entity_prompt_file?: string;
    relation_prompt_file?: string;
    taxonomy_prompt_file?: string;
    semantic_prompt_file?: string;
  };

const { prompt: _prompt, prompt_file: _promptFile, ...commonProperties } = llmConfigProperties;

/** The four parts' prompt templates (config file or built-in), each checked for its placeholders. */
function templates(config: Config): Record<'entity' | 'relation' | 'taxonomy' | 'semantic', string> {
  const template = (name: string, keys: readonly string[], file: string | undefined, required: string[]) =>
    stepTemplate('analyze', name, { ...config, prompt_file: file } as LlmStepConfig, keys, required);
  return {
    entity: template('entity_extract', ENTITY_PROMPT_KEYS, config.entity_prompt_file, ['text']),
    relation: template('relation_extract', RELATION_PROMPT_KEYS, config.relation_prompt_file, [
      'text',
      'entities',
    ]),
    taxonomy: template('taxonomy_build', TAXONOMY_PROMPT_KEYS, config.taxonomy_prompt_file, ['text']),
    semantic: template('semantic_analyze', SEMANTIC_PROMPT_KEYS, config.semantic_prompt_file, ['text']),
  };
}

/**
 * The original analyze.py in one step: entities, relations, taxonomy and chunk semantics, in that order (the
 * relations need the entities). The four parts are the functions of the four single steps; one provider,
 * model and limit set serve all of them, each part keeps its own prompt.
 */
const plugin: LlmStepPlugin<Config> = {
  type: 'analyze',
  description: 'entity, relation, taxonomy and chunk semantics in one step (as the original analyze.py)',
  scope: 'document',
  reads: ['chunks'],
  writes: ['entities'],
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      ...commonProperties,
      ...entityConfigProperties,
      ...relationConfigProperties,
      ...taxonomyConfigProperties,
      ...semanticConfigProperties,
      entity_prompt_file: { type: 'string', minLength: 1 },
      relation_prompt_file: { type: 'string', minLength: 1 },
      taxonomy_prompt_file: { type: 'string', minLength: 1 },
      semantic_prompt_file: { type: 'string', minLength: 1 },
    },
  },
  // the four prompt files and templates are checked at planning, not once an LLM is configured
  checkConfig(config: Config) {
    templates(config);
    return [];
  },
  async run(ctx: StepContext<Config>) {
    const opened = await openLlm(ctx);
    if ('skipped' in opened) return opened.skipped;
    const config = ctx.config;
    const prompts = templates(config);
    const tally = new LlmTally();
    const asker = (template: string) => makeAsker(opened.llm, config as LlmStepConfig, template, tally);
    const askers = {
      entity: asker(prompts.entity),
      relation: asker(prompts.relation),
      taxonomy: asker(prompts.taxonomy),
      semantic: asker(prompts.semantic),
    };
    try {
      const entities = await runEntityExtraction(ctx, askers.entity, config);
      const relations = await runRelationExtraction(ctx, askers.relation, config);
      const taxonomy = await runTaxonomyBuild(ctx, askers.taxonomy, config);
      const semantics = await runSemanticAnalysis(ctx, askers.semantic, config);
      ctx.report({
        itemsIn: entities.chunks,
        itemsOut: entities.mentions + relations.relations + taxonomy.categories + semantics.written,
        entities: entities.entities,
        entityMentions: entities.mentions,
        relations: relations.relations,
        taxonomyCategories: taxonomy.categories,
        chunkSemantics: semantics.written,
      });
    } finally {
      ctx.report(tally.counts());
    }
  },
  estimate: (input) =>
    sumEstimates(
      perChunkEstimate(input, 'entity_extract', 250),
      perChunkEstimate(input, 'relation_extract', 250, 60),
      taxonomyStep.estimate(input),
      perChunkEstimate(input, 'semantic_analyze', 150),
    ),
};

export default plugin;
