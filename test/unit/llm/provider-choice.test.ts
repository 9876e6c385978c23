import { expect } from 'chai';
import { ErrorCodes } from '../../../src/errors.js';
import {
  chooseLlmProvider,
  chooseVisionProvider,
  NO_LLM_REASON,
  NO_VISION_REASON,
} from '../../../src/llm/provider-choice.js';

describe('LLM provider choice (configuration only, no client library loaded)', () => {
  const none = { ollamaHosts: [] };
  const anthropic = { anthropicApiKey: 'k', ollamaHosts: [] };
  const ollama = { ollamaHosts: ['http://127.0.0.1:11434'] };
  const both = { anthropicApiKey: 'k', ollamaHosts: ['http://127.0.0.1:11434'] };

  it('skips with the reason when nothing is configured', () => {
    expect(chooseLlmProvider(none)).to.deep.equal({ provider: undefined, reason: NO_LLM_REASON });
    expect(chooseVisionProvider(none)).to.deep.equal({ provider: undefined, reason: NO_VISION_REASON });
  });

  it('defaults: Anthropic before Ollama for text, Ollama before Anthropic for vision; a configured default wins', () => {
    expect(chooseLlmProvider(both).provider).to.equal('anthropic');
    expect(chooseLlmProvider(ollama).provider).to.equal('ollama');
    expect(chooseLlmProvider({ ...both, defaultProvider: 'ollama' }).provider).to.equal('ollama');
    expect(chooseVisionProvider(both).provider).to.equal('ollama');
    expect(chooseVisionProvider(anthropic).provider).to.equal('anthropic');
  });

  it('names what is missing for a provider a step asks for', () => {
    expect(chooseLlmProvider(ollama, 'anthropic').reason).to.equal(
      'provider anthropic chosen but ANTHROPIC_API_KEY is not set',
    );
    expect(chooseVisionProvider(anthropic, 'ollama').reason).to.equal(
      'provider ollama chosen but CPE_OLLAMA_HOST is not set',
    );
  });

  it('refuses an unknown provider as a configuration error', () => {
    expect(() => chooseLlmProvider(both, 'openai'))
      .to.throw(/unknown LLM provider 'openai'/)
      .with.property('code', ErrorCodes.CONFIG_INVALID);
  });
});
