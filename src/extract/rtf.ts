/**
 * RTF as paragraphs, for the RTF a Word document carries as an altChunk (docx-altchunk.ts): the visible text of the
 * body, paragraph by paragraph, headings by outline level (`\outlinelevelN` on the paragraph or on its style), table
 * rows as paragraphs with their cells joined by " | ", footnotes after the body. Not a layout reader: fonts, sizes and
 * positions are ignored.
 *
 * One forward pass over the bytes, every construct bounded: a control word's name and number have a maximum length,
 * `\binN` skips at most what is left, and groups nested deeper than MAX_DEPTH share the state of the last one kept,
 * so hostile input costs time and memory in proportion to its length.
 *
 * A list item's number or bullet is read as written for readers without list support (`\listtext`, `\pntext`).
 * Left out: text a destination hides (font, colour and style tables, document info, pictures, field instructions,
 * headers, footers, every `{\*\...}` group), hidden (`\v`) and deleted (`\deleted`) text. `\'hh` bytes are decoded
 * in the code page `\ansicpgN` (or `\mac`) names, Windows-1252 when it names none or one TextDecoder does not know;
 * `\uN` is read as UTF-16 with the `\ucN` replacement characters after it skipped.
 */

import { isAsciiLetter, isDigit } from '../text/chars.js';

export interface TextParagraph {
  text: string;
  /** heading level 1-6 */
  heading?: number;
}

/**
 * A paragraph's text as read (RTF, an altChunk's HTML): white space collapsed, cell separators at the ends gone. The
 * ends are trimmed by a scan: a pattern anchored at the end retries at every run of spaces and bars, which takes a
 * row of thousands of empty cells quadratic time.
 */
export function paragraphText(text: string): string {
  const collapsed = text.replace(/\s+/g, ' ');
  const trimmed = (i: number) => collapsed[i] === ' ' || collapsed[i] === '|';
  let start = 0;
  let end = collapsed.length;
  while (start < end && trimmed(start)) start++;
  while (end > start && trimmed(end - 1)) end--;
  return collapsed.slice(start, end);
}

/** Groups nested deeper than this share the state of the deepest kept (Word itself nests a few dozen at most). */
const MAX_DEPTH = 1000;

/** Destinations whose text is not part of what the document shows. */
const HIDDEN_DESTINATIONS = new Set(
  (
    'fonttbl colortbl info pict fldinst header headerl headerr headerf footer footerl footerr footerf listtable ' +
    'listoverridetable revtbl rsidtbl generator xmlnstbl themedata colorschememapping latentstyles datastore ' +
    'objdata filetbl userprops docvar pgdsctbl nonshppict bkmkstart bkmkend txe xe tc template mmathPr pntxta pntxtb'
  ).split(' '),
);

/** What a group's text is for. */
type Target = 'body' | 'note' | 'style' | 'hidden';

interface GroupState {
  target: Target;
  /** replacement characters after a \uN */
  uc: number;
  /** \v: hidden text is on */
  hiddenText: boolean;
  /** \deleted: text deleted with revisions tracked is on */
  deleted: boolean;
  /** the paragraph's outline level (0-8), from \outlinelevelN or its style; -1 for body text */
  outline: number;
  /** the style number a stylesheet entry defines (\sN in the stylesheet), -1 for none */
  styleNumber: number;
}

/** Single-character control symbols and the text they stand for. */
const SYMBOLS: Readonly<Record<string, string>> = {
  '\\': '\\',
  '{': '{',
  '}': '}',
  '~': ' ',
  _: '-',
  '-': '',
};

/** Control words that stand for a character. */
const CHARACTER_WORDS: Readonly<Record<string, string>> = {
  tab: ' ',
  line: ' ',
  emdash: '—',
  endash: '–',
  emspace: ' ',
  enspace: ' ',
  qmspace: ' ',
  bullet: '•',
  lquote: '‘',
  rquote: '’',
  ldblquote: '“',
  rdblquote: '”',
  cell: ' | ',
  nestcell: ' | ',
};

