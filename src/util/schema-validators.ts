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

/** A new ajv instance for a kind (ajv and ajv-formats are loaded by the first call). */
function newAjv(kind: ValidatorKind, extra: Options = {}): Ajv {
  const { Ajv } = requireHere('ajv') as typeof import('ajv');
  const ajv = new Ajv({ ...VALIDATOR_KINDS[kind].options, ...extra });
  if (VALIDATOR_KINDS[kind].formats) (requireHere('ajv-formats') as (instance: Ajv) => Ajv)(ajv);
  return ajv;
}

const instances = new Map<ValidatorKind, Ajv>();

/** The shared ajv instance of a kind, made on first use: for compiling, checking schemas and error texts. */
export function ajvFor(kind: ValidatorKind): Ajv {
  let ajv = instances.get(kind);
  if (!ajv) {
    ajv = newAjv(kind);
    instances.set(kind, ajv);
  }
  return ajv;
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
  validate =
    file && existsSync(file) ? (requireHere(file) as ValidateFunction) : ajvFor(kind).compile(schema);
  byKind.set(kind, validate);
  compiled.set(schema, byKind);
  return validate;
}

/**
 * The CommonJS module of a schema's validator, as ajv's standalone code: what the build writes for cpe's own
 * schemas (generatedValidatorFile names it). It requires only ajv's small runtime helpers and ajv-formats' formats.
 */
export function validatorModuleCode(kind: ValidatorKind, schema: object): string {
  const ajv = newAjv(kind, { code: { source: true } });
  const { default: standaloneCode } = requireHere('ajv/dist/standalone') as {
    default: (instance: Ajv, validate: ValidateFunction) => string;
  };
  return standaloneCode(ajv, ajv.compile(schema));
}
