import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { configSchemaProblem, configValidator } from '../../../src/engine/config-validator.js';

/** A plugin's config schema naming a JSON Schema version with `$schema`. */
const schemaOf = (version: string) => ({
  $schema: version,
  type: 'object',
  additionalProperties: false,
  properties: {
    k: { type: 'integer', default: 2 },
    // prefixItems is 2020-12's: draft-07 does not know it and would let any array through
    paar: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }] },
  },
});

describe('engine: custom plugins’ config schemas', () => {
  it('checks and compiles a schema that names JSON Schema 2020-12, with its meaning', () => {
    const schema = schemaOf('https://json-schema.org/draft/2020-12/schema');
    expect(configSchemaProblem(schema)).to.equal(undefined);
    const validate = configValidator(schema);
    const config: Record<string, unknown> = {};
    expect(validate(config)).to.equal(true);
    expect(config).to.deep.equal({ k: 2 });
    expect(validate({ paar: ['Seite', 'zwei'] })).to.equal(false);
    expect(validate({ paar: ['Seite', 2] })).to.equal(true);
    // ...and 2019-09 and draft-07 named explicitly
    expect(configSchemaProblem(schemaOf('https://json-schema.org/draft/2019-09/schema'))).to.equal(undefined);
    expect(configSchemaProblem(schemaOf('http://json-schema.org/draft-07/schema#'))).to.equal(undefined);
  });

  it('says that a schema names a JSON Schema version cpe does not know, instead of throwing', () => {
    expect(configSchemaProblem(schemaOf('http://json-schema.org/draft-04/schema#'))).to.equal(
      'configSchema is not valid JSON Schema: $schema "http://json-schema.org/draft-04/schema#" is not a JSON Schema version cpe knows (http://json-schema.org/draft-07/schema, https://json-schema.org/draft/2019-09/schema, https://json-schema.org/draft/2020-12/schema; none means draft-07)',
    );
    expect(configSchemaProblem({ $schema: 7, type: 'object' })).to.match(
      /^configSchema is not valid JSON Schema: \$schema 7 is not a JSON Schema version cpe knows/,
    );
  });

  it('validates two plugins’ schemas that share an $id each on its own, in either order', () => {
    const id = `https://example.com/plugin-config-${randomBytes(4).toString('hex')}`;
    const first = { $id: id, type: 'object', properties: { n: { type: 'integer', default: 1 } } };
    const second = { $id: id, type: 'object', properties: { m: { type: 'string', default: 'x' } } };
    expect(configSchemaProblem(first)).to.equal(undefined);
    expect(configSchemaProblem(second)).to.equal(undefined);
    const filled: Array<Record<string, unknown>> = [{}, {}];
    expect(configValidator(second)(filled[0])).to.equal(true);
    expect(configValidator(first)(filled[1])).to.equal(true);
    expect(filled).to.deep.equal([{ m: 'x' }, { n: 1 }]);
    // and a copy of the first, compiled after both, still compiles
    expect(configSchemaProblem(structuredClone(first))).to.equal(undefined);
  });
});
