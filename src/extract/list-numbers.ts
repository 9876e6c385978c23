/**
 * The numbers PowerPoint shows in front of auto-numbered paragraphs (a:buAutoNum): "1.", "a)", "(iv)", "IV.". They
 * are drawn, not written in the text, so cpe puts each label back as text at the start of its paragraph, as it does
 * for Word's numbered paragraphs ("1) Schritt eins").
 *
 * Schemes (ECMA-376 ST_TextAutonumberScheme): the Latin ones (arabic, alphabetic, roman, each with a period, a
 * right parenthesis or both parentheses) are shown as PowerPoint shows them; the East Asian, Thai, Hindi and
 * Hebrew ones, and any type we do not know, fall back to arabicPeriod ("1."): the count stays right, only the
 * digits differ.
 */

const ROMAN: Array<[number, string]> = [
  [1000, 'm'],
  [900, 'cm'],
  [500, 'd'],
  [400, 'cd'],
  [100, 'c'],
  [90, 'xc'],
  [50, 'l'],
  [40, 'xl'],
  [10, 'x'],
  [9, 'ix'],
  [5, 'v'],
  [4, 'iv'],
  [1, 'i'],
];

/** i, ii, iii, iv, ... in lower case */
export const romanNumeral = (n: number): string => {
  let out = '';
  for (const [value, digits] of ROMAN) for (; n >= value; n -= value) out += digits;
  return out;
};

/** a, b, ..., z, aa, bb, ... (Office repeats the letter) */
export const alphabeticNumeral = (n: number): string =>
  n < 1 ? '' : String.fromCharCode(97 + ((n - 1) % 26)).repeat(Math.ceil(n / 26));

/** The highest a:buAutoNum startAt (ST_TextBulletStartAtNum): beyond it a label would only grow, never be shown. */
export const MAX_START_AT = 32767;

const SCHEME = /^(arabic|alphaLc|alphaUc|romanLc|romanUc)(Period|ParenR|ParenBoth|Plain)$/;

/** The label PowerPoint shows for the `n`th paragraph of an auto-numbered list of the scheme `type`. */
export function autoNumberLabel(type: string, n: number): string {
  const [, digits = 'arabic', punctuation = 'Period'] = SCHEME.exec(type) ?? [];
  // arabicPlain is the only Plain scheme among these; alphaLcPlain and the like are no schemes at all
  if (punctuation === 'Plain' && digits !== 'arabic') return autoNumberLabel('arabicPeriod', n);
  const number =
    digits === 'alphaLc'
      ? alphabeticNumeral(n)
      : digits === 'alphaUc'
        ? alphabeticNumeral(n).toUpperCase()
        : digits === 'romanLc'
          ? romanNumeral(n)
          : digits === 'romanUc'
            ? romanNumeral(n).toUpperCase()
            : String(n);
  switch (punctuation) {
    case 'ParenR':
      return `${number})`;
    case 'ParenBoth':
      return `(${number})`;
    case 'Plain':
      return number;
    default:
      return `${number}.`;
  }
}