/** Control words that end a paragraph. */
const PARAGRAPH_ENDS = new Set(['par', 'sect', 'page', 'row', 'nestrow']);

const HEADING_STYLE_NAME = /^(?:heading|überschrift)\s*([1-9])$/i;

/** True when the bytes start (after white space) as RTF does. */
export function isRtf(bytes: Uint8Array): boolean {
  let i = 0;
  while (
    i < bytes.length &&
    (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)
  )
    i++;
  return bytes[i] === 0x7b && bytes[i + 1] === 0x5c && bytes[i + 2] === 0x72 && bytes[i + 3] === 0x74;
}

/** The TextDecoder for an \ansicpgN code page; undefined when there is none for it. */
function codePageDecoder(codePage: number) {
  const labels: Record<number, string> = {
    932: 'shift_jis',
    936: 'gbk',
    949: 'euc-kr',
    950: 'big5',
    10000: 'macintosh',
  };
  const label =
    labels[codePage] ??
    (codePage === 874 || (codePage >= 1250 && codePage <= 1258) ? `windows-${codePage}` : '');
  if (!label) return undefined;
  try {
    return new TextDecoder(label);
  } catch {
    return undefined;
  }
}

/**
 * The lead bytes of a double-byte code page (Shift-JIS, GBK, Korean, Big5): the byte after one is the second half of
 * the same character even when it is a plain ASCII letter, which writers put in the text as it is (`\'83A`).
 */
function doubleByteLead(codePage: number): ((byte: number) => boolean) | undefined {
  if (codePage === 932) return (b) => (b >= 0x81 && b <= 0x9f) || (b >= 0xe0 && b <= 0xfc);
  if (codePage === 936 || codePage === 949 || codePage === 950) return (b) => b >= 0x81 && b <= 0xfe;
  return undefined;
}

/** The paragraphs of an RTF document; an empty list when it shows no text. */
export function rtfParagraphs(bytes: Uint8Array): TextParagraph[] {
  return new RtfReader(bytes).read();
}

class RtfReader {
  private decoder = new TextDecoder('windows-1252');
  /** the lead bytes of the code page when it is a double-byte one */
  private lead: ((byte: number) => boolean) | undefined;
  private readonly stack: GroupState[] = [];
  /** groups opened beyond MAX_DEPTH, sharing the state of the last one kept */
  private excessDepth = 0;
  private state: GroupState = {
    target: 'body',
    uc: 1,
    hiddenText: false,
    deleted: false,
    outline: -1,
    styleNumber: -1,
  };
  /** \'hh bytes and 8-bit characters not yet decoded (a double-byte code page needs them together) */
  private pendingBytes: number[] = [];
  /** replacement characters still to skip after a \uN */
  private skip = 0;
  private body = '';
  private note = '';
  private styleName = '';
  private readonly paragraphs: TextParagraph[] = [];
  private readonly notes: TextParagraph[] = [];
  /** style number -> outline level, from the stylesheet */
  private readonly styleOutline = new Map<number, number>();
  /** a group whose first control word is still to come, and whether it began with \* */
  private groupStart = false;
  private starred = false;

  constructor(private readonly bytes: Uint8Array) {}

  read(): TextParagraph[] {
    const b = this.bytes;
    let i = 0;
    while (i < b.length) {
      const c = b[i] as number;
      if (c === 0x7b) {
        this.openGroup();
        i++;
      } else if (c === 0x7d) {
        this.closeGroup();
        i++;
      } else if (c === 0x5c) {
        i = this.control(i + 1);
      } else if (c === 0x0a || c === 0x0d) {
        i++; // line breaks in the source are not text, and a destination's word may follow one
      } else {
        this.literal(c === 0x09 ? 0x20 : c);
        this.groupStart = false;
        i++;
      }
    }
    // a file cut off inside groups: they end here, so the body's last paragraph is not lost with a hidden group's state
    while (this.stack.length > 0 || this.excessDepth > 0) this.closeGroup();
    this.endParagraph();
    return [...this.paragraphs, ...this.notes];
  }

