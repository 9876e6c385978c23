/**
 * Text in the Windows symbol fonts (Wingdings, Wingdings 2 and 3, Webdings). Their glyphs sit at character
 * codes 0x20-0xFF, and a PDF that embeds such a font without a ToUnicode map comes out of pdf.js as the codes
 * moved into the private use area, U+F020-U+F0FF (the font's own symbol cmap): a form's Wingdings check boxes
 * become U+F06F, which a viewer shows as an empty box and no one can search for. The Wingdings codes with a
 * Unicode equivalent are mapped to it; the rest of these characters, and all of the fonts we have no table for,
 * are dropped. Private use characters of other fonts are theirs to define and stay.
 */

export type SymbolFont = 'wingdings' | 'wingdings 2' | 'wingdings 3' | 'webdings';

/**
 * Wingdings: the character for each code from 0x20 to 0xFF (NUL: no equivalent), after the published
 * Wingdings-to-Unicode table (Wikipedia's "Wingdings", with the fonts' PostScript glyph names), except for the
 * white squares 0x6F, 0x70 and 0xA8: Word and the forms made with it print them as check boxes, so they are
 * U+2610 BALLOT BOX beside the boxes with a check (0xFE) and an X (0xFD).
 */
const WINGDINGS = Array.from(
  [
    ' ✏✂✁👓🔔📖\u0000☎✆✉\u0000📪📫📬📭', // 0x20-0x2F
    '📁📂📄\u0000\u0000\u0000⌛⌨\u0000\u0000💻\u0000💾\u0000✇✍', // 0x30-0x3F
    '\u0000✌👌👍👎☜☞☝☟✋☺😐☹💣☠⚐', // 0x40-0x4F
    '🚩✈☼💧❄\u0000✞\u0000✠✡☪☯ॐ☸♈♉', // 0x50-0x5F
    '♊♋♌♍♎♏♐♑♒♓&&●❍■☐', // 0x60-0x6F
    '☐❑❒⬧⧫◆❖⬥⌧⍓⌘❀✿❝❞▯', // 0x70-0x7F
    '⓪①②③④⑤⑥⑦⑧⑨⑩⓿❶❷❸❹', // 0x80-0x8F
    '❺❻❼❽❾❿\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000·•', // 0x90-0x9F
    '▪○⭕\u0000◉◎\u0000▪☐\u0000✦★✶✴✹✵', // 0xA0-0xAF
    '\u0000⌖⟡⌑\u0000✪✰🕐🕑🕒🕓🕔🕕🕖🕗🕘', // 0xB0-0xBF
    '🕙🕚🕛\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000', // 0xC0-0xCF
    '\u0000\u0000\u0000\u0000\u0000⌫⌦\u0000➢\u0000\u0000\u0000➲\u0000\u0000\u0000', // 0xD0-0xDF
    '\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000➔\u0000\u0000\u0000\u0000\u0000\u0000⇦', // 0xE0-0xEF
    '⇨⇧⇩⬄⇳⬀⬁⬃⬂▭▫✗✓☒☑\u0000', // 0xF0-0xFF
  ].join(''),
);

/** The symbol font a font name (a PDF BaseFont, "ABCDEF+Wingdings-Regular", "Wingdings2") names, if any. */
export function symbolFontOf(name: string | undefined): SymbolFont | undefined {
  const family = /(wingdings|webdings)(?:[\s_-]*([23])(?!\d))?/i.exec(name ?? '');
  if (family === null) return undefined;
  if (family[1]!.toLowerCase() === 'webdings') return 'webdings';
  return family[2] === undefined ? 'wingdings' : family[2] === '2' ? 'wingdings 2' : 'wingdings 3';
}

/** A text item's text in a symbol font, with its private use characters U+F020-U+F0FF mapped or dropped. */
export function symbolFontText(text: string, font: SymbolFont): string {
  return text.replace(/[\uf020-\uf0ff]/g, (char) => {
    const symbol = font === 'wingdings' ? WINGDINGS[char.charCodeAt(0) - 0xf020] : undefined;
    return symbol !== undefined && symbol !== '\u0000' ? symbol : '';
  });
}
