import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from './temp-dir.js';

/** A folder of small German text files: name -> content. Returns the folder. */
export function makeSourceFolder(files: Record<string, string>, dir = tempDir('cpe-src-')): string {
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(dir, name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
  return dir;
}

/** n generated German Markdown documents with distinct content. */
export function generatedDocuments(n: number, prefix = 'dokument'): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    files[`${prefix}-${String(i).padStart(4, '0')}.md`] =
      `# Schulung ${i}\n\nDie Auftragsklärung Nr. ${i} beschreibt z. B. Ziele, Rollen und Abläufe im Qualitätsmanagement.\n\n` +
      `## Abschnitt ${i}.1\n\nJede Maßnahme wird geprüft, d. h. dokumentiert und freigegeben (Version ${i}).\n`;
  }
  return files;
}
