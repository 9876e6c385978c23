import { expect } from 'chai';
import { citedSectionOf } from '../../../src/retrieval/cited-section.js';

/** A chunk that starts with the end of § 3 and holds § 4 and § 5, as the chunker merges a law's short paragraphs. */
const parts = [
  'jährlich mindestens 24 Werktage.\n\n',
  '§ 4 Wartezeit\n\nDer volle Urlaubsanspruch wird erstmalig nach sechsmonatigem Bestehen des Arbeitsverhältnisses erworben.\n\n',
  '§ 5 Teilurlaub\n\nAnspruch auf ein Zwölftel des Jahresurlaubs für jeden vollen Monat des Bestehens hat der Arbeitnehmer, wenn er in dem Kalenderjahr die Wartezeit nicht erfüllt.',
];
const content = parts.join('');
const metadata = JSON.stringify({
  sectionIndex: 3,
  lastSectionIndex: 5,
  sectionStarts: [
    { offset: parts[0]!.length, headingPath: ['§ 4 Wartezeit'], page: 2 },
    { offset: parts[0]!.length + parts[1]!.length, heading: '§ 5 Teilurlaub', depth: 1, page: 3 },
  ],
});
const start = ['§ 3 Dauer des Urlaubs'];

describe('the section a hit cites', () => {
  it('is the section of the chunk the query shares the most with, with its page and offset', () => {
    const cite = citedSectionOf('Nach wie vielen Monaten bekomme ich den vollen Urlaubsanspruch?');
    expect(cite(content, start, 1, metadata)).to.deep.include({
      headingPath: ['§ 4 Wartezeit'],
      page: 2,
      offset: parts[0]!.length,
    });
    expect(citedSectionOf('Zwölftel für jeden Monat')(content, start, 1, metadata).headingPath).to.deep.equal(
      ['§ 5 Teilurlaub'],
    );
  });

  it('counts the heading of the section the chunk starts in, which lies before the chunk', () => {
    const cited = citedSectionOf('Dauer')(content, start, 1, metadata);
    expect(cited).to.deep.include({ headingPath: start, page: 1, offset: 0 });
  });

  it('is the part with the most text when the query shares no word with any (a dense model found the chunk)', () => {
    expect(citedSectionOf('Xylophon')(content, start, 1, metadata).headingPath).to.deep.equal([
      '§ 5 Teilurlaub',
    ]);
  });

  it('is the section the chunk starts in when the chunk lies in one, or its metadata names none usable', () => {
    const cite = citedSectionOf('Wartezeit');
    expect(cite(content, start, 1, '{"sectionIndex":3,"lastSectionIndex":3}')).to.deep.equal({
      headingPath: start,
      page: 1,
      offset: 0,
    });
    expect(cite(content, start, null, null).headingPath).to.deep.equal(start);
    const broken = JSON.stringify({
      sectionStarts: [
        { offset: content.length + 5, headingPath: ['§ 4 Wartezeit'] },
        { offset: 'x', headingPath: ['§ 4 Wartezeit'] },
        { offset: 10, headingPath: 'kein Pfad' },
      ],
    });
    expect(cite(content, start, 1, broken).headingPath).to.deep.equal(start);
  });
});
