/**
 * JSON Schema validators, made by ajv: cpe's configuration, the step plugins' config schemas and structured LLM
 * answers. ajv turns a schema into JavaScript when it is first needed; for cpe's own schemas the built package
 * carries that code already (`npm run build` writes it with scripts/build-validators.ts into dist/validators/,
 * paths.ts: generatedValidatorsDir), so that a command neither loads ajv nor runs its compiler: loading ajv was
 * ~35-50 ms of every command's start, the configuration's schema ~15-25 ms more, and the Standard pipeline's five
 * step schemas ~25 ms of each run's planning. A schema without generated code (a custom plugin's, an LLM
 * answer's, any schema when cpe runs from its TypeScript sources, or one changed since the build) is compiled
 * here, ajv loaded then.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Ajv, Options, ValidateFunction } from 'ajv';
import { generatedValidatorsDir } from '../paths.js';
import { sha256 } from './hash.js';

/** How each kind of schema is compiled: ajv's options, and whether string formats (uri, date-time, ...) are known. */
export const VALIDATOR_KINDS = {
  /** cpe's configuration (src/config/schema.ts); checked against the meta-schema by a test, not on every start */
  config: { options: { allErrors: true, validateSchema: false }, formats: false },
  /** a step plugin's configSchema: defaults filled in, every error reported (see engine/config-validator.ts) */
  stepConfig: {
    options: { allErrors: true, useDefaults: true, strict: false, validateSchema: false },
    formats: true,
  },
  /** the schema a structured LLM answer must match (llm/structured.ts) */
  llmAnswer: { options: { allErrors: true, strict: false }, formats: true },
} as const satisfies Record<string, { options: Options; formats: boolean }>;

export type ValidatorKind = keyof typeof VALIDATOR_KINDS;

const requireHere = createRequire(import.meta.url);

/** The file of a schema's generated validator: its kind and a hash of its JSON, so a changed schema misses it. */
export const generatedValidatorFile = (kind: ValidatorKind, schema: object): string =>
  `${kind}-${sha256(JSON.stringify(schema)).slice(0, 32)}.cjs`;

/**
 * The JSON Schema versions a schema may name with `$schema`, and the ajv module that validates each. draft-07 is
 * ajv's own and the default; the others are loaded only when a schema names them (loading the 2020-12 one and
 * compiling its meta-schema is ~150 ms, paid by the plugins that ask for it).
 */
const SCHEMA_VERSIONS: Record<string, string> = {
  'http://json-schema.org/draft-07/schema': 'ajv',
  'https://json-schema.org/draft/2019-09/schema': 'ajv/dist/2019',
  'https://json-schema.org/draft/2020-12/schema': 'ajv/dist/2020',
};

/** The ajv module for the version `schema` names with `$schema`; throws, naming it, for one cpe does not know. */
function ajvModuleFor(schema: object | undefined): string {
  const named = (schema as { $schema?: unknown } | undefined)?.$schema;
  if (named === undefined) return 'ajv';
  const module = typeof named === 'string' ? SCHEMA_VERSIONS[named.replace(/#$/, '')] : undefined;
  if (!module)
    throw new Error(
      `$schema ${JSON.stringify(named)} is not a JSON Schema version cpe knows (${Object.keys(SCHEMA_VERSIONS).join(', ')}; none means draft-07)`,
    );
  return module;
}

/** A new ajv instance for a kind and an ajv module (ajv and ajv-formats are loaded by the first call). */
function newAjv(kind: ValidatorKind, extra: Options = {}, module = 'ajv'): Ajv {
  const { default: AjvClass } = requireHere(module) as { default: typeof import('ajv').Ajv };
  const ajv = new AjvClass({ ...VALIDATOR_KINDS[kind].options, ...extra });
  if (VALIDATOR_KINDS[kind].formats) (requireHere('ajv-formats') as (instance: Ajv) => Ajv)(ajv);
  return ajv;
}

const instances = new Map<string, Ajv>();

/**
 * The shared ajv instance of a kind, made on first use: for compiling, checking schemas and error texts. Given a
 * schema, the instance for the JSON Schema version it names with `$schema` (throws for one cpe does not know).
 */
export function ajvFor(kind: ValidatorKind, schema?: object): Ajv {
  const module = ajvModuleFor(schema);
  const key = `${kind} ${module}`;
  let ajv = instances.get(key);
  if (!ajv) {
    ajv = newAjv(kind, {}, module);
    instances.set(key, ajv);
  }
  return ajv;
}

/**
 * Compiles a schema. ajv keeps every `$id` it compiled and refuses a second schema with the same one, so a schema
 * that declares an `$id` is compiled by an ajv instance of its own (~1 ms): two plugins may share an `$id`, and
 * whether one's schema compiles does not depend on which was compiled first. Any other schema leaves nothing
 * behind in the shared instance.
 */
function compileSchema(kind: ValidatorKind, schema: object): ValidateFunction {
  const declaresId = JSON.stringify(schema).includes('"$id"');
  const ajv = declaresId ? newAjv(kind, {}, ajvModuleFor(schema)) : ajvFor(kind, schema);
  return ajv.compile(schema);
}

const compiled = new WeakMap<object, Map<ValidatorKind, ValidateFunction>>();

/**
 * The validator of a schema, once per schema object and kind: the build's generated code when there is one for
 * exactly this schema, else compiled now. Throws what ajv throws for a schema that does not compile.
 */
export function schemaValidator(
  kind: ValidatorKind,
  schema: object,
  generatedDir: string | undefined = generatedValidatorsDir,
): ValidateFunction {
  const byKind = compiled.get(schema) ?? new Map<ValidatorKind, ValidateFunction>();
  let validate = byKind.get(kind);
  if (validate) return validate;
  const file = generatedDir && path.join(generatedDir, generatedValidatorFile(kind, schema));
  validate = file && existsSync(file) ? (requireHere(file) as ValidateFunction) : compileSchema(kind, schema);
  byKind.set(kind, validate);
  compiled.set(schema, byKind);
  return validate;
}

/**
 * The CommonJS module of a schema's validator, as ajv's standalone code: what the build writes for cpe's own
 * schemas (generatedValidatorFile names it). It requires only ajv's small runtime helpers and ajv-formats' formats.
 */
export function validatorModuleCode(kind: ValidatorKind, schema: object): string {
  const ajv = newAjv(kind, { code: { source: true } }, ajvModuleFor(schema));
  const { default: standaloneCode } = requireHere('ajv/dist/standalone') as {
    default: (instance: Ajv, validate: ValidateFunction) => string;
  };
  return standaloneCode(ajv, ajv.compile(schema));
}
