/** Where a text stops being JSON, and why, without quoting any of it. */
export interface JsonSyntaxError {
  /** 1-based */
  line: number;
  /** 1-based, in UTF-16 code units as JSON.parse counts */
  column: number;
  reason: string;
}

/**
 * Finds the first syntax error of a text JSON.parse refused. JSON.parse's own message may quote a snippet of the
 * text (Node 20: `Unexpected token 's', ..."cApiKey": sk-ant-SEC"... is not valid JSON`), and a config file's
 * snippet can be part of a secret a user pasted in, so a config error reports this instead: a position and a reason
 * naming no character of the text. Undefined when the scan finds nothing wrong (then the caller names no position).
 */
export function findJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let pos = 0;
  const fail = (reason: string, at = pos): never => {
    throw new Located(at, at >= text.length ? 'unexpected end of file' : reason);
  };
  const skipWhitespace = () => {
    while (pos < text.length && ' \t\n\r'.includes(text[pos] as string)) pos++;
  };
  const expect = (char: string, reason: string) => {
    skipWhitespace();
    if (text[pos] !== char) fail(reason);
    pos++;
  };
  const literal = (word: string) => {
    for (const char of word) {
      if (text[pos] !== char) fail(`unexpected character in ${word}`);
      pos++;
    }
  };
  const digits = (reason: string) => {
    const start = pos;
    while (pos < text.length && /[0-9]/.test(text[pos] as string)) pos++;
    if (pos === start) fail(reason);
  };
  const string = () => {
    pos++; // the opening quote
    for (;;) {
      if (pos >= text.length) fail('unterminated string');
      const code = text.charCodeAt(pos);
      if (code === 0x22) {
        pos++;
        return;
      }
      if (code < 0x20) fail('control character (a line break or a tab) in a string');
      if (code === 0x5c) {
        pos++;
        const escaped = text[pos];
        if (escaped === 'u') {
          pos++;
          for (let hex = 0; hex < 4; hex++, pos++)
            if (!/[0-9a-fA-F]/.test(text[pos] ?? '')) fail('bad \\u escape in a string');
        } else if (escaped !== undefined && '"\\/bfnrt'.includes(escaped)) pos++;
        else fail('bad escape in a string');
      } else pos++;
    }
  };
  const number = () => {
    if (text[pos] === '-') pos++;
    if (text[pos] === '0') pos++;
    else digits('a number expected');
    if (text[pos] === '.') {
      pos++;
      digits('digits expected after the decimal point');
    }
    if (text[pos] === 'e' || text[pos] === 'E') {
      pos++;
      if (text[pos] === '+' || text[pos] === '-') pos++;
      digits('digits expected in the exponent');
    }
  };
  const value = (depth: number): void => {
    // deeper than any configuration: JSON.parse refused the text for another reason, or the scan would overflow
    if (depth > 512) throw new Located(-1, '');
    skipWhitespace();
    const char = text[pos];
    if (char === '{') {
      pos++;
      skipWhitespace();
      if (text[pos] === '}') {
        pos++;
        return;
      }
      for (;;) {
        skipWhitespace();
        if (text[pos] !== '"') fail('a property name in double quotes expected');
        string();
        expect(':', "':' expected after a property name");
        value(depth + 1);
        skipWhitespace();
        if (text[pos] === '}') {
          pos++;
          return;
        }
        if (text[pos] !== ',') fail("',' or '}' expected after a property value");
        pos++;
      }
    }
    if (char === '[') {
      pos++;
      skipWhitespace();
      if (text[pos] === ']') {
        pos++;
        return;
      }
      for (;;) {
        value(depth + 1);
        skipWhitespace();
        if (text[pos] === ']') {
          pos++;
          return;
        }
        if (text[pos] !== ',') fail("',' or ']' expected after an array element");
        pos++;
      }
    }
    if (char === '"') string();
    else if (char === 't') literal('true');
    else if (char === 'f') literal('false');
    else if (char === 'n') literal('null');
    else if (char === '-' || (char !== undefined && /[0-9]/.test(char))) number();
    else fail('a value expected: text in double quotes, a number, true, false, null, an object or an array');
  };
  try {
    value(0);
    skipWhitespace();
    if (pos < text.length) fail('more text after the JSON value');
    return undefined;
  } catch (error) {
    if (!(error instanceof Located)) throw error;
    if (error.offset < 0) return undefined;
    const before = text.slice(0, error.offset);
    const lineStart = before.lastIndexOf('\n') + 1;
    return {
      line: before.split('\n').length,
      column: error.offset - lineStart + 1,
      reason: error.reason,
    };
  }
}

class Located extends Error {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}
