import { expect } from 'chai';
import {
  CHAR_CLASS,
  CLASS_DIGIT,
  CLASS_LETTER,
  CLASS_NEWLINE,
  CLASS_OTHER,
  CLASS_SPACE,
  isDigit,
  isLetter,
  isSpace,
} from '../../../src/text/chars.js';
import {
  SHARE4,
  SHARE4_RUN,
  TC_DIGIT,
  TC_LETTER,
  TC_NEWLINE,
  TC_SLOW,
  TC_SPACE,
  TC_SYMBOL,
  TC_TERMINATOR,
  TOKEN_CLASS,
  TOKEN_SHARE,
  W_NEWLINE,
  W_OTHER,
  WEIGHT_CODE,
} from '../../../src/text/tokenizer.js';

/** The first different index of two tables, with both values, or undefined when they are equal. */
function firstDifference(got: ArrayLike<number>, want: ArrayLike<number>): string | undefined {
  expect(got.length).to.equal(want.length);
  for (let i = 0; i < want.length; i++)
    if (got[i] !== want[i]) return `at ${i} (U+${i.toString(16)}): ${got[i]}, want ${want[i]}`;
  return undefined;
}

// The tables are built from ranges and lookups; these are their definitions, code unit by code unit.
describe('text/chars and text/tokenizer tables', () => {
  it('CHAR_CLASS classes every code unit as isSpace, isDigit and isLetter do', () => {
    const want = new Uint8Array(65536);
    for (let c = 0; c < 65536; c++) {
      if (c === 10) want[c] = CLASS_NEWLINE;
      else if (isSpace(c)) want[c] = CLASS_SPACE;
      else if (isDigit(c)) want[c] = CLASS_DIGIT;
      else if (isLetter(c)) want[c] = CLASS_LETTER;
      else want[c] = CLASS_OTHER;
    }
    expect(firstDifference(CHAR_CLASS, want)).to.equal(undefined);
  });

  it('TOKEN_CLASS and WEIGHT_CODE follow CHAR_CLASS, with . ! ? … as terminators', () => {
    const tokenClass = new Uint8Array(65536);
    const weightCode = new Uint8Array(65536);
    for (let c = 0; c < 65536; c++) {
      const cls = CHAR_CLASS[c];
      if (cls === CLASS_LETTER) tokenClass[c] = TC_LETTER;
      else if (cls === CLASS_DIGIT) tokenClass[c] = TC_DIGIT;
      else if (cls === CLASS_SPACE) tokenClass[c] = TC_SPACE;
      else if (cls === CLASS_NEWLINE) tokenClass[c] = TC_NEWLINE;
      else if (c === 46 || c === 33 || c === 63 || c === 0x2026) tokenClass[c] = TC_TERMINATOR;
      else tokenClass[c] = TC_SYMBOL;
      const k = tokenClass[c]!;
      weightCode[c] = k < TC_SLOW ? k : k === TC_NEWLINE ? W_NEWLINE : W_OTHER;
    }
    expect(firstDifference(TOKEN_CLASS, tokenClass)).to.equal(undefined);
    expect(firstDifference(WEIGHT_CODE, weightCode)).to.equal(undefined);
  });

  it('SHARE4 sums the shares of four register steps and marks runs of digits or symbols', () => {
    const want = new Uint8Array(65536);
    for (let w = 0; w < 65536; w++) {
      let sum = 0;
      let run = 0;
      for (let shift = 6; shift >= 0; shift -= 2) {
        const window = (w >> shift) & 1023;
        if ((window & 3) !== W_OTHER) sum += TOKEN_SHARE[window]!;
        else if (((window >> 2) & 3) !== W_OTHER) sum += 3;
        else run = SHARE4_RUN;
      }
      want[w] = sum | run;
    }
    expect(firstDifference(SHARE4, want)).to.equal(undefined);
  });
});
