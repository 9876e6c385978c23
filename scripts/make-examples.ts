/**
 * Generates the DOCX, PPTX and PDF sample documents in examples/documents (German training material written
 * for cpe). Run with `npx tsx scripts/make-examples.ts`; the outputs are committed so a new user needs nothing.
 */
import { createWriteStream, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Document, HeadingLevel, Packer, Paragraph, Table, TableCell, TableRow, TextRun } from 'docx';
import PDFDocument from 'pdfkit';
import PptxGenJSModule from 'pptxgenjs';

// pptxgenjs ships CJS-style typings for an ESM default export: under nodenext the types see a namespace
const PptxGenJS = PptxGenJSModule as unknown as typeof PptxGenJSModule.default;

const out = path.resolve(import.meta.dirname, '../examples/documents');

async function docx() {
  const doc = new Document({
    creator: 'cpe',
    title: 'Moderation von Workshops',
    sections: [
      {
        children: [
          new Paragraph({ text: 'Moderation von Workshops', heading: HeadingLevel.TITLE }),
          new Paragraph({ text: 'Vorbereitung', heading: HeadingLevel.HEADING_1 }),
          new Paragraph(
            'Eine gute Moderation beginnt lange vor dem Workshop. Die Moderatorin klärt Ziel, Teilnehmende und Zeitrahmen und entwirft einen Ablaufplan.',
          ),
          new Paragraph({ text: 'Ablaufplan', heading: HeadingLevel.HEADING_2 }),
          new Table({
            rows: [
              ['Zeit', 'Inhalt', 'Methode'],
              ['09:00', 'Begrüßung und Erwartungen', 'Blitzlicht'],
              ['09:30', 'Sammeln von Themen', 'Kartenabfrage'],
              ['10:30', 'Priorisieren', 'Punkten'],
            ].map(
              (cells) =>
                new TableRow({ children: cells.map((c) => new TableCell({ children: [new Paragraph(c)] })) }),
            ),
          }),
          new Paragraph({ text: 'Durchführung', heading: HeadingLevel.HEADING_1 }),
          new Paragraph({
            children: [
              new TextRun(
                'Die Moderation achtet auf Zeit und Beteiligung. Sie bleibt inhaltlich neutral, d. h. sie bewertet keine Beiträge, ',
              ),
              new TextRun('sondern macht sie sichtbar und hilft der Gruppe, zu Ergebnissen zu kommen.'),
            ],
          }),
          new Paragraph({ text: 'Methoden mit Karten und Punkten', bullet: { level: 0 } }),
          new Paragraph({ text: 'Blitzlicht zu Beginn und am Ende', bullet: { level: 0 } }),
          new Paragraph({ text: 'Fotoprotokoll der Pinnwände', bullet: { level: 1 } }),
        ],
      },
    ],
  });
  writeFileSync(path.join(out, 'moderation-workshops.docx'), await Packer.toBuffer(doc));
}

async function pptx() {
  const deck = new PptxGenJS();
  deck.title = 'Konfliktgespräche führen';
  const title = deck.addSlide();
  title.addText('Konfliktgespräche führen', { placeholder: 'title', x: 0.5, y: 1, w: 9, h: 1, fontSize: 32 });
  const s1 = deck.addSlide();
  s1.addText('Vier Schritte nach Rosenberg', { x: 0.5, y: 0.3, w: 9, h: 0.8, fontSize: 28 });
  s1.addText(
    [
      { text: 'Beobachtung ohne Bewertung', options: { bullet: true } },
      { text: 'Gefühl benennen', options: { bullet: true } },
      { text: 'Bedürfnis erkennen', options: { bullet: true } },
      { text: 'Bitte formulieren', options: { bullet: true } },
    ],
    { x: 0.5, y: 1.3, w: 9, h: 3 },
  );
  s1.addNotes('Beispiel aus der Praxis erzählen: Streit um Urlaubsplanung im Team.');
  const s2 = deck.addSlide();
  s2.addText('Eskalationsstufen', { x: 0.5, y: 0.3, w: 9, h: 0.8, fontSize: 28 });
  s2.addTable(
    [
      [{ text: 'Stufe' }, { text: 'Merkmal' }],
      [{ text: '1 Verhärtung' }, { text: 'Standpunkte prallen aufeinander' }],
      [{ text: '2 Debatte' }, { text: 'Polarisierung im Denken und Fühlen' }],
      [{ text: '3 Taten' }, { text: 'Reden hilft nicht mehr' }],
    ],
    { x: 0.5, y: 1.3, w: 9 },
  );
  const buffer = (await deck.write({ outputType: 'nodebuffer' })) as Buffer;
  writeFileSync(path.join(out, 'konfliktgespraeche.pptx'), buffer);
}

async function pdf() {
  const doc = new PDFDocument({ size: 'A4', info: { Title: 'Zeitmanagement im Arbeitsalltag' } });
  const done = new Promise((resolve) => doc.on('end', resolve));
  doc.pipe(createWriteStream(path.join(out, 'zeitmanagement.pdf')));
  doc.fontSize(20).text('Zeitmanagement im Arbeitsalltag');
  doc.moveDown().fontSize(14).text('1 Prioritäten setzen');
  doc
    .fontSize(11)
    .text(
      'Die Eisenhower-Matrix ordnet Aufgaben nach Wichtigkeit und Dringlichkeit. Wichtige, aber nicht dringende Aufgaben verdienen feste Zeitfenster, weil sie sonst von dringenden Kleinigkeiten verdrängt werden.',
    );
  doc.moveDown().fontSize(14).text('2 Störungen begrenzen');
  doc
    .fontSize(11)
    .text(
      'Unterbrechungen kosten mehr Zeit, als sie dauern. Sprechzeiten, gebündelte E-Mail-Bearbeitung und klare Absprachen im Team schaffen ungestörte Arbeitsphasen.',
    );
  doc.addPage().fontSize(14).text('3 Rückblick');
  doc
    .fontSize(11)
    .text(
      'Ein kurzer Wochenrückblick zeigt, wohin die Zeit tatsächlich gegangen ist, und hilft bei der Planung der nächsten Woche.',
    );
  doc.end();
  await done;
}

await docx();
await pptx();
await pdf();
process.stdout.write(`examples written to ${out}\n`);
