import { expect } from 'chai';
import {
  type FurniturePage,
  type FurnitureParagraph,
  removePageFurniture,
} from '../../../src/extract/pdf-furniture.js';

const paragraph = (text: string, size = 11): FurnitureParagraph => ({ lines: [{ text, size }] });

interface Edges {
  top?: string;
  bottom?: string;
}

/** a page's name in letters: body text with the page's number in it would itself follow the pages */
const letters = (number: number): string =>
  [...number.toString(26)].map((digit) => String.fromCharCode(97 + Number.parseInt(digit, 26))).join('');

/** A page of two paragraphs of body text with a small line above and below where `edges` gives one. */
function page(number: number, edges: Edges = {}): FurniturePage {
  const name = letters(number);
  const paragraphs = [
    paragraph(`The first paragraph of page ${name} says what the chapter is about at some length.`),
    paragraph(`The second paragraph of page ${name} goes on with it, again at some length.`),
  ];
  if (edges.top !== undefined) paragraphs.unshift(paragraph(edges.top, 9));
  if (edges.bottom !== undefined) paragraphs.push(paragraph(edges.bottom, 9));
  return { number, paragraphs };
}

/**
 * A book of chapters of the given lengths: a chapter's title page has no running footer, and two blank pages
 * before each chapter after the first are counted but left out of the file, so the offset between the printed
 * number and the page changes with every chapter (0 in the first chapter, then 2, 4, ...).
 */
function book(chapters: readonly number[], edges: (printed: number) => Edges): FurniturePage[] {
  const pages: FurniturePage[] = [];
  let printed = 0;
  for (const [index, length] of chapters.entries()) {
    if (index > 0) printed += 2;
    pages.push(page(pages.length + 1));
    printed++;
    for (let i = 1; i < length; i++) pages.push(page(pages.length + 1, edges(++printed)));
  }
  return pages;
}

/**
 * A page like `page` where the header (footer) is as far from the text as its lines are from one another, so
 * that it is the first line of the page's first paragraph (the last of its last), in the body text's size.
 */
function gluedPage(number: number, edges: Edges): FurniturePage {
  const glued = page(number);
  if (edges.top !== undefined) glued.paragraphs[0]!.lines.unshift({ text: edges.top, size: 11 });
  if (edges.bottom !== undefined) glued.paragraphs.at(-1)!.lines.push({ text: edges.bottom, size: 11 });
  return glued;
}

const texts = (pages: readonly FurniturePage[]): string[] =>
  pages.flatMap((p) => p.paragraphs.map((q) => q.lines.map((line) => line.text).join(' ')));

/** the small lines left on the pages */
const edgesLeft = (pages: readonly FurniturePage[]): string[] =>
  pages.flatMap((p) => p.paragraphs.filter((q) => q.lines[0]!.size < 11).map((q) => q.lines[0]!.text));

const bodyLines = (pages: readonly FurniturePage[]): number =>
  pages.flatMap((p) => p.paragraphs.filter((q) => q.lines[0]!.size === 11)).length;

