import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Ajv } from 'ajv';
import { expect } from 'chai';
import { describeConfig, loadConfig } from '../../../src/config/load.js';
import { configSchema } from '../../../src/config/schema.js';
import { describeProfile } from '../../../src/engine/providers.js';
import { ConfigError, describeError } from '../../../src/errors.js';
import { maskUrl } from '../../../src/util/credentials.js';

const dir = () => mkdtempSync(path.join(os.tmpdir(), 'cpe-config-'));

describe('configuration', () => {
  it('has a schema that is valid JSON Schema and passes the strict mode of ajv (loadConfig does not check it)', () => {
    const ajv = new Ajv({ allErrors: true, strict: true });
    expect(ajv.validateSchema(configSchema), ajv.errorsText()).to.equal(true);
    expect(() => ajv.compile(configSchema)).to.not.throw();
  });

  it('takes flags over environment over the config file over defaults', () => {
    const cwd = dir();
    writeFileSync(
      path.join(cwd, 'cpe.config.json'),
      JSON.stringify({ concurrency: 3, leaseSeconds: 30, source: 'docs' }),
    );
    const loaded = loadConfig({
      cwd,
      env: { CPE_CONCURRENCY: '5', CPE_LEASE_SECONDS: '20' },
      flags: { concurrency: 7 },
    });
    expect(loaded.config.concurrency).to.equal(7);
    expect(loaded.config.leaseSeconds).to.equal(20);
    expect(loaded.config.source).to.equal(path.join(cwd, 'docs'));
    expect(loaded.config.maxAttempts).to.equal(3);
    expect(loaded.sources).to.include({
      concurrency: 'flag',
      leaseSeconds: 'env',
      source: 'file',
      maxAttempts: 'default',
    });
    expect(loaded.config.dataDir).to.equal(path.join(cwd, '.cpe'));
    expect(loaded.config.helperThreadNice).to.equal(5);
    expect(loadConfig({ cwd, env: { CPE_HELPER_THREAD_NICE: '0' } }).config.helperThreadNice).to.equal(0);
    expect(() => loadConfig({ cwd, env: { CPE_HELPER_THREAD_NICE: '25' } })).to.throw(
      /CPE_HELPER_THREAD_NICE: helperThreadNice must be <= 19/,
    );
  });

  it('names every unknown or bad key and where it came from', () => {
    const cwd = dir();
    writeFileSync(
      path.join(cwd, 'cpe.config.json'),
      JSON.stringify({ concurency: 3, anthropicApiKey: 'x', logLevel: 'loud' }),
    );
    try {
      loadConfig({ cwd, env: { CPE_DB_URL: 'postgres://x/y' } });
      expect.fail('loaded');
    } catch (error) {
      expect(error).to.be.instanceOf(ConfigError);
      const message = (error as Error).message;
      expect(message).to.contain('unknown key "concurency"');
      expect(message).to.contain('unknown key "anthropicApiKey" (secrets come only from the environment)');
      expect(message).to.contain('logLevel must be equal to one of the allowed values');
      expect(message).to.contain('environment CPE_DB_URL: dbUrl must match pattern');
    }
  });

  it('reads secrets only from the environment and never shows them', () => {
    const loaded = loadConfig({
      cwd: dir(),
      env: {
        ANTHROPIC_API_KEY: 'sk-ant-secret',
        CPE_DB_URL: 'mysql://cpe:hunter2@db:3306/ki_content',
        CPE_OLLAMA_HOST: 'gpu1:11434,http://gpu2:11434',
      },
    });
    expect(loaded.secrets.anthropicApiKey).to.equal('sk-ant-secret');
    expect(loaded.config.ollamaHosts).to.deep.equal(['http://gpu1:11434', 'http://gpu2:11434']);
    const shown = JSON.stringify(describeConfig(loaded));
    expect(shown).to.not.contain('sk-ant-secret');
    expect(shown).to.not.contain('hunter2');
    expect(shown).to.contain('mysql://cpe:***@db:3306/ki_content');
  });

  it('masks the passwords of every URL it shows: Ollama hosts, Qdrant, the Anthropic proxy, and in messages', () => {
    const loaded = loadConfig({
      cwd: dir(),
      env: {
        CPE_OLLAMA_HOST: 'http://u:OPass9@gpu1:11434',
        CPE_QDRANT_URL: 'http://qu:QPass9@qdrant:6333',
        CPE_ANTHROPIC_BASE_URL: 'https://a:APass9@proxy.example',
        ANTHROPIC_API_KEY: 'sk-ant-secret',
      },
    });
    const shown = JSON.stringify([
      describeConfig(loaded),
      describeProfile(loaded.config, loaded.secrets, { content: 'c', log: 'l' }),
    ]);
    for (const secret of ['OPass9', 'QPass9', 'APass9', 'sk-ant-secret'])
      expect(shown).to.not.contain(secret);
    expect(shown).to.contain('http://u:***@gpu1:11434').and.contain('http://qu:***@qdrant:6333');
    // a password with an unencoded "/" (such a URL does not parse) is masked too
    expect(maskUrl('mysql://root:ab/cd9Secret@127.0.0.1:3306/ki_content')).to.equal(
      'mysql://root:***@127.0.0.1:3306/ki_content',
    );
    // an error message quoting a configured URL, as it reaches ki_dev and the queue
    expect(describeError(new Error('Ollama http://u:OPass9@gpu1:11434 answered 400: bad'))).to.equal(
      'Ollama http://u:***@gpu1:11434 answered 400: bad',
    );
    // an API key quoted by a provider's (or a proxy's) error: masked once the configuration has read it
    expect(
      describeError(
        new Error('Anthropic answered 401: invalid header "Authorization: Bearer sk-ant-secret"'),
      ),
    ).to.equal('Anthropic answered 401: invalid header "Authorization: Bearer ***"');
    // a key from a secret file ends in a newline (or has a stray space): it is used, and masked, as HTTP sends it
    for (const raw of ['sk-ant-fromfile-98765\n', 'sk-ant-spaced-98765 ']) {
      const withSpace = loadConfig({ cwd: dir(), env: { ANTHROPIC_API_KEY: raw } });
      expect(withSpace.secrets.anthropicApiKey).to.equal(raw.trim());
      expect(describeError(new Error(`401: "x-api-key: ${raw.trim()}"`))).to.equal('401: "x-api-key: ***"');
    }
    // a short key too (a Qdrant key of 7 characters was shown in full)
    loadConfig({ cwd: dir(), env: { QDRANT_API_KEY: 'Qk7z#91', CPE_QDRANT_URL: 'http://q:6333' } });
    expect(describeError(new Error("403: api-key 'Qk7z#91' refused"))).to.equal("403: api-key '***' refused");
    // and a URL's credentials as the Basic authorization they are sent as, echoed by a proxy
    loadConfig({ cwd: dir(), env: { CPE_OLLAMA_HOST: 'http://proxyuser:Pr0xyPassw0rd@gpu1:11434' } });
    const basic = Buffer.from('proxyuser:Pr0xyPassw0rd').toString('base64');
    expect(describeError(new Error(`proxy refused {"authorization":"Basic ${basic}"}`))).to.equal(
      'proxy refused {"authorization":"Basic ***"}',
    );
  });

  it('describes the vision part as the provider it picks: Ollama, else Claude, else none', () => {
    const vision = (env: NodeJS.ProcessEnv) => {
      const loaded = loadConfig({ cwd: dir(), env });
      return describeProfile(loaded.config, loaded.secrets, { content: 'c', log: 'l' }).vision;
    };
    expect(vision({})).to.equal('none: vision_analyze ends skipped');
    expect(vision({ ANTHROPIC_API_KEY: 'sk-ant-vision-123' })).to.equal('Anthropic');
    expect(vision({ ANTHROPIC_API_KEY: 'sk-ant-vision-123', CPE_OLLAMA_HOST: 'http://gpu1:11434' })).to.equal(
      'Ollama http://gpu1:11434',
    );
  });

  it('names a path flag of the wrong type (from a JavaScript caller) instead of failing in path.resolve', () => {
    expect(() => loadConfig({ cwd: dir(), env: {}, flags: { dataDir: 42 as unknown as string } })).to.throw(
      ConfigError,
      /flag: dataDir must be string/,
    );
  });

  it('refuses empty paths (they resolved to the working folder) and reads a config file with a BOM', () => {
    const cwd = dir();
    expect(() => loadConfig({ cwd, env: {}, flags: { source: '' } })).to.throw(ConfigError, /source/);
    writeFileSync(path.join(cwd, 'cpe.config.json'), '\uFEFF{"concurrency": 3}');
    expect(loadConfig({ cwd, env: {} }).config.concurrency).to.equal(3);
  });

  it('splits CPE_PLUGIN_DIRS on the path delimiter', () => {
    const loaded = loadConfig({ cwd: dir(), env: { CPE_PLUGIN_DIRS: ['/a', '/b'].join(path.delimiter) } });
    expect(loaded.config.plugins).to.deep.equal(['/a', '/b']);
  });
});
