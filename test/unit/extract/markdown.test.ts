import { expect } from 'chai';
import { extractMarkdown } from '../../../src/extract/markdown.js';
import type { ExtractedDocument } from '../../../src/extract/types.js';

const md = (text: string) => extractMarkdown(new TextEncoder().encode(text), 'doc.md');
const blocks = (doc: ExtractedDocument) =>
  doc.blocks.map((b) => {
    const entry: [string, string, number?] = [b.type, doc.text.slice(b.start, b.end)];
    if (b.level !== undefined) entry.push(b.level);
    return entry;
  });

describe('extract/markdown', () => {
  it('moves YAML front matter into metadata and takes the title from it', async () => {
    const doc = await md(
      '---\nTitle: Gesetz über den Nachweis\n  der Bedingungen\njurabk: NachwG\ndate: 2020-01-02\n---\n\n# Überschrift\n\nText.\n',
    );
    expect(doc.metadata.frontMatter).to.deep.equal({
      Title: 'Gesetz über den Nachweis der Bedingungen',
      jurabk: 'NachwG',
      date: '2020-01-02',
    });
    expect(doc.metadata.title).to.equal('Gesetz über den Nachweis der Bedingungen');
    expect(doc.text).to.equal('Überschrift\n\nText.');
  });

  it('keeps the document when the front matter is not valid YAML, with a warning', async () => {
    const doc = await md('---\ntitle: [unclosed\n---\nInhalt bleibt.\n');
    expect(doc.text).to.equal('Inhalt bleibt.');
    expect(doc.metadata.frontMatterRaw).to.equal('title: [unclosed');
    expect(doc.warnings).to.have.length(1);
    expect(doc.warnings[0]).to.match(/^front matter is not valid YAML/);
  });

  it('reads TOML front matter (+++) into metadata, and keeps one it cannot read raw, with a warning', async () => {
    const doc = await md(
      '+++\ntitle = "Handbuch Lager"\ndate = 2024-01-01\ndraft = false\ntags = ["lager", "sicherheit"]\n+++\n\n# Inhalt\n\nText.\n',
    );
    expect(doc.metadata.frontMatter).to.deep.equal({
      title: 'Handbuch Lager',
      date: '2024-01-01',
      draft: false,
      tags: ['lager', 'sicherheit'],
    });
    expect(doc.metadata.title).to.equal('Handbuch Lager');
    expect(doc.text).to.equal('Inhalt\n\nText.');
    const nested = await md('+++\ntitle = "X"\n[params]\nfarbe = "blau"\n+++\nText.\n');
    expect(nested.text).to.equal('Text.');
    expect(nested.metadata.frontMatterRaw).to.equal('title = "X"\n[params]\nfarbe = "blau"');
    expect(nested.warnings[0]).to.match(
      /^front matter is not read as TOML \(TOML beyond simple pairs: \[params\]\)/,
    );
    // a grid table still is one
    const grid = await md('+---+---+\n| a | b |\n+---+---+\n');
    expect(blocks(grid).map((b) => b[0])).to.deep.equal(['table']);
  });

  it('keeps fenced code in a nested list item whole, its lines as written', async () => {
    const doc = await md(
      '- Punkt eins\n  - Unterpunkt\n\n    ```bash\n    # Kommentar im Code\n      eingerückt\n    - kein Listenpunkt\n    ```\n\n- Punkt zwei\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['list_item', '- Punkt eins', 0],
      ['list_item', '- Unterpunkt', 1],
      ['code', '```bash\n# Kommentar im Code\n  eingerückt\n- kein Listenpunkt\n```'],
      ['list_item', '- Punkt zwei', 0],
    ]);
  });

  it('reads ATX and Setext headings with their levels, without the markup', async () => {
    const doc = await md(
      '# Titel #\n\nText\n\nKapitel\n=======\n\nAbschnitt\n---------\n\n### § 3 Pflichten {#sec-pflichten}\n\n####### kein Heading\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['heading', 'Titel', 1],
      ['paragraph', 'Text'],
      ['heading', 'Kapitel', 1],
      ['heading', 'Abschnitt', 2],
      ['heading', '§ 3 Pflichten', 3],
      ['paragraph', '####### kein Heading'],
    ]);
    expect(doc.metadata.title).to.equal('Titel');
  });

  it('reads list items with their nesting depth, keeping markers and continuation lines', async () => {
    const doc = await md(
      'Liste:\n\n* Widerstände\n    * 47 Ω (Gelb)\n    * 470 Ω\n      fortgesetzt\n* Kondensatoren\n\n1.  der Name,\n2.  die Anschrift.\n\nDanach Text.\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', 'Liste:'],
      ['list_item', '* Widerstände', 0],
      ['list_item', '* 47 Ω (Gelb)', 1],
      ['list_item', '* 470 Ω\nfortgesetzt', 1],
      ['list_item', '* Kondensatoren', 0],
      ['list_item', '1.  der Name,', 0],
      ['list_item', '2.  die Anschrift.', 0],
      ['paragraph', 'Danach Text.'],
    ]);
  });

  it('keeps a table as one block with its raw rows', async () => {
    const doc = await md('Vorher\n\n| L | C |\n|:--|--:|\n| a | b |\n| ä | ö |\n\nNachher\n');
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', 'Vorher'],
      ['table', '| L | C |\n|:--|--:|\n| a | b |\n| ä | ö |'],
      ['paragraph', 'Nachher'],
    ]);
  });

  it('keeps fenced and indented code verbatim, including lines that look like markup', async () => {
    const doc = await md(
      'Text\n\n```python title="x"\n# kein Heading\n\n    eingerückt\n```\n\n    code block\n      mehr\n\nEnde\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', 'Text'],
      ['code', '```python title="x"\n# kein Heading\n\n    eingerückt\n```'],
      ['code', '    code block\n      mehr'],
      ['paragraph', 'Ende'],
    ]);
  });

  it('drops pandoc/Quarto div fences but keeps their content and a callout title, and drops thematic breaks', async () => {
    const doc = await md(
      '::: {.callout-note title="Zusammenfassung"}\n\nDieses **Kapitel** erklärt [Datenschutz](#datenschutz).\n\n:::\n\n----\n\n> Zitat\n> weiter\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', 'Zusammenfassung'],
      ['paragraph', 'Dieses **Kapitel** erklärt [Datenschutz](#datenschutz).'],
      ['paragraph', '> Zitat\n> weiter'],
    ]);
  });

  it('resolves backslash escapes in headings (and the title) but keeps them in paragraphs', async () => {
    const doc = await md(
      '# Dienste für Nutzer\\*innen\n\n## § 21a Übergangsmandat \\*)\n\nAlle Nutzer\\*innen.\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['heading', 'Dienste für Nutzer*innen', 1],
      ['heading', '§ 21a Übergangsmandat *)', 2],
      ['paragraph', 'Alle Nutzer\\*innen.'],
    ]);
    expect(doc.metadata.title).to.equal('Dienste für Nutzer*innen');
  });

  it('makes no Setext heading of a long paragraph or a sentence above a dash line', async () => {
    const sentence =
      'In Betrieben mit mehr als 9.000 Arbeitnehmern erhöht sich die Zahl der Mitglieder des Betriebsrats\n' +
      'für je angefangene weitere 3.000 Arbeitnehmer um 2 Mitglieder';
    const doc = await md(
      `${sentence}\n-----\n\nKurz.\n-----\n\nFußnote\n\nÜberschrift\n-----------\n\nText\n`,
    );
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', sentence],
      ['paragraph', 'Kurz.'],
      ['paragraph', 'Fußnote'],
      ['heading', 'Überschrift', 2],
      ['paragraph', 'Text'],
    ]);
  });

  it('reads pandoc multiline and simple tables as one table block, caption included', async () => {
    const multiline = [
      '  -----------------------------------------------',
      '  Vorteile                    Nachteile',
      '  --------------------------- -------------------',
      '  leicht verständlich, für    nicht jeder Use Case',
      '  alle geeignet               ist darstellbar',
      '',
      '  schnelle Erstellung ohne    ggf. Unklarheiten',
      '  Vorkenntnisse möglich       (z.B. durch Symbole)',
      '  -----------------------------------------------',
      ': Vor- und Nachteile {#tbl-vorteile}',
    ].join('\n');
    const simple = [
      '  Modell    Frequenz',
      '  --------- ---------',
      '  HF        13,56 MHz',
      '  UHF       868 MHz',
    ].join('\n');
    const doc = await md(`Im Überblick:\n\n${multiline}\n\n#### Wireframes\n\n${simple}\n\nDanach.\n`);
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', 'Im Überblick:'],
      // the block starts at its first character: the indentation of the first line is not part of it
      ['table', multiline.trimStart()],
      ['heading', 'Wireframes', 4],
      ['table', simple.trimStart()],
      ['paragraph', 'Danach.'],
    ]);
  });

  it('ends a list at a pandoc table that follows it after a blank line', async () => {
    const table = [
      '  --------------------------',
      '  System     Anbieter',
      '  ---------- ---------',
      '  Alma       ExLibris',
      '  --------------------------',
    ].join('\n');
    const doc = await md(`-   Repositorien\n    etc.\n\n\n${table}\n\nText\n`);
    expect(blocks(doc)).to.deep.equal([
      ['list_item', '-   Repositorien\netc.', 0],
      ['table', table.trimStart()],
      ['paragraph', 'Text'],
    ]);
  });

  it('keeps a thematic break a thematic break when no table columns follow', async () => {
    const doc = await md(
      'Text davor\n\n----\n# Coding Style\n\nAbsatz\n\n-----\nEin Satz ohne Spalten\n-----\n\nEnde\n',
    );
    expect(blocks(doc).map((b) => b[0])).to.not.include('table');
    expect(blocks(doc)).to.deep.include(['heading', 'Coding Style', 1]);
  });

  it('keeps text between two "---" lines at the top when it is no YAML mapping (a heading, a sentence)', async () => {
    const doc = await md(
      '---\n\n# Sicherheitsunterweisung\n\nAlle Beschäftigten nehmen jährlich teil.\n\n---\n\n## Brandschutz\n\nFeuerlöscher am Ausgang.\n',
    );
    expect(doc.metadata.frontMatter).to.equal(undefined);
    expect(blocks(doc)).to.deep.equal([
      ['heading', 'Sicherheitsunterweisung', 1],
      ['paragraph', 'Alle Beschäftigten nehmen jährlich teil.'],
      ['heading', 'Brandschutz', 2],
      ['paragraph', 'Feuerlöscher am Ausgang.'],
    ]);
    expect(doc.metadata.title).to.equal('Sicherheitsunterweisung');
    const sentence = await md('---\nDieser Leitfaden beschreibt die Abläufe.\n---\n\nText.\n');
    expect(sentence.text).to.contain('Dieser Leitfaden beschreibt die Abläufe.');
    expect(sentence.warnings).to.deep.equal([]);
  });

  it('ends a pipe table at a heading, a fence or a quote that follows without a blank line', async () => {
    const doc = await md(
      '# Preise\n\n| Kurs | Preis |\n|------|-------|\n| A    | 100 € |\n## Anmeldung\nDie Anmeldung erfolgt online.\n```\ncode nach Tabelle\n```\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['heading', 'Preise', 1],
      ['table', '| Kurs | Preis |\n|------|-------|\n| A    | 100 € |'],
      ['heading', 'Anmeldung', 2],
      ['paragraph', 'Die Anmeldung erfolgt online.'],
      ['code', '```\ncode nach Tabelle\n```'],
    ]);
  });

  it('takes no sentence with two spaces after a colon, between "---" and a Setext heading, for a table', async () => {
    const doc = await md(
      '# Leitfaden\n\nEinleitung.\n\n---\nHinweis:  Dieser Text folgt direkt auf eine Linie.\n\nKapitel Zwei\n---\n\nInhalt.\n',
    );
    expect(blocks(doc).map((b) => b[0])).to.not.include('table');
    expect(blocks(doc)).to.deep.include(['heading', 'Kapitel Zwei', 2]);
    expect(blocks(doc)).to.deep.include(['paragraph', 'Hinweis:  Dieser Text folgt direkt auf eine Linie.']);
  });

  it('drops HTML comments: a heading commented out is no section; text after a comment stays', async () => {
    const doc = await md(
      '# Handbuch\n\n## Kapitel Eins\n\nInhalt eins.\n\n<!--\n## Entwurf\n\nNicht freigegeben.\n-->\n\nWeiter in Kapitel eins.\n<!-- kurz --> Sichtbar.\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['heading', 'Handbuch', 1],
      ['heading', 'Kapitel Eins', 2],
      ['paragraph', 'Inhalt eins.'],
      ['paragraph', 'Weiter in Kapitel eins.'],
      ['paragraph', 'Sichtbar.'],
    ]);
  });

  it('stores a title from a heading written in NFD as NFC, as the text', async () => {
    const doc = await md('# Prüfung Größe\n\nDie Prüfung erfolgt täglich.\n'.normalize('NFD'));
    expect(doc.metadata.title).to.equal('Prüfung Größe'.normalize('NFC'));
  });

  it('reads pipe tables as GFM does: matching cells, after a caption line, ended by a list', async () => {
    expect(blocks(await md('Kapitel 3 | Übersicht\n---\n\nText'))).to.deep.equal([
      ['heading', 'Kapitel 3 | Übersicht', 2],
      ['paragraph', 'Text'],
    ]);
    expect(blocks(await md('| Kopf |\n-----'))).to.deep.equal([['table', '| Kopf |\n-----']]);
    expect(blocks(await md('| a | b |\n| --- |'))).to.deep.equal([['paragraph', '| a | b |\n| --- |']]);
    expect(
      blocks(await md('Tabelle 1: Preise\n| Artikel | Preis |\n|---|---|\n| Äpfel | 2 € |')),
    ).to.deep.equal([
      ['paragraph', 'Tabelle 1: Preise'],
      ['table', '| Artikel | Preis |\n|---|---|\n| Äpfel | 2 € |'],
    ]);
    expect(blocks(await md('| a | b |\n|---|---|\n| 1 | 2 |\n- Punkt eins\n- Punkt zwei'))).to.deep.equal([
      ['table', '| a | b |\n|---|---|\n| 1 | 2 |'],
      ['list_item', '- Punkt eins', 0],
      ['list_item', '- Punkt zwei', 0],
    ]);
  });

  it('keeps page text between a leading thematic break and a later one that YAML cannot read as keys', async () => {
    const doc = await md(
      '---\nStand: März 2024\n\n# Kapitel 1\n\nDer Betrieb muss alles prüfen.\n\n---\n\n# Kapitel 2\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', 'Stand: März 2024'],
      ['heading', 'Kapitel 1', 1],
      ['paragraph', 'Der Betrieb muss alles prüfen.'],
      ['heading', 'Kapitel 2', 1],
    ]);
    expect(doc.metadata.title).to.equal('Kapitel 1');
  });

  it('reads TOML strings with "#" and commas, numbers with underscores, and long values in linear time', async () => {
    const doc = await md(
      '+++\ntitle = "Teil # 2"\ntags = ["a, b", \'c\']\nseiten = 1_000 # Kommentar\n+++\nText',
    );
    expect(doc.metadata.frontMatter).to.deep.equal({ title: 'Teil # 2', tags: ['a, b', 'c'], seiten: 1000 });
    const time = async (n: number) => {
      const started = performance.now();
      await md(`+++\ntitle = "a${' '.repeat(n)}b"\n+++\nx`);
      return performance.now() - started;
    };
    await time(1000);
    // quadratic took 4.8 s at 50,000 spaces
    expect(await time(100_000)).to.be.below(Math.max(1000, 8 * (await time(25_000))));
  });

  it('closes "<!-->" at once, and takes a heading and title as shown (no soft hyphen, nothing invisible)', async () => {
    expect(blocks(await md('<!-->\nText'))).to.deep.equal([['paragraph', 'Text']]);
    expect(blocks(await md('<!--->\nText'))).to.deep.equal([['paragraph', 'Text']]);
    const hyphen = await md('# Pr\u00adüfung');
    expect(hyphen.metadata.title).to.equal('Prüfung');
    const invisible = await md('# \u200b\n\nText');
    expect(invisible.metadata.title).to.equal(undefined);
    expect(blocks(invisible)).to.deep.equal([['paragraph', 'Text']]);
  });

  it('normalises a front-matter title as a heading is: no soft hyphen, nothing invisible, NFC', async () => {
    const yaml = await md('---\ntitle: "Kündigungs\\u00ADschutz\\u00ADgesetz\\u200B"\n---\n\n# Einleitung\n');
    expect(yaml.metadata.title).to.equal('Kündigungsschutzgesetz');
    const toml = await md('+++\ntitle = "Kündigungs\\u00ADschutz\\u200Bgesetz"\n+++\n\n# Einleitung\n');
    expect(toml.metadata.title).to.equal('Kündigungsschutzgesetz');
    const decomposed = await md('---\ntitle: Prüfung Größe\n---\nText\n'.normalize('NFD'));
    expect(decomposed.metadata.title).to.equal('Prüfung Größe'.normalize('NFC'));
    // nothing but a soft hyphen: no title, the heading is
    const empty = await md('---\ntitle: "\\u00AD"\n---\n\n# Einleitung\n');
    expect(empty.metadata.title).to.equal('Einleitung');
  });

  it('takes a front-matter title YAML or TOML reads as a number as written; a boolean is none', async () => {
    const titleOf = async (text: string) => (await md(`${text}\n\nText.\n`)).metadata.title;
    expect(await titleOf('---\ntitle: 1984\n---')).to.equal('1984');
    // YAML reads 3.0 as 3, -0 as 0: the text is taken as written
    expect(await titleOf('---\ntitle: 3.0 # Version\n---')).to.equal('3.0');
    expect(await titleOf('---\nTitle: -0\n---')).to.equal('-0');
    expect(await titleOf('+++\ntitle = 1984\n+++')).to.equal('1984');
    expect(await titleOf('+++\ntitle = 3.0 # Version\n+++')).to.equal('3.0');
    // where the text is not a plain literal on the key's line, the number's own form
    expect(await titleOf('---\ntitle: &nummer 3.0\n---')).to.equal('3');
    // a date stays as written (YAML 1.2 has no date type)
    expect(await titleOf('---\ntitle: 2024-03-01\n---')).to.equal('2024-03-01');
    // a boolean is a switch, not a name: the heading (or the file name) is the title
    expect((await md('---\ntitle: false\n---\n\n# Einleitung\n')).metadata.title).to.equal('Einleitung');
    expect(await titleOf('---\ntitle: .inf\n---')).to.equal(undefined);
    const doc = await md('---\ntitle: 1984\n---\n\nText.\n');
    expect(doc.metadata.frontMatter).to.deep.equal({ title: 1984 });
  });

  it('joins a word a soft hyphen breaks at a line end (paragraph, list item, quote, heading); a hyphen stays', async () => {
    const doc = await md(
      [
        'Kündigungs\u00AD',
        'schutz',
        '===',
        '',
        'Das Kündigungs\u00AD  ',
        '   schutzgesetz gilt. Ein Qualitäts-',
        'handbuch bleibt.',
        '',
        '- Kündigungs\u00AD',
        '  schutz im Kleinbetrieb',
        '',
        '> Kündigungs\u00AD',
        '> > schutz zitiert',
        '',
        '## Ende',
      ].join('\n'),
    );
    expect(blocks(doc)).to.deep.equal([
      ['heading', 'Kündigungsschutz', 1],
      ['paragraph', 'Das Kündigungsschutzgesetz gilt. Ein Qualitäts-\nhandbuch bleibt.'],
      ['list_item', '- Kündigungsschutz im Kleinbetrieb', 0],
      ['paragraph', '> Kündigungsschutz zitiert'],
      ['heading', 'Ende', 2],
    ]);
    expect(doc.metadata.title).to.equal('Kündigungsschutz');
    expect(doc.pages.map((p) => doc.text.slice(p.start, p.end))).to.deep.equal([doc.text]);
  });

  it('decodes Latin-1 Markdown', async () => {
    const bytes = new Uint8Array([
      0x23, 0x23, 0x20, 0x6b, 0xf6, 0x6e, 0x6e, 0x65, 0x6e, 0x0a, 0x0a, 0xe4, 0xf6, 0xfc, 0xdf, 0x0a,
    ]);
    const doc = await extractMarkdown(bytes, 'latin1.md');
    expect(blocks(doc)).to.deep.equal([
      ['heading', 'können', 2],
      ['paragraph', 'äöüß'],
    ]);
    expect(doc.metadata.encoding).to.equal('iso-8859-1');
  });

  it('is one logical page unless form feeds split it', async () => {
    expect((await md('# A\n\nText')).pages).to.have.length(1);
    const paged = await md('# A\n\nText\f# B\n\nMehr');
    expect(paged.pages.map((p) => paged.text.slice(p.start, p.end))).to.deep.equal([
      'A\n\nText',
      'B\n\nMehr',
    ]);
  });
});
