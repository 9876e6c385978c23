// A custom cpe step plugin: tags each document with the glossary terms its chunks mention.
//
//   CPE_PLUGIN_DIRS=examples/plugins npx cpe steps     # lists glossary_tags (source: this file)
//
// Put it into a pipeline with SQL (see README, "Writing a custom step plugin"). It needs chunks, so it goes
// after `chunk` (it says so in `reads`: planning refuses a pipeline that puts it before `chunk`); the tags land in
// documents.metadata.glossary_tags, e.g. {"Feedback": 3, "Coaching": 1}.

/** @typedef {{ terms: Record<string, string[]>, min_mentions: number }} GlossaryConfig */

/** @param {string} text */
const fold = (text) => text.normalize('NFC').toLocaleLowerCase('de-DE');

/** @type {import('../../src/engine/plugin.js').StepPlugin<GlossaryConfig>} */
export default {
  type: 'glossary_tags',
  description:
    'Tag documents with glossary terms found in their chunks (counts in documents.metadata.glossary_tags)',
  scope: 'document',
  reads: ['chunks'],
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      terms: {
        type: 'object',
        description: 'tag -> words that indicate it (case-insensitive, whole words)',
        additionalProperties: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 },
        default: {
          Feedback: ['Feedback', 'Rückmeldung'],
          Coaching: ['Coaching', 'Coach'],
          Moderation: ['Moderation', 'Moderatorin', 'Moderator'],
          Konflikt: ['Konflikt', 'Eskalation'],
        },
      },
      min_mentions: { type: 'integer', minimum: 1, default: 1 },
    },
  },
  async run(ctx) {
    const chunks = await ctx.db.query(
      'SELECT content FROM chunks WHERE document_id = ? ORDER BY chunk_index',
      [ctx.document.id],
    );
    if (chunks.length === 0) return ctx.skip('the document has no chunks (put glossary_tags after chunk)');
    const text = fold(chunks.map((c) => c.content).join('\n'));
    /** @type {Record<string, number>} */
    const tags = {};
    for (const [tag, words] of Object.entries(ctx.config.terms)) {
      let count = 0;
      for (const word of words) {
        const pattern = new RegExp(
          `(?<![\\p{L}\\p{N}])${fold(word).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\p{L}\\p{N}])`,
          'gu',
        );
        count += text.match(pattern)?.length ?? 0;
      }
      if (count >= ctx.config.min_mentions) tags[tag] = count;
    }
    // merged into the metadata in one transaction: metadata_store, which runs beside this step when both follow
    // chunk, writes the same column, and a read here and a write back later would drop its keys (or it ours)
    await ctx.mergeDocumentMetadata(ctx.document.id, { glossary_tags: tags });
    ctx.report({ itemsIn: chunks.length, itemsOut: Object.keys(tags).length });
    ctx.log.info(`glossary tags: ${Object.keys(tags).join(', ') || '(none)'}`, { tags });
  },
};
