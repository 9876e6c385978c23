import { expect } from 'chai';
import { drawDag } from '../../../src/cli/draw-dag.js';
import type { PipelineConfigRow, PipelineStepRow } from '../../../src/db/entities.js';
import { buildPlan } from '../../../src/engine/plan.js';
import type { StepPlugin } from '../../../src/engine/plugin.js';
import type { PluginRegistry, RegisteredPlugin } from '../../../src/engine/registry.js';
import { type ConfigError, describeError } from '../../../src/errors.js';

const plugin = (
  type: string,
  scope: 'document' | 'run' = 'document',
  properties: Record<string, unknown> = {},
): StepPlugin => ({
  type,
  description: type,
  scope,
  configSchema: { type: 'object', additionalProperties: false, properties },
  run: async () => undefined,
});

function registry(...plugins: StepPlugin[]): PluginRegistry {
  const map = new Map<string, RegisteredPlugin>(
    plugins.map((p) => [p.type, { plugin: p, source: 'builtin', file: `${p.type}.ts` }]),
  );
  return { get: (t) => map.get(t), all: () => [...map.values()], problems: [] };
}

const config: PipelineConfigRow = {
  id: 1,
  name: 'P',
  description: null,
  is_default: 1,
  status: 'active',
  source_path: null,
  settings: null,
  created_at: '',
  updated_at: '',
};

let nextId = 1;
const row = (name: string, type: string, extra: Partial<PipelineStepRow> = {}): PipelineStepRow => ({
  id: nextId++,
  pipeline_id: 1,
  name,
  step_type: type,
  sort_order: nextId * 10,
  enabled: 1,
  config: null,
  depends_on: null,
  created_at: '',
  updated_at: '',
  ...extra,
});

const reg = registry(
  plugin('scan', 'run'),
  plugin('setup', 'run'),
  plugin('work', 'document', { size: { type: 'integer', minimum: 50, default: 100 } }),
  plugin('optimize', 'run'),
);

/** The problems planning reports for `rows` (it fails the test when they plan). */
function problemsOf(rows: PipelineStepRow[]): string[] {
  try {
    buildPlan(config, rows, reg);
  } catch (error) {
    return (error as ConfigError).details.problems as string[];
  }
  throw new Error('planned');
}

