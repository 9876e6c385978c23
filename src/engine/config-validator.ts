import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

// One compiler for step configs. A schema is compiled when it is first needed, once per process: planning compiles
// the schemas of the step types its rows use and validates the rows with them (defaults filled in, all errors
// reported); `cpe steps` compiles every plugin's. Loading the plugins does not: compiling the 25 built-in schemas
// took ~150 ms of every command's start, most of them for steps the command never runs.
const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });
(addFormats as unknown as (a: Ajv) => void)(ajv);
const validators = new WeakMap<object, ValidateFunction>();

/** The compiled validator of a step's config schema; throws when the schema does not compile. */
export function configValidator(schema: object): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    validators.set(schema, validate);
  }
  return validate;
}

/** Why a step's config schema does not compile ('configSchema does not compile: ...'), or undefined when it does. */
export function configSchemaProblem(schema: object): string | undefined {
  try {
    configValidator(schema);
    return undefined;
  } catch (error) {
    return `configSchema does not compile: ${(error as Error).message}`;
  }
}
