/**
 * Entity names as the merge key: one entity per (normalised name, type) across all documents. "Der
 * Ausbildungsvertrag", "Ausbildungsvertrages" and "ausbildungs­vertrag" are the same entity.
 */

import { cutText } from '../text/cut.js';

/**
 * Unicode NFC, soft hyphens, zero-width and control characters removed, whitespace collapsed, quotes trimmed.
 */
export function cleanEntityName(name: string): string {
  return (
    name
      .normalize('NFC')
      .replace(/[\u00ad\u200b-\u200d\u2060\ufeff]/g, '')
      // C0 and C1 control characters an LLM answer may carry (a NUL, an escape) go: they would be stored in the
      // name as they are. Tab, line breaks and NEL separate words: the collapse below makes them a space.
      .replace(/[\u0000-\u0008\u000e-\u001f\u007f-\u0084\u0086-\u009f]/g, '')
      .replace(/[\s\u0085]+/g, ' ')
      .replace(/^[\s"'„“”‚‘’»«()[\]]+/, '')
      // from the first character of the closing run only: tried at every character of a long run, it was quadratic
      .replace(/(?<![\s"'„“”‚‘’»«()[\]:;,.])[\s"'„“”‚‘’»«()[\]:;,.]+$/, keepClosingBrackets)
      .trim()
  );
}

/**
 * Of the trimmed end of a name, the brackets that close one opened in it ("Berufsbildungsgesetz (BBiG)",
 * "Sozialgesetzbuch [SGB III]"), with what trails them trimmed all the same.
 */
function keepClosingBrackets(end: string, offset: number, name: string): string {
  const before = name.slice(0, offset);
  const count = (pattern: RegExp) => before.match(pattern)?.length ?? 0;
  let kept = '';
  let round = count(/\(/g) - count(/\)/g);
  let square = count(/\[/g) - count(/\]/g);
  for (const char of end) {
    if (char === ')' && round > 0) round--;
    else if (char === ']' && square > 0) square--;
    else break;
    kept += char;
  }
  return kept;
}

const ARTICLES = new Set([
  'der',
  'die',
  'das',
  'des',
  'dem',
  'den',
  'ein',
  'eine',
  'einer',
  'eines',
  'einem',
  'einen',
]);

/** Types whose names are proper names: no article stripping, no inflection folding ("Hans", "Jens"). */
const PROPER_NAME_TYPES = new Set(['PERSON']);

/**
 * Folds the commonest German inflections of the last word (the head of a German noun phrase) to a base form.
 * Deliberately conservative: only endings that are almost always inflection on words of six letters or more.
 */
export function foldGermanInflection(word: string): string {
  if (word.length < 6) return word;
  // plural -ungen / -heiten / -keiten / -schaften -> singular
  for (const suffix of ['ungen', 'heiten', 'keiten', 'schaften']) {
    if (word.endsWith(suffix)) return word.slice(0, -2);
  }
  // genitive -es after a sibilant or a consonant cluster typical of it: Gesetzes, Vertrages, Prozesses
  if (word.endsWith('es') && /(?:[sßzx]|tz|ag|ug|ng|ld|nd|rt|kt)es$/.test(word) && word.length >= 7) {
    return word.slice(0, -2);
  }
  // genitive -s after -er, -el, -en, -um, -ium, -ing: Ausbilders, Mittels, Lebens, Museums, Trainings
  if (/(?:er|el|en|um|ing)s$/.test(word)) return word.slice(0, -1);
  return word;
}

/** Whether a name holds a letter or a digit: one of punctuation alone ("…", "-", "???", "•") names nothing. */
export const hasWordCharacter = (name: string): boolean => /[\p{L}\p{N}]/u.test(name);

/**
 * The merge key of an entity name (lower case); equal keys with equal types are one entity. '' (no entity) for a
 * name without a letter or digit.
 */
export function normalizeEntityName(name: string, type: string): string {
  if (!hasWordCharacter(name)) return '';
  let words = cleanEntityName(name).toLocaleLowerCase('de-DE').split(' ').filter(Boolean);
  if (!PROPER_NAME_TYPES.has(type.toUpperCase())) {
    if (words.length > 1 && ARTICLES.has(words[0]!)) words = words.slice(1);
    if (words.length > 0) words[words.length - 1] = foldGermanInflection(words[words.length - 1]!);
  }
  // a single-byte-per-char cap would cut UTF-8 mid-character; 190 characters fits every index
  return cutText(words.join(' '), 190);
}

/** Types are upper case with underscores: "Organisation" -> ORGANISATION. */
export function normalizeEntityType(type: string): string {
  return type
    .normalize('NFC')
    .trim()
    .toUpperCase()
    .replace(/[\s-]+/g, '_');
}
