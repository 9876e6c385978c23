/**
 * The folders the ingestion benches read: the real German Markdown and text files of ../shared/corpus (copied
 * to a temporary folder, never into the project), or generated German training-handbook Markdown when the
 * corpus is absent or for the scaling runs (1,000 / 5,000 documents). Generated text is drawn from a seeded
 * generator over a German vocabulary, so that no two chunks are alike (an embedding cache would otherwise make
 * a generated corpus look cheaper than real text).
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from './child.js';

export interface CorpusFolder {
  dir: string;
  /** what it is, for the table */
  label: string;
  files: number;
  bytes: number;
}

export const sharedCorpusDir = path.resolve(projectRoot, '../shared/corpus');

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `cpe-bench-${prefix}-`));
}

function describe(dir: string, label: string): CorpusFolder {
  let files = 0;
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.(md|txt)$/i.test(entry.name)) continue;
    files++;
    bytes += statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return { dir, label, files, bytes };
}

/**
 * The real Markdown and text files (../shared/corpus/md and txt) in a temporary folder; when the corpus is
 * absent, `fallbackDocs` generated documents instead (at least 5 MB).
 */
export function realCorpusFolder(fallbackDocs = 700): CorpusFolder {
  const dir = tempDir('real');
  const md = path.join(sharedCorpusDir, 'md');
  if (!existsSync(md)) return generatedCorpusFolder(fallbackDocs, 'generated (../shared/corpus absent)', dir);
  for (const sub of ['md', 'txt']) {
    const from = path.join(sharedCorpusDir, sub);
    if (!existsSync(from)) continue;
    mkdirSync(path.join(dir, sub));
    for (const name of readdirSync(from)) {
      if (/\.(md|txt)$/i.test(name)) copyFileSync(path.join(from, name), path.join(dir, sub, name));
    }
  }
  return describe(dir, '../shared/corpus md + txt');
}

const SUBJECTS = [
  'Die Auszubildende',
  'Der Ausbilder',
  'Die Fachkraft für Arbeitssicherheit',
  'Das Team der Qualitätssicherung',
  'Die Prüfungskommission',
  'Der Betriebsrat',
  'Die Personalabteilung',
  'Jede Führungskraft',
];
const VERBS = [
  'dokumentiert',
  'bespricht',
  'plant',
  'bewertet',
  'überprüft',
  'erläutert',
  'vereinbart',
  'unterweist',
];
const OBJECTS = [
  'den Ausbildungsnachweis',
  'die Lernziele des Quartals',
  'die Gefährdungsbeurteilung',
  'die Auftragsklärung mit dem Kunden',
  'das Qualitätsmanagementhandbuch',
  'die Betriebsanweisung für die Maschine',
  'den Rahmenlehrplan',
  'die Ergebnisse der Zwischenprüfung',
  'die Urlaubsplanung der Abteilung',
  'die Unterweisung nach § 12 ArbSchG',
];
const TAILS = [
  'gemäß § 14 Abs. 2 BBiG',
  'z. B. im 2. Ausbildungsjahr',
  'd. h. vor Beginn der praktischen Phase',
  'bis spätestens zum Quartalsende',
  'und hält das Ergebnis schriftlich fest',
  'im Rahmen des wöchentlichen Gesprächs',
  'mit Unterstützung der Ausbildungsleitung',
  'unter Berücksichtigung der Arbeitszeitregeln',
];
const NOUNS = (
  'Arbeitsschutz Ausbildungsordnung Berichtsheft Betriebsanweisung Brandschutz Datenschutz Einarbeitung ' +
  'Feedbackgespräch Gefahrstoff Kundenauftrag Lernortkooperation Maschinensicherheit Notfallplan Probezeit ' +
  'Prüfungsvorbereitung Qualitätsziel Reklamation Schichtplan Teamsitzung Unfallmeldung Verbandbuch ' +
  'Wareneingang Zielvereinbarung Zwischenprüfung Abschlussprüfung Ausbildungsplan Beurteilungsbogen'
).split(' ');

/** xorshift32: the same seed always gives the same corpus */
function generator(seed: number) {
  let state = seed >>> 0 || 1;
  return (n: number) => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % n;
  };
}

/** One German handbook chapter in Markdown of about `targetBytes`, unique to `index`. */
export function generatedDocument(index: number, targetBytes: number): string {
  const pick = generator(index * 2654435761 + 17);
  const parts = [`# Handbuch ${index + 1}: ${NOUNS[pick(NOUNS.length)]} und ${NOUNS[pick(NOUNS.length)]}`];
  let bytes = parts[0]!.length;
  let section = 0;
  while (bytes < targetBytes) {
    section++;
    const heading = `## ${section}. ${NOUNS[pick(NOUNS.length)]}`;
    parts.push(heading);
    bytes += heading.length + 2;
    const paragraphs = 2 + pick(4);
    for (let p = 0; p < paragraphs && bytes < targetBytes; p++) {
      const sentences: string[] = [];
      const count = 3 + pick(5);
      for (let s = 0; s < count; s++) {
        sentences.push(
          `${SUBJECTS[pick(SUBJECTS.length)]} ${VERBS[pick(VERBS.length)]} ${OBJECTS[pick(OBJECTS.length)]} ` +
            `(${NOUNS[pick(NOUNS.length)]}, Nr. ${index}.${section}.${p}.${s}) ${TAILS[pick(TAILS.length)]}.`,
        );
      }
      const paragraph = pick(5) === 0 ? sentences.map((x) => `- ${x}`).join('\n') : sentences.join(' ');
      parts.push(paragraph);
      bytes += Buffer.byteLength(paragraph) + 2;
    }
  }
  return `${parts.join('\n\n')}\n`;
}

/** `docs` generated Markdown documents of 4-12 KB (mean ~8 KB) in 10 sub-folders. */
export function generatedCorpusFolder(
  docs: number,
  label?: string,
  dir = tempDir(`gen${docs}`),
): CorpusFolder {
  for (let i = 0; i < docs; i++) {
    const sub = path.join(dir, `teil-${String(i % 10).padStart(2, '0')}`);
    if (i < 10) mkdirSync(sub, { recursive: true });
    const size = 4096 + ((i * 7919) % 8192);
    writeFileSync(path.join(sub, `handbuch-${String(i).padStart(5, '0')}.md`), generatedDocument(i, size));
  }
  return describe(dir, label ?? `generated German Markdown, ${docs} documents`);
}
