/**
 * A small stop-word vote: enough to tell German from English, French, Spanish, Italian and Dutch training
 * material. Returns null for text too short to judge.
 */
const STOPWORDS: Record<string, string[]> = {
  de: ['der', 'die', 'das', 'und', 'ist', 'nicht', 'mit', 'den', 'von', 'zu', 'ein', 'eine', 'für', 'auf', 'sich', 'auch', 'werden', 'oder', 'dem', 'wird'],
  en: ['the', 'and', 'is', 'of', 'to', 'in', 'that', 'it', 'for', 'with', 'are', 'this', 'be', 'on', 'not', 'as', 'by', 'or', 'an', 'which'],
  fr: ['le', 'la', 'les', 'et', 'est', 'des', 'une', 'un', 'du', 'pour', 'dans', 'que', 'qui', 'pas', 'sur', 'avec', 'par', 'au', 'ce', 'sont'],
  es: ['el', 'la', 'los', 'las', 'y', 'es', 'de', 'que', 'en', 'un', 'una', 'por', 'con', 'para', 'del', 'se', 'no', 'al', 'su', 'como'],
  it: ['il', 'la', 'che', 'e', 'di', 'un', 'una', 'per', 'non', 'sono', 'del', 'della', 'con', 'nel', 'gli', 'le', 'si', 'come', 'anche', 'è'],
  nl: ['de', 'het', 'een', 'en', 'van', 'is', 'dat', 'niet', 'op', 'te', 'met', 'voor', 'zijn', 'die', 'ook', 'als', 'aan', 'er', 'worden', 'wordt'],
};
const LOOKUP = new Map<string, string[]>();
for (const [lang, words] of Object.entries(STOPWORDS)) for (const w of words) LOOKUP.set(w, [...(LOOKUP.get(w) ?? []), lang]);

export function detectLanguage(text: string, sampleChars = 20000): string | null {
  const votes: Record<string, number> = {};
  let words = 0;
  for (const match of text.slice(0, sampleChars).toLowerCase().matchAll(/\p{L}+/gu)) {
    words++;
    for (const lang of LOOKUP.get(match[0]) ?? []) votes[lang] = (votes[lang] ?? 0) + 1;
  }
  const ranked = Object.entries(votes).sort((a, b) => b[1] - a[1]);
  if (words < 5 || !ranked.length || ranked[0]![1] < 2) return null;
  return ranked[0]![0];
}
