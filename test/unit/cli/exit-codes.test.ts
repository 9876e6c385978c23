import { expect } from 'chai';
import { exitCodeOfRun } from '../../../src/cli/exit-codes.js';
import { printError } from '../../../src/cli/print-error.js';
import { StepError } from '../../../src/engine/step-error.js';
import { ConfigError, CpeError, ErrorCodes, ProviderError } from '../../../src/errors.js';
import { collectionMismatch } from '../../../src/vectors/collection-stamp.js';

/** The exit code printError gives an error (what it prints is tested elsewhere). */
const exitCodeOf = (error: unknown) => printError(error, () => undefined);

describe('the exit code of an error', () => {
  const mismatch = collectionMismatch(
    'embedded',
    'documents',
    { model: 'local-hash-v2', dimensions: 1024 },
    { model: 'mxbai-embed-large', size: 1024, distance: 'Cosine' },
  );

  it('is 2 for a usage or configuration error, a collection built with another model among them', () => {
    expect(exitCodeOf(new ConfigError(ErrorCodes.PIPELINE_INVALID, 'x'))).to.equal(2);
    expect(exitCodeOf(new CpeError(ErrorCodes.USAGE, 'x'))).to.equal(2);
    // README: the message says which configuration to change; running the command again does not help
    expect(exitCodeOf(mismatch)).to.equal(2);
  });

  it('is 2 for a run a step stopped with one (collection_setup refusing a collection), 1 for other failures', () => {
    expect(exitCodeOf(new StepError('collection_setup', null, 1, mismatch))).to.equal(2);
    expect(exitCodeOf(new StepError('collection_setup', null, 1, new ProviderError('Qdrant down')))).to.equal(
      1,
    );
    expect(exitCodeOf(new CpeError(ErrorCodes.STEP_FAILED, 'x'))).to.equal(1);
    expect(exitCodeOf(new Error('x'))).to.equal(1);
  });
});

describe('the exit code of a command that ran a pipeline', () => {
  it('is 130 for a cancelled run (Ctrl-C, SIGTERM) with no document failed, 1 when one did, 0 when all is done', () => {
    expect(exitCodeOfRun({ status: 'ok', docsFailed: 0 })).to.equal(0);
    expect(exitCodeOfRun({ status: 'cancelled', docsFailed: 0 })).to.equal(130);
    // failures win over the cancel: the documents that failed want attention either way
    expect(exitCodeOfRun({ status: 'cancelled', docsFailed: 2 })).to.equal(1);
    expect(exitCodeOfRun({ status: 'ok', docsFailed: 1 })).to.equal(1);
    expect(exitCodeOfRun({ status: 'failed', docsFailed: 0 })).to.equal(1);
  });
});
