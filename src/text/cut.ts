/**
 * The first `max` UTF-16 code units of a text, one fewer where the cut would split a surrogate pair (an emoji, say):
 * half a pair is no character, and stored as UTF-8 it is invalid (MariaDB and SQLite then keep U+FFFD instead).
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