describe('planning (pure)', () => {
  it('puts run steps before or after the documents by what they wait for, in a deterministic order', () => {
    const plan = buildPlan(
      config,
      [
        row('scan', 'scan'),
        row('b', 'work', { depends_on: '["scan"]' }),
        row('a', 'work', { depends_on: '["scan"]' }),
        row('setup', 'setup', { depends_on: '[]' }),
        row('join', 'work', { depends_on: '["a", "b", "setup"]' }),
        row('optimize', 'optimize', { depends_on: '["join"]' }),
      ],
      reg,
    );
    expect(plan.steps.map((s) => `${s.name}:${s.phase}`)).to.deep.equal([
      'scan:pre',
      'b:document',
      'a:document',
      'setup:pre',
      'join:document',
      'optimize:post',
    ]);
    expect(plan.byName.get('a')!.config).to.deep.equal({ size: 100 });
    expect(drawDag(plan)).to.contain('before the documents').and.to.contain('join (work)  <- a, b, setup');
  });

  it('skips disabled steps and chains the rest by sort order; an explicit dependency on a disabled step is an error', () => {
    const plan = buildPlan(
      config,
      [row('one', 'work'), row('off', 'work', { enabled: 0 }), row('two', 'work')],
      reg,
    );
    expect(plan.byName.get('two')!.dependsOn).to.deep.equal(['one']);
    expect(() =>
      buildPlan(
        config,
        [row('off', 'work', { enabled: 0 }), row('x', 'work', { depends_on: '["off"]' })],
        reg,
      ),
    ).to.throw(/depends_on names disabled step 'off'/);
  });

  it('refuses a document step that waits for a run step that waits for documents', () => {
    expect(() =>
      buildPlan(
        config,
        [
          row('w', 'work'),
          row('opt', 'optimize', { depends_on: '["w"]' }),
          row('late', 'work', { depends_on: '["opt"]' }),
        ],
        reg,
      ),
    ).to.throw(/a document step cannot depend on run step\(s\) opt/);
  });

  it('reports config problems with the row: range, type, JSON shape of depends_on', () => {
    try {
      buildPlan(
        config,
        [
          row('small', 'work', { id: 17, config: '{"size": 10}' }),
          row('deps', 'work', { id: 18, depends_on: '"small"' }),
        ],
        reg,
      );
      expect.fail('planned');
    } catch (error) {
      expect((error as Error).message).to.contain("pipeline_steps id=17 'small': config.size must be >= 50");
      expect((error as Error).message).to.contain(
        "pipeline_steps id=18 'deps': depends_on must be a JSON array of step names",
      );
    }
  });

  it('names the row and the plugin file when a step type has a config schema that does not compile', () => {
    const broken = plugin('broken');
    broken.configSchema = { type: 'object', properties: { size: { $ref: '#/definitions/missing' } } };
    try {
      buildPlan(config, [row('b', 'broken', { id: 31 })], registry(broken));
      expect.fail('planned');
    } catch (error) {
      expect((error as Error).message).to.contain(
        "pipeline_steps id=31 'b': step plugin broken.ts: configSchema does not compile",
      );
      expect((error as Error).message).to.contain('#/definitions/missing');
    }
  });

  it("checks a custom plugin's config schema against JSON Schema's meta-schema", () => {
    const custom = plugin('custom');
    custom.configSchema = { type: 'object', properties: { size: { type: 'integr' } } };
    const file = '/plugins/custom.ts';
    const reg: PluginRegistry = {
      get: (t) => (t === 'custom' ? { plugin: custom, source: file, file } : undefined),
      all: () => [{ plugin: custom, source: file, file }],
      problems: [],
    };
    expect(() => buildPlan(config, [row('c', 'custom', { id: 32 })], reg)).to.throw(
      /pipeline_steps id=32 'c': step plugin \/plugins\/custom\.ts: configSchema is not valid JSON Schema: .*type/,
    );
  });

  it("refuses a step that reads what a step of the pipeline writes but runs before it (plugins' reads/writes)", () => {
    const flow = registry(
      { ...plugin('cut'), writes: ['pieces'] },
      { ...plugin('vectors'), reads: ['pieces'], writes: ['vectors'] },
      { ...plugin('also_cut'), writes: ['pieces'] },
      plugin('other'),
    );
    const problem = (rows: PipelineStepRow[]) => {
      try {
        buildPlan(config, rows, flow);
        return undefined;
      } catch (error) {
        return (error as { details: { problems: string[] } }).details.problems;
      }
    };
    // in order, by sort_order or by depends_on (also through a step between them): fine
    expect(problem([row('cut', 'cut'), row('other', 'other'), row('vectors', 'vectors')])).to.equal(
      undefined,
    );
    expect(
      problem([
        row('cut', 'cut'),
        row('other', 'other', { depends_on: '["cut"]' }),
        row('vectors', 'vectors', { depends_on: '["other"]' }),
      ]),
    ).to.equal(undefined);
    // no step of the pipeline writes the kind: the data may come from an earlier run
    expect(problem([row('vectors', 'vectors')])).to.equal(undefined);
    // moved before its writer by a sort_order edit
    const cut = row('cut', 'cut', { sort_order: 30 });
    const vectors = row('vectors', 'vectors', { sort_order: 25 });
    expect(problem([vectors, cut].sort((a, b) => a.sort_order - b.sort_order))).to.deep.equal([
      `pipeline_steps id=${vectors.id} 'vectors': reads pieces, which 'cut' (pipeline_steps id=${cut.id}) writes, but does not run after it: give it a sort_order above 30, or set its depends_on to ["cut"]`,
    ]);
    // with depends_on that leaves the writer out; after one of two writers is enough
    const first = row('cut', 'cut');
    const second = row('also_cut', 'also_cut', { depends_on: '[]' });
    const reader = row('vectors', 'vectors', { depends_on: '[]' });
    expect(problem([first, second, reader])).to.deep.equal([
      `pipeline_steps id=${reader.id} 'vectors': reads pieces, which 'cut' (pipeline_steps id=${first.id}) or 'also_cut' (pipeline_steps id=${second.id}) write, but does not run after any of them: add "cut" to its depends_on`,
    ]);
    expect(problem([first, second, row('vectors', 'vectors', { depends_on: '["also_cut"]' })])).to.equal(
      undefined,
    );
  });

  it('refuses a pipeline without an enabled step: it would mark every queued document done untouched', () => {
    expect(() => buildPlan(config, [row('off', 'work', { enabled: 0 })], reg)).to.throw(
      /pipeline_configs id=1 'P': no enabled step \(all 1 have enabled = 0\)/,
    );
    expect(() => buildPlan(config, [], reg)).to.throw(/'P': no enabled step \(no rows in pipeline_steps\)/);
  });

  it('refuses a step that queues the documents anywhere but before every document step', () => {
    const queues: StepPlugin = { ...plugin('queue', 'run'), writes: ['documents'] };
    const withQueue = registry(queues, plugin('work', 'document'));
    // moved after the document steps by a sort_order edit: every run would queue nothing and end ok
    expect(() =>
      buildPlan(
        config,
        [row('work', 'work', { sort_order: 10 }), row('queue', 'queue', { id: 77, sort_order: 99 })],
        withQueue,
      ),
    ).to.throw(/pipeline_steps id=77 'queue': queues the documents .* runs after work/);
    const plan = buildPlan(
      config,
      [row('queue', 'queue', { sort_order: 1 }), row('work', 'work', { sort_order: 10 })],
      withQueue,
    );
    expect(plan.byName.get('queue')?.phase).to.equal('pre');
  });

  it("runs a plugin's own config checks at planning, naming the row, thrown or returned", () => {
    const checked: StepPlugin = {
      ...plugin('sized', 'document', {
        min: { type: 'integer', default: 0 },
        max: { type: 'integer', default: 10 },
      }),
      checkConfig: (c: { min: number; max: number }) =>
        c.min < c.max ? [] : [`config.min (${c.min}) must be below config.max (${c.max})`],
    };
    const throwing: StepPlugin = {
      ...plugin('prompted', 'document', { file: { type: 'string' } }),
      checkConfig: (c: { file?: string }) => {
        if (c.file) throw new Error(`prompt file ${c.file} cannot be read`);
        return [];
      },
    };
    const reg2 = registry(checked, throwing);
    try {
      buildPlan(
        config,
        [
          row('a', 'sized', { id: 31, config: '{"min": 20}' }),
          row('b', 'prompted', { id: 32, config: '{"file": "/nirgends.md"}' }),
        ],
        reg2,
      );
      expect.fail('planned');
    } catch (error) {
      expect((error as Error).message).to.contain(
        "pipeline_steps id=31 'a': config.min (20) must be below config.max (10)",
      );
      expect((error as Error).message).to.contain(
        "pipeline_steps id=32 'b': prompt file /nirgends.md cannot be read",
      );
    }
    // the defaults pass; the check sees them filled in
    expect(buildPlan(config, [row('a', 'sized'), row('b', 'prompted')], reg2).steps).to.have.length(2);
  });

  it('reads hand-edited rows as a user means them: BLOB JSON, trimmed names, deep nesting, flag values', () => {
    const blob = (text: string) => new TextEncoder().encode(text);
    const plan = buildPlan(
      config,
      [
        row('first', 'work', { config: blob('{"size": 60}') as unknown as string }),
        row('second ', 'work', { depends_on: blob('["first "]') as unknown as string }),
      ],
      reg,
    );
    expect(plan.byName.get('first')?.config).to.deep.equal({ size: 60 });
    expect(plan.byName.get('second')?.dependsOn).to.deep.equal(['first']);

    const deep = `{"x": ${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    expect(() => buildPlan(config, [row('deep', 'work', { id: 41, config: deep })], reg)).to.throw(
      /pipeline_steps id=41 'deep': config is nested more than 64 levels deep/,
    );
    expect(() => buildPlan({ ...config, is_default: 2 }, [row('x', 'work')], reg)).to.throw(
      /pipeline_configs id=1 'P': is_default must be 0 or 1 \(is 2\)/,
    );
  });

  it('reports a duplicate step name once, not also as a step that depends on itself', () => {
    try {
      buildPlan(config, [row('chunk', 'work', { id: 51 }), row('chunk', 'work', { id: 52 })], reg);
      expect.fail('planned');
    } catch (error) {
      const { problems } = (error as { details: { problems: string[] } }).details;
      expect(problems).to.deep.equal([
        "pipeline_steps id=52 'chunk': duplicate step name 'chunk' (also pipeline_steps id=51)",
      ]);
    }
  });

  it('reports a duplicate name between chained steps once, not also as a cycle', () => {
    // Standard with its chunk step renamed like extract: the step between the twins follows one and precedes the other
    const rows = [
      row('detect', 'scan'),
      row('extract', 'work'),
      row('structure', 'work'),
      row('extract', 'work', { id: 61 }),
      row('embed', 'work'),
    ];
    expect(problemsOf(rows)).to.deep.equal([
      `pipeline_steps id=61 'extract': duplicate step name 'extract' (also pipeline_steps id=${rows[1]!.id})`,
    ]);
    // a cycle of other steps beside a duplicate is still one
    const cyclic = [
      row('a', 'work', { depends_on: '["b"]' }),
      row('b', 'work', { depends_on: '["a"]' }),
      row('c', 'work', { id: 62 }),
      row('c', 'work', { id: 63 }),
    ];
    expect(problemsOf(cyclic)).to.deep.equal([
      "pipeline_steps id=63 'c': duplicate step name 'c' (also pipeline_steps id=62)",
      `pipeline 'P': steps form a cycle: a -> b -> a (pipeline_steps id=${cyclic[0]!.id}, id=${cyclic[1]!.id})`,
    ]);
  });

  it('reads a step name stored as a BLOB as its text, and refuses a step type stored so, naming the row', () => {
    const blob = (text: string) => new TextEncoder().encode(text) as unknown as string;
    const plan = buildPlan(
      config,
      [row(blob('chunky'), 'work'), row('next', 'work', { depends_on: '["chunky"]' })],
      reg,
    );
    expect(plan.steps.map((s) => s.name)).to.deep.equal(['chunky', 'next']);
    // a disabled one is named by its type when it has no name
    expect(
      problemsOf([
        row(null as unknown as string, blob('work'), { enabled: 0 }),
        row('next', 'work', { depends_on: '["work"]' }),
      ]),
    ).to.deep.equal([`pipeline_steps id=${nextId - 1} 'next': depends_on names disabled step 'work'`]);
    const typed = row(blob('chunky'), blob('work'), { id: 71 });
    expect(problemsOf([row('scan', 'scan'), typed])).to.deep.equal([
      "pipeline_steps id=71 'chunky': step_type must be text (is a BLOB, which SQL lookups of the step by its type do not find): store it as text, e.g. SET step_type = CAST(step_type AS TEXT)",
    ]);
  });

  it('takes a depends_on entry in another Unicode normalization (NFD, NFC) for the step it names', () => {
    const composed = 'Prüfung'.normalize('NFC');
    const decomposed = 'Prüfung'.normalize('NFD');
    for (const [name, entry] of [
      [composed, decomposed],
      [decomposed, composed],
    ]) {
      const plan = buildPlan(
        config,
        [row(name!, 'work'), row('next', 'work', { depends_on: JSON.stringify([entry]) })],
        reg,
      );
      expect(plan.byName.get('next')!.dependsOn).to.deep.equal([name]);
    }
    // a disabled step is found so too
    expect(() =>
      buildPlan(
        config,
        [
          row(composed, 'work', { enabled: 0 }),
          row('next', 'work', { depends_on: JSON.stringify([decomposed]) }),
        ],
        reg,
      ),
    ).to.throw(`depends_on names disabled step '${decomposed}'`);
  });

  it('names the step a depends_on entry differing in case or accents nearly matches', () => {
    const rows = [row('Prüfung', 'work'), row('next', 'work', { depends_on: '["prufung", "pruefung"]' })];
    const problems = (() => {
      try {
        buildPlan(config, rows, reg);
      } catch (error) {
        return (error as ConfigError).details.problems as string[];
      }
      throw new Error('planned');
    })();
    expect(problems.filter((p) => p.includes('depends_on'))).to.deep.equal([
      `pipeline_steps id=${rows[1]!.id} 'next': depends_on names unknown step 'prufung' (names are exact: did you mean 'Prüfung'?)`,
      `pipeline_steps id=${rows[1]!.id} 'next': depends_on names unknown step 'pruefung'`,
    ]);
  });

  it('refuses an archived pipeline', () => {
    expect(() => buildPlan({ ...config, status: 'archived' }, [row('x', 'work')], reg)).to.throw(
      /status is 'archived'/,
    );
  });
});

describe('describeError', () => {
  it('keeps the cause chain without repeating what the wrapper already says', () => {
    const inner = new Error('disk full');
    const outer = new Error('step failed: disk full', { cause: inner });
    expect(describeError(outer)).to.equal('step failed: disk full');
    const other = new Error('write failed', { cause: inner });
    expect(describeError(other)).to.equal('write failed <- caused by: disk full');
  });
});
