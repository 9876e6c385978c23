import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import { expect } from 'chai';
import { ownSchemas, writeValidators } from '../../../scripts/build-validators.js';
import { packageRoot } from '../../../src/paths.js';
import {
  ajvFor,
  generatedValidatorFile,
  schemaValidator,
  type ValidatorKind,
} from '../../../src/util/schema-validators.js';

/**
 * A scratch folder inside the package: a generated module requires ajv's runtime helpers, which resolve from the
 * package's node_modules as they do from dist/validators.
 */
function scratchDir(): string {
  const parent = path.join(packageRoot, 'node_modules', '.cache');
  mkdirSync(parent, { recursive: true });
  return mkdtempSync(path.join(parent, 'cpe-validators-'));
}

/** A value of the wrong JSON type for a property schema (a string where a number is wanted, else a number). */
const wrongValue = (property: { type?: unknown }): unknown =>
  property.type === 'string' || (Array.isArray(property.type) && property.type.includes('string')) ? 42 : 'x';

/** Inputs that take a schema's validator through defaults, its errors and unknown keys. */
function samples(schema: { properties?: Record<string, { type?: unknown }> }): unknown[] {
  const properties = Object.entries(schema.properties ?? {});
  return [
    {},
    { not_a_key: true },
    Object.fromEntries(properties.map(([key, property]) => [key, wrongValue(property)])),
    ...properties.map(([key, property]) => ({ [key]: wrongValue(property) })),
    'not an object',
  ];
}

/** What a validation did: its verdict, the data after it (defaults filled in) and its errors. */
function outcome(validate: ValidateFunction, input: unknown) {
  const data = structuredClone(input);
  const valid = validate(data);
  const errors = (validate.errors ?? []).map(({ instancePath, keyword, params, message }) => ({
    instancePath,
    keyword,
    params,
    message,
  }));
  return { valid, data, errors };
}

describe('util/schema-validators', () => {
  let dir: string;
  let written: string[];
  let schemas: Array<{ kind: ValidatorKind; name: string; schema: object }>;
  before(async () => {
    dir = scratchDir();
    written = await writeValidators(dir);
    schemas = await ownSchemas();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("writes a module for cpe's configuration and every built-in step's config schema", () => {
    expect(schemas.filter((s) => s.kind === 'config')).to.have.length(1);
    expect(schemas.filter((s) => s.kind === 'stepConfig').length).to.be.greaterThan(20);
    const files = new Set(schemas.map((s) => path.join(dir, generatedValidatorFile(s.kind, s.schema))));
    expect(new Set(written)).to.deep.equal(files);
  });

  it('the generated validators decide, fill in defaults and report errors exactly as the compiled ones', () => {
    for (const { kind, name, schema } of schemas) {
      // copies: the schema objects themselves may have validators cached already
      const generated = schemaValidator(kind, structuredClone(schema), dir);
      const compiled = ajvFor(kind).compile(structuredClone(schema));
      expect(generated, name).not.to.equal(compiled);
      for (const input of samples(schema)) {
        expect(outcome(generated, input), `${name}: ${JSON.stringify(input)}`).to.deep.equal(
          outcome(compiled, input),
        );
      }
    }
  });

  it("uses a schema's generated module when there is one, and compiles a schema that has none (changed since the build)", () => {
    const schema = { type: 'object', properties: { n: { type: 'integer', default: 3 } } };
    const other = scratchDir();
    try {
      // a module that says so, to tell it from ajv's compiled code
      writeFileSync(
        path.join(other, generatedValidatorFile('stepConfig', schema)),
        'module.exports = function generated(data) { data.from = "module"; return true; };',
      );
      const input: Record<string, unknown> = {};
      expect(schemaValidator('stepConfig', schema, other)(input)).to.equal(true);
      expect(input).to.deep.equal({ from: 'module' });
      // the same schema changed: its hash names no module, so it is compiled
      const changed = { ...schema, required: ['n'] };
      const filled: Record<string, unknown> = {};
      expect(schemaValidator('stepConfig', changed, other)(filled)).to.equal(true);
      expect(filled).to.deep.equal({ n: 3 });
      // and without a folder (cpe run from its TypeScript sources)
      const none: Record<string, unknown> = {};
      expect(schemaValidator('stepConfig', structuredClone(schema), undefined)(none)).to.equal(true);
      expect(none).to.deep.equal({ n: 3 });
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
