import { expect } from 'chai';
import type { PipelineConfigRow, PipelineStepRow } from '../../../src/db/entities.js';
import { buildPlan } from '../../../src/engine/plan.js';
import type { StepPlugin } from '../../../src/engine/plugin.js';
import type { PluginRegistry, RegisteredPlugin } from '../../../src/engine/registry.js';
import { ConfigError } from '../../../src/errors.js';
import { collectionMismatch } from '../../../src/vectors/collection-stamp.js';
import collectionSetup from '../../../steps/collection_setup.js';
import embed from '../../../steps/embed.js';
import indexOptimize from '../../../steps/index_optimize.js';
import vectorStore from '../../../steps/vector_store.js';

const registry = (): PluginRegistry => {
  const plugins = [collectionSetup, embed, vectorStore, indexOptimize] as StepPlugin[];
  const map = new Map<string, RegisteredPlugin>(
    plugins.map((p) => [p.type, { plugin: p, source: 'builtin', file: `steps/${p.type}.ts` }]),
  );
  return { get: (t) => map.get(t), all: () => [...map.values()], problems: [] };
};

const pipeline: PipelineConfigRow = {
  id: 1,
  name: 'Standard',
  description: null,
  is_default: 1,
  status: 'active',
  source_path: null,
  settings: null,
  created_at: '',
  updated_at: '',
};

/** The four steps that name collections, configured as given (the rows a user edits). */
const rows = (configs: Record<string, unknown>): PipelineStepRow[] =>
  ['collection_setup', 'embed', 'vector_store', 'index_optimize'].map((type, i) => ({
    id: i + 1,
    pipeline_id: 1,
    name: type,
    step_type: type,
    sort_order: (i + 1) * 10,
    enabled: 1,
    config: JSON.stringify(configs[type] ?? {}),
    depends_on: null,
    created_at: '',
    updated_at: '',
  }));

describe('the collection mismatch message', () => {
  it('names the config key each step has, and what it says passes validation', () => {
    const message = collectionMismatch(
      'embedded',
      'documents',
      { model: 'local-hash-v2', dimensions: 1024 },
      { model: 'mxbai-embed-large', size: 1024, distance: 'Cosine' },
    ).message;
    const name = 'documents_mxbai_embed_large';
    expect(message).to.contain(
      `set config.collection to '${name}' on the embed step and on the vector_store step (if the pipeline has one)`,
    );
    expect(message).to.contain(
      `in config.collections (a list) of the collection_setup and index_optimize steps put '${name}' in place of 'documents'`,
    );
    expect(message).to.contain('["documents", "mail", "entities"]');
    expect(message).to.not.match(/config\.collection\b[^s][^.]*collection_setup/);

    // done as it says, the pipeline validates
    const plan = buildPlan(
      pipeline,
      rows({
        collection_setup: { collections: [name, 'mail', 'entities'] },
        embed: { collection: name },
        vector_store: { collection: name },
        index_optimize: { collections: [name] },
      }),
      registry(),
    );
    expect(plan.byName.get('collection_setup')!.config).to.deep.include({
      collections: [name, 'mail', 'entities'],
    });
    // what it said before does not: collection_setup and index_optimize have no config.collection
    expect(() =>
      buildPlan(
        pipeline,
        rows({
          collection_setup: { collection: name },
          embed: { collection: name },
          vector_store: { collection: name },
          index_optimize: { collection: name },
        }),
        registry(),
      ),
    ).to.throw(ConfigError, /collection_setup/);
  });
});
