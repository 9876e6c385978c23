import type { ErrorObject } from 'ajv';
import { foldName } from '../db/collation.js';
import type { PipelineConfigRow, PipelineStepRow } from '../db/entities.js';
import type { SqlExecutor } from '../db/sql.js';
import { ConfigError, ErrorCodes } from '../errors.js';
import { shortHash } from '../util/hash.js';
import { configSchemaProblem, configValidator } from './config-validator.js';
import { QUEUES_DOCUMENTS, type StepPlugin, type StepScope } from './plugin.js';
import type { PluginRegistry } from './registry.js';

export type StepPhase = 'pre' | 'document' | 'post';

export interface PlannedStep {
  /** pipeline_steps.id */
  id: number;
  name: string;
  type: string;
  scope: StepScope;
  plugin: StepPlugin;
  sortOrder: number;
  /** validated config with defaults filled (frozen) */
  config: Readonly<Record<string, unknown>>;
  /** names of the steps this one waits for */
  dependsOn: readonly string[];
  /** pre: run-scoped before documents; document: per document; post: run-scoped after documents */
  phase: StepPhase;
  /** hash of type + config + the lineage of document steps upstream: a checkpoint is valid while it matches */
  lineageHash: string;
}

export interface Plan {
  pipeline: { id: number; name: string; description: string | null; isDefault: boolean; status: string };
  /** every enabled step in deterministic topological order (ties broken by sort_order, then name) */
  steps: readonly PlannedStep[];
  byName: ReadonlyMap<string, PlannedStep>;
  /** hash of the effective steps and configs */
  versionHash: string;
  hasStepType(type: string): boolean;
}

