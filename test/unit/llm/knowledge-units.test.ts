import { expect } from 'chai';
import { ConfigError } from '../../../src/errors.js';
import { cleanEntityName, normalizeEntityName } from '../../../src/knowledge/normalize.js';
import { groupByBudget, summaryCalls } from '../../../src/knowledge/summaries.js';
import { fittingPath, PATH_SEPARATOR } from '../../../src/knowledge/taxonomy.js';
import { cacheKey } from '../../../src/llm/cache.js';
import { RateLimiter } from '../../../src/llm/limiter.js';
import { checkTemplate, fillPrompt, placeholders } from '../../../src/llm/prompts.js';
import { parseStructuredAnswer } from '../../../src/llm/structured.js';

describe('entity name normalisation', () => {
  it('merges article, case, spacing, Unicode form and common German inflection', () => {
    const key = normalizeEntityName('Ausbildungsvertrag', 'CONCEPT');
    for (const variant of [
      'Der Ausbildungsvertrag',
      'ausbildungsvertrages',
      '  Ausbildungs\u00advertrag ',
      // the invisible characters text normalisation removes: zero-width space, (non-)joiner, word joiner, BOM
      'Ausbildungs\u200bver\u200ctrag',
      'Ausbildungs\u2060vertrag\ufeff',
      'Ausbildungs\u200dvertrag',
      '„Ausbildungsvertrag“',
      // control characters an LLM answer may carry: NUL, escape, DEL, C1 (CSI); tab and NEL separate words
      'Ausbildungs\u0000vertrag',
      '\u001bAusbildungs\u009bvertrag\u007f',
      'Der\tAusbildungsvertrag',
      'Der\u0085Ausbildungsvertrag',
    ]) {
      expect(normalizeEntityName(variant, 'CONCEPT'), JSON.stringify(variant)).to.equal(key);
    }
    expect(cleanEntityName('Aus\u0000bildungs\u009bvertrag\u0007')).to.equal('Ausbildungsvertrag');
    expect(cleanEntityName('Duale \u0000 Ausbildung\r\n')).to.equal('Duale Ausbildung');
    expect(cleanEntityName('Duale\tAusbildung')).to.equal('Duale Ausbildung');
    expect(normalizeEntityName('Prüfung', 'CONCEPT')).to.equal(
      normalizeEntityName('Pru\u0308fungen', 'CONCEPT'),
    );
    expect(normalizeEntityName('des Berufsbildungsgesetzes', 'LAW')).to.equal('berufsbildungsgesetz');
    expect(normalizeEntityName('Ausbilders', 'ROLE')).to.equal('ausbilder');
  });

  it('trims quotes, brackets and closing punctuation, also after a run of 100,000 of them', () => {
    expect(cleanEntityName('„Ausbildungsvertrag“:')).to.equal('Ausbildungsvertrag');
    expect(cleanEntityName('"...')).to.equal('');
    // a closing bracket that closes one opened in the name stays
    expect(cleanEntityName('Berufsbildungsgesetz (BBiG).')).to.equal('Berufsbildungsgesetz (BBiG)');
    expect(cleanEntityName('Sozialgesetzbuch [SGB III]')).to.equal('Sozialgesetzbuch [SGB III]');
    expect(cleanEntityName('(Kammer)')).to.equal('Kammer');
  });

  it('cuts the names of a taxonomy path so that the path fits its column (700 characters)', () => {
    const names = Array.from({ length: 8 }, (_, i) => `Ebene ${i} ${'x'.repeat(112)}`);
    const fitted = fittingPath(names);
    expect(fitted).to.have.length(8);
    expect(fitted.join(PATH_SEPARATOR).length).to.be.at.most(700);
    expect(fitted[3]!.startsWith('Ebene 3 ')).to.equal(true);
    expect(fittingPath(['Führung', 'Kommunikation'])).to.deep.equal(['Führung', 'Kommunikation']);
    expect(cleanEntityName(`(BBiG${'.'.repeat(100_000)}x.`)).to.equal(`BBiG${'.'.repeat(100_000)}x`);
  });

  it('leaves person names and short words alone', () => {
    expect(normalizeEntityName('Jens', 'PERSON')).to.equal('jens');
    expect(normalizeEntityName('Die Linke', 'PERSON')).to.equal('die linke');
    expect(normalizeEntityName('Kurs', 'CONCEPT')).to.equal('kurs');
    expect(normalizeEntityName('Prozess', 'CONCEPT')).to.not.equal(normalizeEntityName('Prozent', 'CONCEPT'));
  });
});

describe('prompt templates', () => {
  it('fills placeholders verbatim, without re-scanning inserted text', () => {
    expect(fillPrompt('A {{text}} B {{ n }}', { text: '{{n}}', n: 3 })).to.equal('A {{n}} B 3');
    expect(placeholders('{{a}} {{b}} {{a}}')).to.deep.equal(['a', 'b']);
  });

  it('refuses unknown placeholders and missing required ones, naming them', () => {
    expect(() => checkTemplate('x prompt', 'Hallo {{txt}}', ['text'], ['text'])).to.throw(
      ConfigError,
      /unknown placeholder \{\{txt\}\}/,
    );
    expect(() => checkTemplate('x prompt', 'Hallo', ['text'], ['text'])).to.throw(
      ConfigError,
      /must contain \{\{text\}\}/,
    );
    expect(() => checkTemplate('x prompt', 'Hallo {{text}}', ['text'], ['text'])).to.not.throw();
  });
});

