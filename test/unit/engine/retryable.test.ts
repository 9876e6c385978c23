import { expect } from 'chai';
import { StepError } from '../../../src/engine/step-error.js';
import { isRetryable, ProviderError } from '../../../src/errors.js';

describe('engine: which errors of a step are worth retrying', () => {
  it("takes a plain Error's `retryable: true` (a plugin outside the project cannot import ProviderError)", () => {
    const error = Object.assign(new Error('Server antwortet 503'), { retryable: true });
    expect(isRetryable(error)).to.equal(true);
    expect(StepError.wrap('abruf', 7, 1, error).retryable).to.equal(true);
    // a thrown object that is not an Error says so the same way
    expect(isRetryable({ message: 'Server beschäftigt', retryable: true })).to.equal(true);
  });

  it('keeps `retryable: false` permanent, also on a socket error, and an unmarked Error permanent', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(isRetryable(refused)).to.equal(true);
    expect(isRetryable(Object.assign(refused, { retryable: false }))).to.equal(false);
    expect(isRetryable(new Error('Glossar fehlt'))).to.equal(false);
    // a flag that is not a boolean says nothing
    expect(isRetryable(Object.assign(new Error('vielleicht'), { retryable: 'yes' }))).to.equal(false);
    expect(isRetryable(new ProviderError('503'))).to.equal(true);
    expect(isRetryable(null)).to.equal(false);
    expect(isRetryable('Fehler')).to.equal(false);
  });
});