/** ajv error -> 'config.chunk_size must be >= 50' */
export function describeConfigError(error: ErrorObject): string {
  const at = `config${error.instancePath.replace(/\/(\d+)/g, '[$1]').replace(/\//g, '.')}`;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `${at}.${params.missingProperty} is required`;
    case 'additionalProperties':
      return `${at} has unknown key '${params.additionalProperty}'`;
    case 'enum':
      return `${at} must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return `${at} ${error.message}`;
  }
}

const truthy = (v: unknown) => v === true || v === 1 || v === '1' || v === 1n;
/** 0 or 1 as SQL and the drivers give them; anything else in an edited flag column is an error, not "off" */
const isFlag = (v: unknown) => truthy(v) || v === false || v === 0 || v === '0' || v === 0n;

/**
 * Loads a pipeline by name (or the default one), resolves and validates every step, and builds a frozen plan.
 * All problems are collected and reported at once, each naming its row.
 */
export async function planPipeline(db: SqlExecutor, registry: PluginRegistry, name?: string): Promise<Plan> {
  // MariaDB compares names without case, accents and trailing spaces: the exact name is what counts, on both
  const configs = name
    ? (await db.query<PipelineConfigRow>('SELECT * FROM pipeline_configs WHERE name = ?', [name])).filter(
        (c) => c.name === name,
      )
    : await db.query<PipelineConfigRow>(
        "SELECT * FROM pipeline_configs WHERE is_default = 1 AND status = 'active' ORDER BY id",
      );
  if (configs.length === 0) {
    const known = (await db.query<{ name: string }>('SELECT name FROM pipeline_configs ORDER BY name')).map(
      (r) => r.name,
    );
    const alike = name ? known.filter((k) => foldName(k) === foldName(name)) : [];
    // a flag edited to 2 or 'yes' marks nothing: name the rows, or the user looks for the wrong cause
    const badFlags = name
      ? []
      : (
          await db.query<{ id: number; name: string; is_default: unknown }>(
            'SELECT id, name, is_default FROM pipeline_configs ORDER BY id',
          )
        ).filter((r) => !isFlag(r.is_default));
    const flagged = badFlags
      .map((r) => `pipeline_configs id=${r.id} '${r.name}' has is_default = ${JSON.stringify(r.is_default)}`)
      .join('; ');
    const what = name
      ? `pipeline '${name}' not found${alike.length ? ` (names are exact: did you mean '${alike[0]}'?)` : ''}`
      : `no default pipeline (none has is_default = 1 and status active${flagged ? `; ${flagged}, which must be 0 or 1` : ''})`;
    throw new ConfigError(
      ErrorCodes.PIPELINE_NOT_FOUND,
      `${what}; known pipelines: ${known.length ? known.join(', ') : '(none: run `cpe db seed`)'}`,
    );
  }
  if (!name && configs.length > 1) {
    throw new ConfigError(
      ErrorCodes.PIPELINE_INVALID,
      `more than one default pipeline: ${configs.map((c) => `'${c.name}' (id=${c.id})`).join(', ')}; set is_default = 0 on all but one`,
    );
  }
  const config = configs[0]!;
  const rows = await db.query<PipelineStepRow>(
    'SELECT * FROM pipeline_steps WHERE pipeline_id = ? ORDER BY sort_order, id',
    [config.id],
  );
  return buildPlan(config, rows, registry);
}

const hasDependsOn = (row: PipelineStepRow): boolean => {
  const text = columnText(row.depends_on);
  return text !== undefined ? text.trim() !== '' : row.depends_on !== null && row.depends_on !== undefined;
};

/**
 * A JSON column's text: a string, or bytes (a value stored as a BLOB by a hand edit, `CAST(... AS BLOB)`, comes
 * back as a Buffer) read as UTF-8; undefined for NULL or a value a driver parsed already.
 */
function columnText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return new TextDecoder().decode(value);
  return undefined;
}

/** Levels of arrays and objects a step's config may have: far more than any schema uses. */
const MAX_CONFIG_DEPTH = 64;

/** Whether a parsed JSON value nests arrays or objects deeper than `limit` (iterative: any depth is safe). */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * Steps that read a kind of data (the plugins' `reads`) which other steps of the pipeline write (`writes`), but
 * run after none of them: "embed" moved before "chunk" by a sort_order edit would find no chunks, and the run would
 * end ok with nothing embedded. `order` is topological, so a step's upstream is known when it is reached.
 */
function dataFlowProblems<
  D extends { name: string; plugin?: StepPlugin; dependsOn: string[]; row: PipelineStepRow },
>(order: readonly D[], label: (row: PipelineStepRow) => string): string[] {
  const problems: string[] = [];
  const upstream = new Map<string, Set<string>>();
  for (const step of order) {
    const above = new Set<string>();
    for (const dep of step.dependsOn) {
      above.add(dep);
      for (const further of upstream.get(dep) ?? []) above.add(further);
    }
    upstream.set(step.name, above);
  }
  for (const step of order) {
    for (const kind of step.plugin?.reads ?? []) {
      const writers = order.filter((w) => w !== step && w.plugin?.writes?.includes(kind));
      if (writers.length === 0 || writers.some((w) => upstream.get(step.name)!.has(w.name))) continue;
      const named = writers.map((w) => `'${w.name}' (pipeline_steps id=${w.row.id})`).join(' or ');
      const many = writers.length > 1;
      const first = `"${writers[0]!.name}"`;
      // without depends_on a step follows the one before it in sort_order; with it, only the steps it names
      const fix = hasDependsOn(step.row)
        ? `add ${first} to its depends_on`
        : `give it a sort_order above ${many ? 'one of theirs' : `${writers[0]!.row.sort_order}`}, or set its depends_on to [${first}]`;
      problems.push(
        `${label(step.row)}: reads ${kind}, which ${named} ${many ? 'write' : 'writes'}, but does not run after ${many ? 'any of them' : 'it'}: ${fix}`,
      );
    }
  }
  return problems;
}

/** The pure part of planning: rows in, plan (or a ConfigError listing every problem) out. */
export function buildPlan(
  config: PipelineConfigRow,
  rows: PipelineStepRow[],
  registry: PluginRegistry,
): Plan {
  const problems: string[] = [...registry.problems];
  // a name or type stored as a BLOB by a hand edit (`CAST('chunky' AS BLOB)`) is read as its UTF-8 text, as config
  // and depends_on are; a BLOB type is refused for an enabled step below
  const nameOf = (row: PipelineStepRow) => columnText(row.name);
  const typeOf = (row: PipelineStepRow) => columnText(row.step_type) ?? String(row.step_type);
  const label = (row: PipelineStepRow) => `pipeline_steps id=${row.id} '${nameOf(row) ?? typeOf(row)}'`;
  if (!isFlag(config.is_default))
    problems.push(
      `pipeline_configs id=${config.id} '${config.name}': is_default must be 0 or 1 (is ${JSON.stringify(config.is_default)})`,
    );
  if (config.status !== 'active') {
    problems.push(
      `pipeline_configs id=${config.id} '${config.name}': status is '${config.status}'; only active pipelines run`,
    );
  }

  interface Draft extends Omit<PlannedStep, 'phase' | 'lineageHash' | 'dependsOn'> {
    dependsOn: string[];
    row: PipelineStepRow;
  }
  const drafts: Draft[] = [];
  for (const row of rows)
    if (!isFlag(row.enabled))
      problems.push(`${label(row)}: enabled must be 0 or 1 (is ${JSON.stringify(row.enabled)})`);
  const enabledRows = rows.filter((r) => truthy(r.enabled));
  // with no step, every queued document would be marked done with nothing done to it
  if (enabledRows.length === 0)
    problems.push(
      `pipeline_configs id=${config.id} '${config.name}': no enabled step (${rows.length ? `all ${rows.length} have enabled = 0` : 'no rows in pipeline_steps'})`,
    );
  // in NFC, as depends_on entries are compared (see byNormalName)
  const disabledNames = new Set(
    rows.filter((r) => !truthy(r.enabled)).map((r) => (nameOf(r) ?? typeOf(r)).normalize('NFC')),
  );
  const seen = new Map<string, PipelineStepRow>();
  const folded = new Map<string, { name: string; row: PipelineStepRow }>();
  let previous: string | undefined;

  for (const row of enabledRows) {
    const stepName = (nameOf(row) ?? '').trim() || typeOf(row);
    const other = seen.get(stepName);
    const alike = folded.get(foldName(stepName));
    if (other)
      problems.push(`${label(row)}: duplicate step name '${stepName}' (also pipeline_steps id=${other.id})`);
    else if (alike)
      problems.push(
        `${label(row)}: step name '${stepName}' differs from '${alike.name}' (pipeline_steps id=${alike.row.id}) only in case, accents or trailing spaces, which MariaDB takes for the same name: rename one`,
      );
    seen.set(stepName, row);
    folded.set(foldName(stepName), { name: stepName, row });

    // Other commands look steps up by type in SQL (search finds the embed step's collection so), where a BLOB never
    // equals a text: a step whose type is one would run here and be missing there.
    const typeIsBlob = (row.step_type as unknown) instanceof Uint8Array;
    if (typeIsBlob)
      problems.push(
        `${label(row)}: step_type must be text (is a BLOB, which SQL lookups of the step by its type do not find): store it as text, e.g. SET step_type = CAST(step_type AS TEXT)`,
      );
    const registered = typeIsBlob ? undefined : registry.get(row.step_type);
    if (!registered && !typeIsBlob) {
      const known = registry
        .all()
        .map((r) => r.plugin.type)
        .join(', ');
      problems.push(
        `${label(row)}: unknown step type '${row.step_type}' (known types: ${known}; a step of your own is ` +
          `found in a folder that CPE_PLUGIN_DIRS or the config file's "plugins" names)`,
      );
    }

    let rawConfig: unknown = {};
    const configText = columnText(row.config);
    if (configText !== undefined && configText.trim() !== '') {
      try {
        rawConfig = JSON.parse(configText);
      } catch (error) {
        problems.push(`${label(row)}: config is not valid JSON (${(error as Error).message})`);
        rawConfig = undefined;
      }
    } else if (configText === undefined && row.config !== null && row.config !== undefined) {
      rawConfig = row.config; // a driver that parsed a JSON column already
    }
    if (
      rawConfig !== undefined &&
      (rawConfig === null || typeof rawConfig !== 'object' || Array.isArray(rawConfig))
    ) {
      problems.push(`${label(row)}: config must be a JSON object`);
      rawConfig = undefined;
    } else if (rawConfig !== undefined && nestedDeeperThan(rawConfig, MAX_CONFIG_DEPTH)) {
      // copying and validating it would recurse that deep (a stack overflow, and no row named)
      problems.push(`${label(row)}: config is nested more than ${MAX_CONFIG_DEPTH} levels deep`);
      rawConfig = undefined;
    }
    let effective: Record<string, unknown> = {};
    if (registered && rawConfig !== undefined) {
      effective = structuredClone(rawConfig as Record<string, unknown>);
      const schemaProblem = configSchemaProblem(registered.plugin.configSchema, {
        againstMetaSchema: registered.source !== 'builtin',
      });
      if (schemaProblem) {
        problems.push(`${label(row)}: step plugin ${registered.file}: ${schemaProblem}`);
      } else {
        const validate = configValidator(registered.plugin.configSchema);
        if (!validate(effective)) {
          for (const error of validate.errors ?? [])
            problems.push(`${label(row)}: ${describeConfigError(error)}`);
        } else {
          for (const problem of configChecks(registered.plugin, effective))
            problems.push(`${label(row)}: ${problem}`);
        }
      }
    }

    let dependsOn: string[] = previous ? [previous] : [];
    if (hasDependsOn(row)) {
      try {
        const text = columnText(row.depends_on);
        const parsed = text !== undefined ? JSON.parse(text) : row.depends_on;
        if (!Array.isArray(parsed) || !parsed.every((d) => typeof d === 'string')) {
          problems.push(`${label(row)}: depends_on must be a JSON array of step names, e.g. ["chunk"]`);
        } else {
          // names are read trimmed, as the steps' own names are
          dependsOn = [...new Set((parsed as string[]).map((d) => d.trim()))];
        }
      } catch (error) {
        problems.push(`${label(row)}: depends_on is not valid JSON (${(error as Error).message})`);
      }
    }
    if (
      !Number.isInteger(Number(row.sort_order)) ||
      row.sort_order === null ||
      String(row.sort_order).trim() === ''
    )
      problems.push(
        `${label(row)}: sort_order must be a whole number (is ${JSON.stringify(row.sort_order)})`,
      );
    previous = stepName;
    drafts.push({
      id: row.id,
      name: stepName,
      type: typeOf(row),
      scope: registered?.plugin.scope ?? 'document',
      plugin: registered?.plugin as StepPlugin,
      sortOrder: Number(row.sort_order),
      config: effective,
      dependsOn,
      row,
    });
  }

  const byName = new Map(drafts.map((d) => [d.name, d]));
  // a name in another Unicode normalization is the same name: "Prüfung" pasted from a PDF or a macOS app comes
  // decomposed (NFD), typed composed (NFC), and the two look alike everywhere but in a comparison
  const byNormalName = new Map(drafts.map((d) => [d.name.normalize('NFC'), d.name]));
  for (const draft of drafts)
    draft.dependsOn = [
      ...new Set(draft.dependsOn.map((dep) => byNormalName.get(dep.normalize('NFC')) ?? dep)),
    ];
  for (const draft of drafts) {
    for (const dep of draft.dependsOn) {
      // a duplicate name follows its twin in sort_order without naming it: the duplicate is the problem then
      if (dep === draft.name) {
        if (hasDependsOn(draft.row)) problems.push(`${label(draft.row)}: depends on itself`);
      } else if (disabledNames.has(dep.normalize('NFC')) && !byName.has(dep))
        problems.push(`${label(draft.row)}: depends_on names disabled step '${dep}'`);
      else if (!byName.has(dep))
        problems.push(`${label(draft.row)}: depends_on names unknown step '${dep}'${nearName(dep, drafts)}`);
    }
  }

  // Kahn's algorithm; ready steps are taken in (sort_order, name) order so the plan is deterministic. A step named
  // like one before it (a duplicate, refused above) is left out: its name stands for the first, and the steps that
  // follow one twin and precede the other are no cycle.
  const distinct = drafts.filter((d, i) => drafts.findIndex((x) => x.name === d.name) === i);
  const order: Draft[] = [];
  const remaining = new Map(
    distinct.map((d) => [d.name, d.dependsOn.filter((x) => byName.has(x) && x !== d.name).length]),
  );
  const ready = distinct.filter((d) => remaining.get(d.name) === 0);
  const byOrder = (a: Draft, b: Draft) => a.sortOrder - b.sortOrder || a.name.localeCompare(b.name);
  while (ready.length > 0) {
    ready.sort(byOrder);
    const next = ready.shift()!;
    order.push(next);
    for (const d of distinct) {
      if (d.dependsOn.includes(next.name)) {
        const left = remaining.get(d.name)! - 1;
        remaining.set(d.name, left);
        if (left === 0) ready.push(d);
      }
    }
  }
  if (order.length < distinct.length) {
    const stuck = distinct.filter((d) => !order.includes(d));
    problems.push(`pipeline '${config.name}': steps form a cycle: ${describeCycle(stuck)}`);
  } else {
    problems.push(...dataFlowProblems(order, label));
  }

  // Phases: run-scoped steps that need no document step run before the documents, the others after.
  const phase = new Map<string, StepPhase>();
  for (const d of order) {
    if (d.scope === 'document') {
      const blocked = d.dependsOn.filter((x) => phase.get(x) === 'post');
      if (blocked.length) {
        problems.push(
          `${label(d.row)}: a document step cannot depend on run step(s) ${blocked.join(', ')} that wait for documents`,
        );
      }
      phase.set(d.name, 'document');
    } else {
      const after = d.dependsOn.some((x) => phase.get(x) !== 'pre');
      phase.set(d.name, after ? 'post' : 'pre');
      // it would run once the documents are done, and they are the ones it was to queue: none, every run
      if (after && d.plugin?.writes?.includes(QUEUES_DOCUMENTS))
        problems.push(
          `${label(d.row)}: queues the documents the document steps work on, so it must run before all of them, but it runs after ${d.dependsOn.join(', ')}: give it the lowest sort_order and no depends_on`,
        );
    }
  }

  if (problems.length > 0) {
    throw new ConfigError(
      ErrorCodes.PIPELINE_INVALID,
      `pipeline '${config.name}' is invalid:\n  ${problems.join('\n  ')}`,
      {
        details: { problems, pipeline: config.name },
      },
    );
  }

  const lineage = new Map<string, string>();
  const steps: PlannedStep[] = order.map((d) => {
    const upstream = d.dependsOn.filter((x) => phase.get(x) === 'document').map((x) => lineage.get(x)!);
    const lineageHash = shortHash({ type: d.type, config: d.config, upstream: upstream.sort() });
    lineage.set(d.name, lineageHash);
    return Object.freeze({
      id: d.id,
      name: d.name,
      type: d.type,
      scope: d.scope,
      plugin: d.plugin,
      sortOrder: d.sortOrder,
      config: deepFreeze(d.config),
      dependsOn: Object.freeze([...d.dependsOn]),
      phase: phase.get(d.name)!,
      lineageHash,
    });
  });
  const versionHash = shortHash(
    steps.map((s) => ({ name: s.name, type: s.type, config: s.config, dependsOn: s.dependsOn })),
  );
  const types = new Set(steps.map((s) => s.type));
  return Object.freeze({
    pipeline: {
      id: config.id,
      name: config.name,
      description: config.description,
      isDefault: truthy(config.is_default),
      status: config.status,
    },
    steps: Object.freeze(steps),
    byName: new Map(steps.map((s) => [s.name, s])),
    versionHash,
    hasStepType: (type: string) => types.has(type),
  });
}

