import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { expect } from 'chai';
import { describeConfig, loadConfig } from '../../../src/config/load.js';
import { configSchema } from '../../../src/config/schema.js';
import { skippedCheckpointHash, stepsToRun } from '../../../src/engine/checkpoints.js';
import type { PlannedStep } from '../../../src/engine/plan.js';
import { describeProfile, providerKinds } from '../../../src/engine/providers.js';
import { ConfigError, describeError } from '../../../src/errors.js';
import { maskUrl, redactCredentials } from '../../../src/util/credentials.js';
import { runCli } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/temp-dir.js';

const dir = () => tempDir('cpe-config-');

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

  it('keys skipped checkpoints by which providers answer, not where they are', () => {
    const kinds = (env: NodeJS.ProcessEnv) => {
      const loaded = loadConfig({ cwd: dir(), env });
      return providerKinds(loaded.config, loaded.secrets);
    };
    const key = 'sk-ant-kinds-123';
    // a proxy URL spelt another way made every skipped checkpoint stale: all documents ran their LLM steps again
    expect(kinds({ ANTHROPIC_API_KEY: key, CPE_ANTHROPIC_BASE_URL: 'http://127.0.0.1:8080' })).to.deep.equal(
      kinds({ ANTHROPIC_API_KEY: key, CPE_ANTHROPIC_BASE_URL: 'http://localhost:8080' }),
    );
    expect(kinds({})).to.deep.equal({ llm: 'none', vision: 'none' });
    expect(kinds({ ANTHROPIC_API_KEY: key })).to.deep.equal({ llm: 'anthropic', vision: 'anthropic' });
    expect(kinds({ CPE_OLLAMA_HOST: 'http://gpu1:11434' })).to.deep.equal({
      llm: 'ollama',
      vision: 'ollama',
    });
    expect(
      kinds({ ANTHROPIC_API_KEY: key, CPE_OLLAMA_HOST: 'http://gpu1:11434', CPE_LLM_PROVIDER: 'ollama' }),
    ).to.deep.equal({ llm: 'ollama', vision: 'ollama' });
  });

  it('takes a skipped checkpoint written under the earlier profile key as current, and one of another profile not', () => {
    const step = { name: 'vision', lineageHash: 'aaaa', dependsOn: [] as string[] } as unknown as PlannedStep;
    const after = { name: 'chunk', lineageHash: 'bbbb', dependsOn: ['vision'] } as unknown as PlannedStep;
    const checkpoints = (key: string) =>
      new Map([
        ['vision', skippedCheckpointHash('aaaa', key)],
        ['chunk', 'bbbb'],
      ]);
    expect([...stepsToRun([step, after], checkpoints('earlier'), ['current', 'earlier'])]).to.deep.equal([]);
    expect([...stepsToRun([step, after], checkpoints('current'), ['current', 'earlier'])]).to.deep.equal([]);
    expect([...stepsToRun([step, after], checkpoints('other'), ['current', 'earlier'])]).to.deep.equal([
      'vision',
      'chunk',
    ]);
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

  it('refuses at load a service or database URL that does not parse, naming key and origin, never the value', async () => {
    const refusal = (env: NodeJS.ProcessEnv, cwd = dir()) => {
      try {
        loadConfig({ cwd, env });
      } catch (error) {
        expect(error).to.be.instanceOf(ConfigError);
        return (error as Error).message;
      }
      return expect.fail(`loaded ${JSON.stringify(env)}`);
    };
    for (const [name, key] of [
      ['CPE_QDRANT_URL', 'qdrantUrl'],
      ['CPE_ANTHROPIC_BASE_URL', 'anthropicBaseUrl'],
      ['CPE_OLLAMA_HOST', 'ollamaHosts[0]'],
    ]) {
      // (in CPE_OLLAMA_HOST a space separates hosts: the file's list below has one with a space)
      for (const url of [
        'http://h:99999',
        'http://',
        ...(name === 'CPE_OLLAMA_HOST' ? [] : ['http://exa mple:6333']),
      ]) {
        expect(refusal({ [name]: url }), `${name}=${url}`).to.equal(
          `invalid configuration:\n  environment ${name}: ${key} is not a valid URL`,
        );
      }
    }
    // each Ollama host (one given as host:port too), and the database URLs
    expect(refusal({ CPE_OLLAMA_HOST: 'http://gpu1:11434,gpu2:99999' })).to.contain(
      'environment CPE_OLLAMA_HOST: ollamaHosts[1] is not a valid URL',
    );
    expect(refusal({ CPE_DB_URL: 'mysql://root@127.0.0.1:99999/ki_content' })).to.contain(
      'environment CPE_DB_URL: dbUrl is not a valid URL',
    );
    expect(refusal({ CPE_LOG_DB_URL: 'mysql://root@exa mple/ki_dev' })).to.contain(
      'environment CPE_LOG_DB_URL: logDbUrl is not a valid URL',
    );
    // from the config file: named, all at once, the password (one with a space, no masking finds it) never shown
    const cwd = dir();
    const file = path.join(cwd, 'cpe.config.json');
    writeFileSync(
      file,
      JSON.stringify({
        qdrantUrl: 'http://q:sec ret1@h:99999',
        ollamaHosts: ['http://o:Pw d9@gpu1:99999', 'http://gpu2:70000', 'http://gpu 3:11434'],
      }),
    );
    const message = refusal({}, cwd);
    expect(message).to.contain(`${file}: qdrantUrl is not a valid URL (an @, /, ? or # in its user`);
    expect(message).to.contain(`${file}: ollamaHosts[0] is not a valid URL`);
    expect(message).to.contain(`${file}: ollamaHosts[1] is not a valid URL`);
    expect(message).to.contain(`${file}: ollamaHosts[2] is not a valid URL`);
    for (const secret of ['sec ret1', 'ret1', 'Pw d9', 'd9@']) expect(message).to.not.contain(secret);
    // valid ones still load
    expect(loadConfig({ cwd: dir(), env: { CPE_QDRANT_URL: 'http://q:6333' } }).config.qdrantUrl).to.equal(
      'http://q:6333',
    );
    // as a user sees it: every command refuses it, exit 2 (`cpe config` showed the password in clear and exited 0)
    writeFileSync(file, '{}');
    const shown = await runCli(['config'], {
      PATH: process.env.PATH,
      HOME: cwd,
      CPE_CONFIG: file,
      CPE_DATA_DIR: path.join(cwd, '.cpe'),
      CPE_QDRANT_URL: 'http://q:sec ret1@h:99999',
    });
    expect(shown.code, shown.stderr).to.equal(2);
    expect(shown.stderr).to.contain('environment CPE_QDRANT_URL: qdrantUrl is not a valid URL');
    expect(shown.stdout + shown.stderr).to.not.contain('ret1');
  });

  it('reads numbers from the environment only as decimals, refusing hex, exponents and words by variable', () => {
    const cwd = dir();
    expect(loadConfig({ cwd, env: { CPE_CONCURRENCY: ' 6 ' } }).config.concurrency).to.equal(6);
    expect(loadConfig({ cwd, env: { CPE_MAX_FILE_MB: '2.5' } }).config.maxFileMb).to.equal(2.5);
    expect(loadConfig({ cwd, env: { CPE_LLM_TIMEOUT_SECONDS: '30' } }).config.llmTimeoutSeconds).to.equal(30);
    expect(loadConfig({ cwd }).config.llmTimeoutSeconds).to.equal(undefined);
    for (const [name, raw, complaint] of [
      ['CPE_CONCURRENCY', '0x10', 'concurrency must be integer'],
      ['CPE_CONCURRENCY', '1e1', 'concurrency must be integer'],
      ['CPE_LEASE_SECONDS', '0b11111', 'leaseSeconds must be integer'],
      ['CPE_MAX_FILE_MB', 'abc', 'maxFileMb must be number'],
      ['CPE_MAX_FILE_MB', 'Infinity', 'maxFileMb must be number'],
      ['CPE_LLM_TIMEOUT_SECONDS', '0', 'llmTimeoutSeconds must be >= 1'],
      ['CPE_LLM_TIMEOUT_SECONDS', '2.5', 'llmTimeoutSeconds must be integer'],
    ]) {
      expect(() => loadConfig({ cwd, env: { [name!]: raw } }), `${name}=${raw}`).to.throw(
        ConfigError,
        `environment ${name}: ${complaint}`,
      );
    }
  });

  it('refuses at load a URL whose user or password holds a malformed percent-escape, never quoting it', () => {
    for (const [name, key] of [
      ['CPE_QDRANT_URL', 'qdrantUrl'],
      ['CPE_ANTHROPIC_BASE_URL', 'anthropicBaseUrl'],
      ['CPE_OLLAMA_HOST', 'ollamaHosts[0]'],
      ['CPE_DB_URL', 'dbUrl'],
    ]) {
      const scheme = name === 'CPE_DB_URL' ? 'mysql' : 'http';
      let message = '';
      try {
        loadConfig({ cwd: dir(), env: { [name!]: `${scheme}://user:abc%zzSECRET@h:1234` } });
      } catch (error) {
        expect(error).to.be.instanceOf(ConfigError);
        message = (error as Error).message;
      }
      expect(message, name).to.contain(
        `environment ${name}: ${key} has a malformed percent-escape in its user or password (a % in them is written %25)`,
      );
      expect(message).to.not.contain('SECRET');
    }
    // a well-formed escape loads, and its decoded password is masked as a secret
    const loaded = loadConfig({ cwd: dir(), env: { CPE_QDRANT_URL: 'http://u:p%25wSECRET@h:6333' } });
    expect(loaded.config.qdrantUrl).to.equal('http://u:p%25wSECRET@h:6333');
    expect(redactCredentials('proxy said: p%wSECRET')).to.equal('proxy said: ***');
  });

  it('refuses an embedding model named without an Ollama host (it would be dropped for local-hash-v2)', () => {
    const cwd = dir();
    expect(() => loadConfig({ cwd, env: { CPE_EMBED_MODEL: 'bge-m3' } })).to.throw(
      ConfigError,
      "environment CPE_EMBED_MODEL: embedModel 'bge-m3' is an Ollama model, and no Ollama host is set (CPE_OLLAMA_HOST): without one cpe embeds with local-hash-v2; set the host, or leave embedModel unset",
    );
    // with a host, or naming the local embedder itself, it loads
    const withHost = loadConfig({ cwd, env: { CPE_EMBED_MODEL: 'bge-m3', CPE_OLLAMA_HOST: 'gpu1:11434' } });
    expect(withHost.config.embedModel).to.equal('bge-m3');
    expect(loadConfig({ cwd, env: { CPE_EMBED_MODEL: 'local-hash-v2' } }).config.embedModel).to.equal(
      'local-hash-v2',
    );
  });

  it('names the file, line and column of a JSON syntax error, never quoting the file (it may hold a secret)', () => {
    const cases: Array<[string, string]> = [
      ['{"anthropicApiKey": sk-ant-SECRETKEY123456}', 'line 1, column 21 (a value expected'],
      [
        '{\n  "qdrantUrl": "http://q:6333",\n  "concurrency": 3,\n}',
        'line 4, column 1 (a property name in double quotes expected)',
      ],
      ['{"a": "sk-ant-SECRET\tKEY"}', 'line 1, column 21 (control character'],
      ['{"a": "sk-ant-SECRETKEY" "b": 1}', "line 1, column 26 (',' or '}' expected after a property value)"],
      ['{"a": 1}} sk-ant-SECRETKEY', 'line 1, column 9 (more text after the JSON value)'],
      ['{"a": "sk-ant-SECRETKEY', 'line 1, column 24 (unexpected end of file)'],
      ['\uFEFF{"a": trueSECRETKEY}', 'line 1, column 11 ('],
    ];
    for (const [text, where] of cases) {
      const cwd = dir();
      const file = path.join(cwd, 'g.json');
      writeFileSync(file, text);
      try {
        loadConfig({ cwd, env: {}, configPath: 'g.json' });
        expect.fail(`loaded ${text}`);
      } catch (error) {
        expect(error, text).to.be.instanceOf(ConfigError);
        const message = (error as Error).message;
        expect(message, text).to.contain(`${file}: not valid JSON at ${where}`);
        expect(message, text).to.not.match(/SEC|KEY|sk-ant|qdrant/);
      }
    }
  });

  it('splits CPE_PLUGIN_DIRS on the path delimiter', () => {
    const loaded = loadConfig({ cwd: dir(), env: { CPE_PLUGIN_DIRS: ['/a', '/b'].join(path.delimiter) } });
    expect(loaded.config.plugins).to.deep.equal(['/a', '/b']);
  });
});
