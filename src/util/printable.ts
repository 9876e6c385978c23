/**
 * Text for a terminal, with the characters that would act on it shown as escapes instead. A file name may hold any
 * character but `/`: `rot\x1b[31m.txt` turned what followed it red (an escape sequence may also move the cursor or
 * retitle the window), `zeile\nzwei.txt` printed as two lines, the second looking like a path of its own. C0 and C1
 * control characters and DEL become `\n`, `\r`, `\t` or `\xHH`; the bidirectional overrides and isolates, which
 * reorder what follows them on screen, become `\u202e`. The text output of every command shows paths, titles and
 * names through it; --json keeps them exact.
 */
const CONTROL = /[\u0000-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g;
/** the same, line breaks and tabs left alone: for text of several lines (a context, an error message) */
const CONTROL_BUT_LINES = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const escaped = (char: string): string => {
  const code = char.charCodeAt(0);
  return (
    NAMED[char] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`)
  );
};

/**
 * A path, title or name for one line of text output: every control character escaped (a line break too). A value
 * from a row may be a number or null: null and undefined are shown as nothing.
 */
export const printable = (text: unknown): string => String(text ?? '').replace(CONTROL, escaped);

/** Text of several lines for text output: control characters escaped, its line breaks and tabs kept. */
export const printableLines = (text: unknown): string =>
  String(text ?? '').replace(CONTROL_BUT_LINES, escaped);

/**
 * A message (a log line, an error) for text output: control characters escaped as printable does, but for the line
 * breaks that begin an indented line, which is how a message of several lines is written ("pipeline 'x' is
 * invalid:\n  row 3: ..."). Any other line break is part of a value it quotes (a file name): `zeile\nzwei.txt`
 * printed as two lines cut the reason off from its file.
 */
export const printableMessage = (text: unknown): string =>
  String(text ?? '').replace(CONTROL, (char, at: number, whole: string) =>
    char === '\n' && whole.startsWith('  ', at + 1) ? char : escaped(char),
  );