  private openGroup(): void {
    this.flushBytes();
    this.skip = 0;
    if (this.stack.length >= MAX_DEPTH) {
      this.excessDepth++;
    } else {
      this.stack.push(this.state);
      this.state = { ...this.state };
    }
    this.groupStart = true;
    this.starred = false;
  }

  private closeGroup(): void {
    this.flushBytes();
    this.skip = 0;
    this.groupStart = false;
    if (this.excessDepth > 0) {
      this.excessDepth--;
      return;
    }
    const closed = this.state;
    const outer = this.stack.pop();
    if (!outer) return; // a stray closing brace
    if (closed.target === 'style' && outer.target === 'style' && closed.styleNumber >= 0) {
      // the end of a stylesheet entry: its outline level, or a level its name gives
      const name = this.styleName.replace(/;\s*$/, '').trim();
      const level =
        closed.outline >= 0 ? closed.outline : Number(HEADING_STYLE_NAME.exec(name)?.[1] ?? 0) - 1;
      if (level >= 0) this.styleOutline.set(closed.styleNumber, level);
    }
    if (closed.target === 'style') this.styleName = '';
    if (closed.target === 'note' && outer.target !== 'note') this.endNote();
    this.state = outer;
  }

  /** A control word or symbol after the backslash at i - 1; returns the index after it. */
  private control(i: number): number {
    const b = this.bytes;
    if (i >= b.length) return i;
    const c = b[i] as number;
    if (!isAsciiLetter(c)) return this.symbol(c, i + 1);
    let end = i;
    while (end < b.length && end - i < 32 && isAsciiLetter(b[end] as number)) end++;
    const word = String.fromCharCode(...b.subarray(i, end));
    let parameter: number | undefined;
    let at = end;
    const negative = b[at] === 0x2d && isDigit(b[at + 1] ?? 0);
    if (negative) at++;
    if (isDigit(b[at] ?? 0)) {
      let value = 0;
      const digitsEnd = Math.min(b.length, at + 10);
      while (at < digitsEnd && isDigit(b[at] as number)) value = value * 10 + ((b[at++] as number) - 0x30);
      parameter = negative ? -value : value;
    }
    if (b[at] === 0x20) at++; // the delimiting space belongs to the control word
    if (word === 'bin') {
      this.groupStart = false;
      return Math.min(b.length, at + Math.max(0, parameter ?? 0));
    }
    this.word(word, parameter);
    return at;
  }

  private symbol(c: number, next: number): number {
    if (c === 0x27) {
      // \'hh: a byte in the code page
      const hex = String.fromCharCode(this.bytes[next] ?? 0, this.bytes[next + 1] ?? 0);
      this.groupStart = false;
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return next;
      if (this.skip > 0) this.skip--;
      else this.pendingBytes.push(Number.parseInt(hex, 16));
      return next + 2;
    }
    if (c === 0x2a) {
      // \*: an ignorable destination; its group is hidden unless known otherwise
      if (this.groupStart) this.starred = true;
      return next;
    }
    this.groupStart = false;
    if (this.skip > 0) {
      // a control symbol counts as one replacement character after \uN, as a control word does
      this.skip--;
      return next;
    }
    if (c === 0x0a || c === 0x0d) {
      this.endParagraph(); // a backslash before a line break is \par
      return next;
    }
    const text = SYMBOLS[String.fromCharCode(c)];
    if (text !== undefined) this.text(text);
    return next;
  }

