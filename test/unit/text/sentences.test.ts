import { expect } from 'chai';
import { splitSentences } from '../../../src/text/sentences.js';

function sentences(text: string): string[] {
  return splitSentences(text).map((s) => text.slice(s.start, s.end));
}

describe('splitSentences (German)', () => {
  it('splits plain sentences and keeps offsets exact', () => {
    const text = '  Der erste Satz. Der zweite Satz!  Ein dritter?';
    const spans = splitSentences(text);
    expect(spans.map((s) => text.slice(s.start, s.end))).to.deep.equal([
      'Der erste Satz.',
      'Der zweite Satz!',
      'Ein dritter?',
    ]);
    expect(spans[0]?.start).to.equal(2);
  });

  it('does not end at "z. B."', () => {
    expect(sentences('Das ist z. B. ein Test. Zweiter Satz.')).to.deep.equal([
      'Das ist z. B. ein Test.',
      'Zweiter Satz.',
    ]);
  });

  it('does not end at "z.B." written without spaces', () => {
    expect(sentences('Das ist z.B. ein Test. Zweiter Satz.')).to.deep.equal([
      'Das ist z.B. ein Test.',
      'Zweiter Satz.',
    ]);
  });

  it('does not end at "d. h."', () => {
    expect(sentences('Er kommt später, d. h. Montag. Gut.')).to.deep.equal([
      'Er kommt später, d. h. Montag.',
      'Gut.',
    ]);
  });

  it('does not end at "u. a." and "i. d. R." and "u. U."', () => {
    expect(
      sentences('Es gibt u. a. Tee. Das gilt i. d. R. immer. Das geht u. U. Schief ist das nicht.'),
    ).to.deep.equal([
      'Es gibt u. a. Tee.',
      'Das gilt i. d. R. immer.',
      'Das geht u. U. Schief ist das nicht.',
    ]);
  });

  it('does not end at "Nr." before a number', () => {
    expect(sentences('Siehe Nr. 5 der Liste. Danach weiter.')).to.deep.equal([
      'Siehe Nr. 5 der Liste.',
      'Danach weiter.',
    ]);
  });

  it('does not end at "Abs.", "Art." and "S." in citations', () => {
    expect(sentences('Nach Art. 3 Abs. 2 S. 1 GG gilt das. Weiter.')).to.deep.equal([
      'Nach Art. 3 Abs. 2 S. 1 GG gilt das.',
      'Weiter.',
    ]);
  });

  it('keeps "§ 5" citations inside the sentence', () => {
    expect(sentences('Die Frist nach § 5 Abs. 1 beträgt zwei Wochen. Sie beginnt mit Zugang.')).to.deep.equal(
      ['Die Frist nach § 5 Abs. 1 beträgt zwei Wochen.', 'Sie beginnt mit Zugang.'],
    );
  });

  it('does not end at "Dr." and "Prof." before a name', () => {
    expect(sentences('Heute spricht Prof. Dr. Müller. Alle hören zu.')).to.deep.equal([
      'Heute spricht Prof. Dr. Müller.',
      'Alle hören zu.',
    ]);
  });

  it('does not end at "ca.", "vgl.", "ggf.", "evtl.", "inkl.", "bzw." and "sog."', () => {
    const text =
      'Es kostet ca. 100 Euro inkl. Steuer, vgl. Anlage, ggf. Mehr bzw. Weniger, evtl. Später, sog. Pauschale. Ende.';
    expect(sentences(text)).to.have.length(2);
  });

  it('does not end at "Mio.", "Mrd.", "Jh.", "St." and "Str."', () => {
    const text =
      'Im 19. Jh. kostete die Brücke 2 Mio. Mark, heute 1 Mrd. Euro. Sie steht in der Haupt-Str. 5 bei St. Georg. Ende.';
    expect(sentences(text)).to.deep.equal([
      'Im 19. Jh. kostete die Brücke 2 Mio. Mark, heute 1 Mrd. Euro.',
      'Sie steht in der Haupt-Str. 5 bei St. Georg.',
      'Ende.',
    ]);
  });

  it('ends after "usw." when a new sentence follows', () => {
    expect(sentences('Äpfel, Birnen usw. Danach kam nichts mehr.')).to.deep.equal([
      'Äpfel, Birnen usw.',
      'Danach kam nichts mehr.',
    ]);
  });

  it('does not end at ordinals before nouns ("3. Kapitel")', () => {
    expect(sentences('Das steht im 3. Kapitel. Lies es.')).to.deep.equal([
      'Das steht im 3. Kapitel.',
      'Lies es.',
    ]);
    expect(sentences('Siehe 2. Abschnitt des Buches. Gut.')).to.deep.equal([
      'Siehe 2. Abschnitt des Buches.',
      'Gut.',
    ]);
  });

  it('does not end at dates written with the month name ("am 1. Januar 2024")', () => {
    expect(sentences('Wir starten am 1. Januar 2024 in Berlin. Alle kommen.')).to.deep.equal([
      'Wir starten am 1. Januar 2024 in Berlin.',
      'Alle kommen.',
    ]);
  });

  it('does not end inside numeric dates ("01.02.2024") and numbers ("1.000")', () => {
    expect(sentences('Der Termin ist am 01.02.2024 um 10 Uhr. Es kostet 1.000 Euro.')).to.deep.equal([
      'Der Termin ist am 01.02.2024 um 10 Uhr.',
      'Es kostet 1.000 Euro.',
    ]);
  });

  it('ends after a full date with its year ("bis 31.12.2024. Danach"), not after day and month', () => {
    expect(sentences('Das gilt bis 31.12.2024. Danach nicht.')).to.deep.equal([
      'Das gilt bis 31.12.2024.',
      'Danach nicht.',
    ]);
    expect(sentences('Ab dem 01.02. Beginnt der Kurs.')).to.have.length(1);
  });

  it('ends after a year ("ab 2025."), a thousands number ("1.250."), a domain ("example.de."), not after a street', () => {
    expect(sentences('Die Regel gilt ab 2025. Danach gilt die neue.')).to.deep.equal([
      'Die Regel gilt ab 2025.',
      'Danach gilt die neue.',
    ]);
    expect(sentences('Ab 1. Januar gilt sie.')).to.have.length(1);
    expect(sentences('Die Summe beträgt 1.250. Danach kommt mehr.')).to.have.length(2);
    expect(sentences('Siehe www.example.de. Dort steht mehr.')).to.have.length(2);
    expect(sentences('Schreiben Sie an info@example.de. Wir antworten.')).to.have.length(2);
    expect(sentences('Das gilt i.d.R. Immer.')).to.have.length(1);
    for (const text of [
      'Er wohnt in der Hauptstr. 5 in Berlin.',
      'Bitte an Hrn. Meier wenden.',
      'Fa. Müller zahlt.',
    ])
      expect(sentences(text), text).to.have.length(1);
  });

  it('does end after a number that closes a sentence', () => {
    expect(sentences('Die Zahl der Teilnehmer war 12. Danach kamen mehr.')).to.deep.equal([
      'Die Zahl der Teilnehmer war 12.',
      'Danach kamen mehr.',
    ]);
  });

  it('does not end at an enumeration label "1." at the start of a line', () => {
    expect(sentences('Voraussetzungen:\n1. Die Anmeldung\n2. Die Zahlung')).to.have.length(1);
  });

  it('treats an ellipsis followed by lower case as the middle of a sentence', () => {
    expect(sentences('Er zögerte ... und ging dann. Sie blieb.')).to.deep.equal([
      'Er zögerte ... und ging dann.',
      'Sie blieb.',
    ]);
    expect(sentences('Das war … ja. Und dann?')).to.deep.equal(['Das war … ja.', 'Und dann?']);
  });

  it('keeps closing quotes and brackets with the sentence', () => {
    expect(sentences('Er sagte: „Komm sofort.“ Dann ging er.')).to.deep.equal([
      'Er sagte: „Komm sofort.“',
      'Dann ging er.',
    ]);
    expect(sentences('(Das ist ein Einschub.) Danach geht es weiter.')).to.deep.equal([
      '(Das ist ein Einschub.)',
      'Danach geht es weiter.',
    ]);
  });

  it('does not end at a quoted question followed by lower case', () => {
    expect(sentences('„Wirklich?“ fragte sie leise. Er nickte.')).to.deep.equal([
      '„Wirklich?“ fragte sie leise.',
      'Er nickte.',
    ]);
  });

  it('ends at a blank line but not at a single line break', () => {
    expect(sentences('Zeile eins\nZeile zwei ohne Punkt\n\nNeuer Absatz')).to.deep.equal([
      'Zeile eins\nZeile zwei ohne Punkt',
      'Neuer Absatz',
    ]);
  });

  it('respects the start and end range', () => {
    const text = 'Vorher. Erster Satz. Zweiter Satz. Nachher.';
    const from = text.indexOf('Erster');
    const to = text.indexOf(' Nachher');
    expect(splitSentences(text, from, to).map((s) => text.slice(s.start, s.end))).to.deep.equal([
      'Erster Satz.',
      'Zweiter Satz.',
    ]);
  });

  it('returns nothing for white space', () => {
    expect(splitSentences('  \n\n  ')).to.deep.equal([]);
  });
});