describe('structured answers', () => {
  const schema = {
    type: 'object',
    properties: { n: { type: 'integer' }, tag: { type: 'string', enum: ['a', 'b'] } },
    required: ['n', 'tag'],
    additionalProperties: false,
  };

  it('accepts JSON matching the schema, also inside one Markdown fence', () => {
    expect(parseStructuredAnswer('{"n": 1, "tag": "a"}', schema)).to.deep.equal({
      ok: true,
      value: { n: 1, tag: 'a' },
    });
    expect(parseStructuredAnswer('```json\n{"n": 2, "tag": "b"}\n```', schema)).to.deep.equal({
      ok: true,
      value: { n: 2, tag: 'b' },
    });
    // a fence on one line (it was read as an empty answer)
    for (const fenced of ['```{"n": 3, "tag": "a"}```', '```json {"n": 3, "tag": "a"} ```'])
      expect(parseStructuredAnswer(fenced, schema), fenced).to.deep.equal({
        ok: true,
        value: { n: 3, tag: 'a' },
      });
  });

  it('describes what is wrong, for the repair prompt', () => {
    const bad = parseStructuredAnswer('{"n": "x", "tag": "c", "extra": 1}', schema);
    expect(bad.ok).to.equal(false);
    if (!bad.ok) {
      expect(bad.errors).to.contain('/n must be integer');
      expect(bad.errors).to.contain('(a, b)');
      expect(bad.errors).to.contain('(extra)');
    }
    const broken = parseStructuredAnswer('{"n": 1', schema);
    expect(broken.ok === false && broken.errors.startsWith('the answer is not valid JSON')).to.equal(true);
  });
});

describe('response cache key', () => {
  it('changes with provider, model, prompt, system, schema and images, and only with them', () => {
    const base = { provider: 'anthropic', model: 'm', prompt: 'p', system: 's', schema: { type: 'object' } };
    const key = cacheKey(base);
    expect(cacheKey({ ...base, schema: { type: 'object' } })).to.equal(key);
    for (const changed of [
      { ...base, provider: 'ollama' },
      { ...base, model: 'n' },
      { ...base, prompt: 'q' },
      { ...base, system: 't' },
      { ...base, schema: { type: 'array' } },
      { ...base, images: [new Uint8Array([1])] },
    ]) {
      expect(cacheKey(changed)).to.not.equal(key);
    }
  });
});

describe('RateLimiter', () => {
  const fakeClock = () => {
    const state = { now: 0, slept: [] as number[] };
    return {
      state,
      options: {
        now: () => state.now,
        sleep: async (ms: number) => {
          state.slept.push(ms);
          state.now += ms;
        },
      },
    };
  };

  it('holds requests per minute to the limit', async () => {
    const clock = fakeClock();
    const limiter = new RateLimiter({ requestsPerMinute: 2 }, clock.options);
    for (let i = 0; i < 3; i++) await limiter.run(10, async () => ({ value: i, tokens: 10 }));
    expect(clock.state.slept).to.deep.equal([60000]);
  });

  it('holds tokens per minute to the limit, counting the real figure', async () => {
    const clock = fakeClock();
    const limiter = new RateLimiter({ tokensPerMinute: 1000 }, clock.options);
    await limiter.run(100, async () => ({ value: 1, tokens: 900 }));
    await limiter.run(50, async () => ({ value: 2, tokens: 50 }));
    expect(clock.state.slept).to.deep.equal([]);
    await limiter.run(100, async () => ({ value: 3, tokens: 100 }));
    expect(clock.state.slept).to.deep.equal([60000]);
  });

  it('never runs more than `concurrency` calls at once', async () => {
    const limiter = new RateLimiter({ concurrency: 2 });
    let running = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 6 }, () =>
        limiter.run(1, async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setImmediate(r));
          running--;
          return { value: 0, tokens: 1 };
        }),
      ),
    );
    expect(peak).to.equal(2);
  });

  it('tightens but never loosens shared limits', () => {
    const limiter = new RateLimiter({ concurrency: 4, requestsPerMinute: 0 });
    limiter.tighten({ concurrency: 8, requestsPerMinute: 50 });
    limiter.tighten({ requestsPerMinute: 0 });
    expect(limiter.settings).to.include({ concurrency: 4, requestsPerMinute: 50 });
  });
});

describe('summary map-reduce planning', () => {
  it('groups texts by budget and plans map plus reduce calls', () => {
    expect(groupByBudget(['a'.repeat(40), 'b'.repeat(40), 'c'.repeat(40)], 20).length).to.equal(3);
    const config = { max_input_tokens: 1000, max_words: 300, map_max_words: 150 };
    expect(summaryCalls([300, 300], config)).to.equal(1);
    expect(summaryCalls(Array(10).fill(300), config)).to.equal(4 + 1);
  });
});