  private word(word: string, parameter: number | undefined): void {
    // bytes waiting to be decoded belong to the text before the word, which may change what is shown (\v, \plain)
    this.flushBytes();
    const state = this.state;
    const first = this.groupStart;
    this.groupStart = false;
    if (first && (this.starred || HIDDEN_DESTINATIONS.has(word))) {
      state.target = 'hidden';
      return;
    }
    if (first && word === 'stylesheet') {
      state.target = 'style';
      return;
    }
    if (first && (word === 'footnote' || word === 'endnote')) {
      if (state.target === 'body') state.target = 'note';
      return;
    }
    if (this.skip > 0) {
      // a control word counts as one replacement character after \uN
      this.skip--;
      return;
    }
    switch (word) {
      case 'ansicpg': {
        const decoder = parameter !== undefined && codePageDecoder(parameter);
        if (decoder) {
          this.decoder = decoder;
          this.lead = doubleByteLead(parameter!);
        }
        return;
      }
      case 'mac':
        this.decoder = codePageDecoder(10000) ?? this.decoder;
        this.lead = undefined;
        return;
      case 'u': {
        if (parameter === undefined) return;
        this.text(String.fromCharCode(parameter < 0 ? parameter + 65536 : parameter & 0xffff));
        this.skip = state.uc;
        return;
      }
      case 'uc':
        state.uc = Math.max(0, Math.min(parameter ?? 1, 16));
        return;
      case 'v':
        state.hiddenText = parameter !== 0;
        return;
      case 'deleted':
        state.deleted = parameter !== 0;
        return;
      case 'plain':
        state.hiddenText = false;
        state.deleted = false;
        return;
      case 'pard':
        state.outline = -1;
        return;
      case 'outlinelevel':
        state.outline = parameter !== undefined && parameter >= 0 && parameter <= 8 ? parameter : -1;
        return;
      case 's':
        if (state.target === 'style') state.styleNumber = parameter ?? 0;
        else state.outline = this.styleOutline.get(parameter ?? 0) ?? -1;
        return;
    }
    if (PARAGRAPH_ENDS.has(word)) {
      if (word === 'nestrow') this.text(' ');
      else this.endParagraph();
      return;
    }
    const character = CHARACTER_WORDS[word];
    if (character !== undefined) this.text(character);
  }

  /** A literal byte of text (7-bit: itself; 8-bit: in the code page). */
  private literal(c: number): void {
    if (this.skip > 0) {
      this.skip--;
      return;
    }
    if (c >= 0x80 || this.awaitsSecondByte()) this.pendingBytes.push(c);
    else this.text(String.fromCharCode(c));
  }

  /** Whether the bytes waiting end with the first half of a double-byte character. */
  private awaitsSecondByte(): boolean {
    const lead = this.lead;
    if (lead === undefined) return false;
    const bytes = this.pendingBytes;
    let i = 0;
    while (i < bytes.length) i += lead(bytes[i] as number) ? 2 : 1;
    return i > bytes.length;
  }

  private text(text: string): void {
    this.flushBytes();
    this.append(text);
  }

  private flushBytes(): void {
    if (this.pendingBytes.length === 0) return;
    const decoded = this.decoder.decode(Uint8Array.from(this.pendingBytes));
    this.pendingBytes = [];
    this.append(decoded);
  }

  private append(text: string): void {
    const state = this.state;
    if (state.hiddenText || state.deleted || state.target === 'hidden') return;
    if (state.target === 'body') this.body += text;
    else if (state.target === 'note') this.note += text;
    else this.styleName += text;
  }

  private endParagraph(): void {
    this.flushBytes();
    const state = this.state;
    if (state.target === 'note') {
      this.endNote();
      return;
    }
    if (state.target !== 'body') return;
    const text = paragraphText(this.body);
    this.body = '';
    if (text === '') return;
    this.paragraphs.push(state.outline >= 0 ? { text, heading: Math.min(state.outline + 1, 6) } : { text });
  }

  private endNote(): void {
    this.flushBytes();
    const text = paragraphText(this.note);
    this.note = '';
    if (text !== '') this.notes.push({ text });
  }
}
