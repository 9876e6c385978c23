import type { ValidateFunction } from 'ajv';
import { ajvFor, schemaValidator } from '../util/schema-validators.js';

// One compiler for step configs. A schema is compiled when it is first needed, once per process: planning compiles
// the schemas of the step types its rows use and validates the rows with them (defaults filled in, all errors
// reported); `cpe steps` compiles every plugin's. Loading the plugins does not: compiling the 25 built-in schemas
// took ~150 ms of every command's start, most of them for steps the command never runs.
// The check against JSON Schema's meta-schema is configSchemaProblem's, asked for where a schema may be wrong: a
// custom plugin's, and every schema for `cpe steps` and the tests. The built-in schemas are checked by the tests,
// not on every run (compiling the meta-schema was ~30 ms of each `cpe run`'s start). The built package carries the
// built-in schemas' validators as code (util/schema-validators.ts): then planning compiles nothing.

/** The validator of a step's config schema (ajv options: VALIDATOR_KINDS.stepConfig); throws when it does not compile. */
export const configValidator = (schema: object): ValidateFunction => schemaValidator('stepConfig', schema);

/**
 * What is wrong with a step's config schema ('configSchema is not valid JSON Schema: ...', 'configSchema does not
 * compile: ...'), or undefined. `againstMetaSchema: false` only compiles it (for the built-in steps' schemas).
 * The meta-schema is that of the JSON Schema version the schema names with `$schema` (draft-07, 2019-09, 2020-12;
 * draft-07 when it names none); naming another is a problem of the schema like any other, not a crash of the
 * command that met it.
 */
export function configSchemaProblem(
  schema: object,
  { againstMetaSchema = true }: { againstMetaSchema?: boolean } = {},
): string | undefined {
  if (againstMetaSchema) {
    const problem = metaSchemaProblem(schema);
    if (problem) return `configSchema is not valid JSON Schema: ${problem}`;
  }
  try {
    configValidator(schema);
    return undefined;
  } catch (error) {
    return `configSchema does not compile: ${(error as Error).message}`;
  }
}

/** What keeps a schema from matching its version's meta-schema; ajv throws for a `$schema` it does not know. */
function metaSchemaProblem(schema: object): string | undefined {
  try {
    const ajv = ajvFor('stepConfig', schema);
    return ajv.validateSchema(schema) ? undefined : ajv.errorsText(ajv.errors);
  } catch (error) {
    return (error as Error).message;
  }
}
