import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

// One compiler for step configs: the registry compiles each plugin's schema when it loads the plugin (a schema that
// does not compile breaks the contract), and planning validates rows with the same compiled function (defaults
// filled in, all errors reported). A schema is compiled once per process.
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
