/**
 * Text normalisation shared by every extractor: line breaks unified, Unicode NFC, control characters, soft
 * hyphens and invisible characters inside words removed (a soft hyphen at a line end with the line break: it
 * joins a word's halves). Nothing else is removed, summarised or interpreted.
 */
/**
 * besides control characters: BOM, zero-width space, soft hyphen, zero-width non-joiner (German typesetting puts
 * one in "Auf\u200Clage" against the ligature) and word joiner; each left the word in two for the embedder and search
 */
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\uFEFF\u200B\u00AD\u200C\u2060]/g;
/**
 * a zero-width joiner but the one that joins two emoji into one ("👨\u200D👩\u200D👧", "🏳️\u200D🌈": a pictograph, its
 * variation selector or skin tone, then another, as UAX #29 keeps them one character); between letters
 * ("Haftpflicht\u200Dversicherung") it only splits the word. Matched from the joiner, so the look back runs at
 * joiners only, not at every character of the text
 */
const ZWJ_OUTSIDE_EMOJI =
  /\u200D(?:(?<!\p{Extended_Pictographic}[\p{M}\p{Emoji_Modifier}]*\u200D)|(?!\p{Extended_Pictographic}))/gu;
const LINE_BREAKS = /\r\n?|\u2028|\u2029|\u0085/g;
/** from the first space or tab of a run only: tried at every one of them, `[ \t]+$` took quadratic time on long runs */
const TRAILING_SPACE = /(?<![ \t])[ \t]+$/gm;

/**
 * either of the above, or a zero-width joiner (outside the class: in one, it reads as joining its neighbours):
 * most texts have none, and one scan for all is half the cost of two replaces
 */
const LINE_BREAK_OR_CONTROL =
  /[\r\u2028\u2029\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\uFEFF\u200B\u00AD\u200C\u2060]|\u200D/;

/**
 * a soft hyphen at a line end, between letters (the one before may be a combining mark: text in NFD); spaces and
 * tabs around the line break go with it
 */
const SOFT_HYPHEN_AT_LINE_END = /([\p{L}\p{M}])\u00AD[ \t]*\n[ \t]*(?=\p{L})/gu;

/**
 * Joins a word a soft hyphen (U+00AD) breaks at a line end ("Kündigungs\u00AD\nschutz" -> "Kündigungsschutz"):
 * a soft hyphen only ever marks a break inside a word, so the line break after it is none between words.
 */
export function joinSoftHyphenBreaks(text: string): string {
  return text.includes('\u00AD') ? text.replace(SOFT_HYPHEN_AT_LINE_END, '$1') : text;
}

export function normalizeText(raw: string): string {
  // soft hyphens at line ends joined before the rest are removed: removed first, they left the word in halves
  const cleaned = LINE_BREAK_OR_CONTROL.test(raw)
    ? removeZeroWidthJoiners(joinSoftHyphenBreaks(raw.replace(LINE_BREAKS, '\n')).replace(CONTROL, ''))
    : raw;
  const text = cleaned.normalize('NFC');
  // after the line breaks are unified, only "\n" ends a line: a block with no space or tab before one (or at the
  // end) is left as it is, without the multiline expression's match attempt at every space of the text
  const trailing = text.includes(' \n') || text.includes('\t\n') || /[ \t]$/.test(text);
  return trailing ? text.replace(TRAILING_SPACE, '') : text;
}

function removeZeroWidthJoiners(text: string): string {
  return text.includes('\u200D') ? text.replace(ZWJ_OUTSIDE_EMOJI, '') : text;
}

/** German words after a suspended hyphen ("Ein- und Ausgang"): the hyphen there is not a line-end break. */
const SUSPENDED_HYPHEN_FOLLOWERS = new Set([
  'und',
  'oder',
  'bzw',
  'sowie',
  'bis',
  'als',
  'wie',
  'noch',
  'and',
  'or',
  'u', // "Ein- u. Ausgänge"
]);

/**
 * Joins words hyphenated at a line end ("Qualitäts-\nsicherung" -> "Qualitätssicherung") when the next line
 * continues in lower case. Compounds with a capitalised second part ("IT-\nSicherheit") keep their hyphen,
 * and only the line break goes. A suspended hyphen ("Lehr-\nund Lernmittel") is left alone, and a soft
 * hyphen (U+00AD) at a line end always joins: it only ever marks a break inside a word.
 */
export function joinLineEndHyphenation(text: string): string {
  return (
    joinSoftHyphenBreaks(text)
      // the next line's word is looked at, not taken: it may end in a hyphen of its own ("Mess-\ngeräte-\nhersteller")
      .replace(/(\p{Ll})[-\u2010]\n[ \t]*(?=(\p{Ll}+))/gu, (match, before: string, after: string) =>
        SUSPENDED_HYPHEN_FOLLOWERS.has(after) ? match : before,
      )
      .replace(/(\p{L})[-\u2010]\n[ \t]*(\p{Lu})/gu, '$1-$2')
  );
}

/**
 * A title as stored and shown: normalised as text is (a soft hyphen or an invisible character in it would keep
 * a search for the word from finding it), on one line, trimmed.
 */
export function normalizeTitle(raw: string): string {
  return normalizeText(raw).replace(/\s+/g, ' ').trim();
}
