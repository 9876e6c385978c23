import { expect } from 'chai';
import { evenBatchSize, starterBatchSize } from '../../../src/embed/batch-size.js';

describe('request sizes for embedding', () => {
  it('cuts work into equal requests whose number is a multiple of the slots', () => {
    // 20,000 at batch 512 over 8 slots: 40 requests of 500, not 39 of 512 and one of 32
    expect(evenBatchSize(20_000, 8, 512)).to.equal(500);
    expect(evenBatchSize(4096, 8, 512)).to.equal(512);
    expect(evenBatchSize(4097, 8, 512)).to.equal(257);
    // two hosts: 16 slots
    expect(evenBatchSize(20_000, 16, 512)).to.equal(417);
  });

  it('spreads little work over requests of 16 inputs or more, never above the batch size', () => {
    expect(evenBatchSize(40, 4, 256)).to.equal(20);
    expect(evenBatchSize(40, 8, 256)).to.equal(20);
    expect(evenBatchSize(100, 8, 256)).to.equal(17);
    expect(evenBatchSize(200, 8, 256)).to.equal(25);
    expect(evenBatchSize(3, 8, 256)).to.equal(3);
    expect(evenBatchSize(100, 8, 4)).to.equal(4);
  });

  it('starts with requests of 1/16 of the batch size, at least 16, at most the batch size', () => {
    expect(starterBatchSize(1024)).to.equal(64);
    expect(starterBatchSize(64)).to.equal(16);
    expect(starterBatchSize(4)).to.equal(4);
  });
});