/** The plugin's own checks of a config (StepPlugin.checkConfig); one that throws is a problem of the row too. */
function configChecks(plugin: StepPlugin, config: Record<string, unknown>): readonly string[] {
  if (!plugin.checkConfig) return [];
  try {
    return plugin.checkConfig(config);
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
}

/** For a depends_on entry that names no step: the step it names but for case and accents, as a hint. */
function nearName(dep: string, steps: ReadonlyArray<{ name: string }>): string {
  const near = steps.find((s) => foldName(s.name) === foldName(dep));
  return near ? ` (names are exact: did you mean '${near.name}'?)` : '';
}

function describeCycle(stuck: Array<{ id: number; name: string; dependsOn: string[] }>): string {
  // walk dependencies inside the stuck set until a name repeats
  const names = new Set(stuck.map((s) => s.name));
  const deps = new Map(stuck.map((s) => [s.name, s.dependsOn.filter((d) => names.has(d))]));
  const path: string[] = [];
  let current = stuck.map((s) => s.name).sort()[0]!;
  while (!path.includes(current)) {
    path.push(current);
    current = deps.get(current)![0] ?? current;
  }
  const cycle = [...path.slice(path.indexOf(current)), current].reverse();
  const ids = new Map(stuck.map((s) => [s.name, s.id]));
  const rows = [...new Set(cycle)].map((name) => `id=${ids.get(name)}`).join(', ');
  return `${cycle.join(' -> ')} (pipeline_steps ${rows})`;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