describe('extract/pdf-furniture', () => {
  it('removes a running footer whose number is the page number plus one offset throughout', () => {
    // four pages of front matter without a number
    const pages = Array.from({ length: 40 }, (_, i) =>
      i < 4 ? page(i + 1) : page(i + 1, { bottom: `${i - 3} FREE CULTURE` }),
    );
    expect(removePageFurniture(pages)).to.deep.equal(['1 FREE CULTURE']);
    expect(edgesLeft(pages)).to.deep.equal([]);
    expect(bodyLines(pages)).to.equal(80);
  });

  it('removes a running footer whose offset changes once', () => {
    // numbered pages left out of the file: the offset goes from -4 to -2 at page 31
    const skipped = Array.from({ length: 40 }, (_, i) =>
      i < 4 ? page(i + 1) : page(i + 1, { bottom: `${i + 1 - (i + 1 <= 30 ? 4 : 2)} FREE CULTURE` }),
    );
    expect(removePageFurniture(skipped)).to.deep.equal(['1 FREE CULTURE']);
    expect(edgesLeft(skipped)).to.deep.equal([]);
    // a page put in without a number (page 21): the offset goes from 0 to -1
    const inserted = Array.from({ length: 40 }, (_, i) =>
      i + 1 === 21 ? page(21) : page(i + 1, { bottom: `${i + 1 - (i + 1 < 21 ? 0 : 1)} FREE CULTURE` }),
    );
    removePageFurniture(inserted);
    expect(edgesLeft(inserted)).to.deep.equal([]);
    expect(bodyLines(inserted)).to.equal(80);
  });

  it('removes a running footer whose offset changes with every chapter, also in a chapter of two pages', () => {
    const pages = book([7, 12, 5, 2, 9, 14, 6], (printed) => ({ bottom: `${printed} FREE CULTURE` }));
    const footers = pages.filter((p) => p.paragraphs.length === 3).length;
    expect(footers).to.equal(48);
    expect(removePageFurniture(pages)).to.deep.equal(['2 FREE CULTURE']);
    expect(edgesLeft(pages)).to.deep.equal([]);
    expect(bodyLines(pages)).to.equal(2 * pages.length);
  });

  it('removes a header on even and a footer on odd pages, each with jumping offsets', () => {
    const pages = book([9, 11, 3, 8, 10], (printed) =>
      printed % 2 === 0 ? { top: `${printed} FREE CULTURE` } : { bottom: `CHAPTER ${printed}` },
    );
    expect(removePageFurniture(pages)).to.have.members(['2 FREE CULTURE', 'CHAPTER 3']);
    expect(edgesLeft(pages)).to.deep.equal([]);
    expect(bodyLines(pages)).to.equal(2 * pages.length);
  });

  it('keeps numbers that follow the pages for fewer than three occurrences in a row', () => {
    // 1, 2 on pages 1, 2; 4, 5 on pages 3, 4; ...: rising numbers, but the offset changes every second page
    const pages = Array.from({ length: 12 }, (_, i) =>
      page(i + 1, { top: `Aufgabe ${i + 1 + Math.floor(i / 2)}` }),
    );
    expect(removePageFurniture(pages)).to.deep.equal([]);
    expect(edgesLeft(pages)).to.have.length(12);
  });

  it('keeps numbers that go back: two runs that both follow the pages are no page numbers together', () => {
    // "Schritt 1" to "Schritt 5" on pages 1 to 5 and again on pages 6 to 10
    const pages = Array.from({ length: 10 }, (_, i) => page(i + 1, { top: `Schritt ${(i % 5) + 1}` }));
    expect(removePageFurniture(pages)).to.deep.equal([]);
    expect(edgesLeft(pages)).to.have.length(10);
  });

  it('keeps an occurrence outside the runs whose number does not fit between them', () => {
    const pages = Array.from({ length: 24 }, (_, i) => {
      const number = i + 1;
      if (number === 12) return page(12, { bottom: '3 FREE CULTURE' }); // a number that goes back
      if (number === 13) return page(13, { bottom: '40 FREE CULTURE' }); // one that jumps ahead of the next run
      return page(number, { bottom: `${number - (number < 12 ? 0 : 2)} FREE CULTURE` });
    });
    removePageFurniture(pages);
    expect(edgesLeft(pages)).to.deep.equal(['3 FREE CULTURE', '40 FREE CULTURE']);
    expect(texts(pages).filter((t) => t.endsWith('FREE CULTURE'))).to.have.length(2);
  });

  it('takes a running header out of the paragraph it is glued to, keeping the rest of the paragraph', () => {
    const header = 'Exhibit A — Sample Contract';
    const pages = Array.from({ length: 13 }, (_, i) =>
      [2, 3, 4, 6].includes(i + 1) ? gluedPage(i + 1, { top: header }) : page(i + 1, { top: header }),
    );
    expect(removePageFurniture(pages)).to.deep.equal([header]);
    // its first occurrence stays, on page 1
    expect(texts(pages).filter((t) => t.includes(header))).to.deep.equal([header]);
    expect(pages[0]!.paragraphs[0]!.lines[0]!.text).to.equal(header);
    expect(bodyLines(pages)).to.equal(26);
    expect(pages[1]!.paragraphs[0]!.lines.map((line) => line.text)).to.deep.equal([
      'The first paragraph of page c says what the chapter is about at some length.',
    ]);
  });

  it('keeps a header where it is glued on its first page and takes it out of its first page of its own', () => {
    const header = 'Exhibit A — Sample Contract';
    const pages = Array.from({ length: 8 }, (_, i) =>
      i === 0 ? gluedPage(1, { top: header }) : page(i + 1, { top: header }),
    );
    expect(removePageFurniture(pages)).to.deep.equal([header]);
    expect(texts(pages).filter((t) => t.includes(header))).to.have.length(1);
    expect(pages[0]!.paragraphs[0]!.lines[0]!.text).to.equal(header);
  });

  it('takes a footer with the page number out of the paragraph above it only where the number follows the pages', () => {
    const pages = Array.from({ length: 12 }, (_, i) => {
      const number = i + 1;
      if (number === 5) return gluedPage(5, { bottom: 'Seite 5 von 12' });
      if (number === 9) return gluedPage(9, { bottom: 'Seite 3 von 12' }); // a reference, not the page's number
      return page(number, { bottom: `Seite ${number} von 12` });
    });
    expect(removePageFurniture(pages)).to.deep.equal(['Seite 1 von 12']);
    expect(texts(pages).filter((t) => t.includes('Seite'))).to.have.length(1);
    expect(pages[8]!.paragraphs.at(-1)!.lines.at(-1)!.text).to.equal('Seite 3 von 12');
    expect(pages[4]!.paragraphs.at(-1)!.lines.map((line) => line.text)).to.deep.equal([
      'The second paragraph of page f goes on with it, again at some length.',
    ]);
  });

  it('finds no furniture in lines glued to the text: the body may begin with the same line on page after page', () => {
    const line = 'Exhibit A — Sample Contract';
    // on two pages a paragraph of its own, too few to be furniture; glued on the others
    const pages = Array.from({ length: 10 }, (_, i) =>
      i < 2 ? page(i + 1, { top: line }) : gluedPage(i + 1, { top: line }),
    );
    expect(removePageFurniture(pages)).to.deep.equal([]);
    expect(texts(pages).filter((t) => t.includes(line))).to.have.length(10);
  });
});
