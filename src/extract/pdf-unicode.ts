/**
 * Unicode fixes for pdf.js text content.
 *
 * pdf.js normalises text content with NFKC for a set of compatibility characters (its normalizeUnicode):
 * ligatures (ﬁ -> fi), Arabic and Hebrew presentation forms, special spaces - and the micro sign µ, which
 * becomes the Greek letter μ. We keep µ as written (it is what a German keyboard types, and what DOCX and
 * TXT extraction return, so a search for "µF" finds PDFs too) and apply the rest ourselves: text content is
 * read with disableNormalization and passed through compatibilityForms.
 *
 * pdf.js leaves text in a ZapfDingbats font without a ToUnicode map as the raw character codes ("4" for
 * the check mark ✔, "l" for ●, "¬" for ①): its glyph list lacks the dingbat glyph names. dingbatsText maps
 * those codes through the font's standard encoding instead, so the page text has the symbols, not letters.
 */

/** pdf.js's NFKC set (pdf.worker normalizeUnicode) without U+00B5 MICRO SIGN. */
const COMPATIBILITY =
  /([\u00a0\u037e\u0eb3\u2000-\u200a\u202f\u2126\ufb00-\ufb04\ufb06\ufb20-\ufb36\ufb38-\ufb3c\ufb3e\ufb40-\ufb41\ufb43-\ufb44\ufb46-\ufba1\ufba4-\ufba9\ufbae-\ufbb1\ufbd3-\ufbdc\ufbde-\ufbe7\ufbea-\ufbf8\ufbfc-\ufbfd\ufc00-\ufc5d\ufc64-\ufcf1\ufcf5-\ufd3d\ufd88\ufdf4\ufdfa-\ufdfb\ufe71\ufe77\ufe79\ufe7b\ufe7d]+)|(\ufb05+)/gu;

export function compatibilityForms(text: string): string {
  return text.replace(COMPATIBILITY, (_, forms: string | undefined, longST: string | undefined) =>
    forms ? forms.normalize('NFKC') : 'ſt'.repeat(longST?.length ?? 0),
  );
}

/** ZapfDingbats standard encoding: the character for each code from 0x20 to 0xFF (NUL: no glyph). */
const DINGBATS =
  ' ✁✂✃✄☎✆✇✈✉☛☞✌✍✎✏✐✑✒✓✔✕✖✗✘✙✚✛✜✝✞✟✠✡✢✣✤✥✦✧★✩✪✫✬✭✮✯✰✱✲✳✴✵✶✷✸✹✺✻✼✽✾✿❀❁❂❃❄❅❆❇❈❉❊❋●❍■❏❐❑❒▲▼◆❖◗❘❙❚❛❜❝❞\u0000❨❩❪❫❬❭❮❯❰❱❲❳❴❵\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000❡❢❣❤❥❦❧♣♦♥♠①②③④⑤⑥⑦⑧⑨⑩❶❷❸❹❺❻❼❽❾❿➀➁➂➃➄➅➆➇➈➉➊➋➌➍➎➏➐➑➒➓➔→↔↕➘➙➚➛➜➝➞➟➠➡➢➣➤➥➦➧➨➩➪➫➬➭➮➯\u0000➱➲➳➴➵➶➷➸➹➺➻➼➽➾\u0000';

/** Raw ZapfDingbats codes (U+0021-U+00FE as pdf.js passes them through) -> the dingbats they encode. */
export function dingbatsText(text: string): string {
  return text.replace(/[\u0021-\u00fe]/g, (char) => {
    const symbol = DINGBATS[char.charCodeAt(0) - 0x20];
    return symbol && symbol !== '\u0000' ? symbol : char;
  });
}

/** Font names pdf.js itself treats as ZapfDingbats (ZapfDingbats, subset "ABCDEF+ZapfDingbats", Dingbats). */
export const isDingbatsFont = (name: string | undefined): boolean => /dingbats/i.test(name ?? '');
