import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import {
  createLocalEmbedder,
  embedLocalHash,
  foldGerman,
  stemGerman,
} from '../../../src/embed/local-hash.js';
import {
  chunkContextLine,
  chunkEmbedText,
  embedCharLimit,
  prepareEmbedText,
} from '../../../src/embed/prepare.js';
import { blobToVector, normalizeVector, vectorToBlob } from '../../../src/embed/vector-blob.js';
import { embedLocalHashReference } from './local-hash-reference.js';

const examplesDir = path.resolve(import.meta.dirname, '../../../examples/documents');

const cosine = (a: Float32Array, b: Float32Array) => a.reduce((s, v, i) => s + v * b[i], 0);

describe('local-hash-v2 embedder', () => {
  it('is deterministic, 1024-dimensional, unit length, and named local-hash-v2', async () => {
    const embedder = createLocalEmbedder();
    expect(embedder).to.include({ model: 'local-hash-v2', dimensions: 1024, kind: 'local' });
    const [a, b] = await embedder.embed([
      'Der Arbeitgeber trägt die Kosten.',
      'Der Arbeitgeber trägt die Kosten.',
    ]);
    expect(a).to.have.length(1024);
    expect(Array.from(a)).to.deep.equal(Array.from(b));
    expect(cosine(a, a)).to.be.closeTo(1, 1e-5);
  });

  it('ranks German texts by lexical similarity, compounds and spelling variants included', () => {
    const query = embedLocalHash('Arbeitsschutz im Betrieb');
    const related = embedLocalHash('Das Arbeitsschutzgesetz verpflichtet den Betrieb zu Schutzmaßnahmen.');
    const unrelated = embedLocalHash('Die Kantine bietet täglich drei Menüs an.');
    expect(cosine(query, related)).to.be.greaterThan(cosine(query, unrelated) + 0.1);
    // ß and umlauts fold like the spelling variants people type
    expect(cosine(embedLocalHash('Maßnahme'), embedLocalHash('Massnahme'))).to.be.closeTo(1, 1e-5);
    expect(foldGerman('Übergröße')).to.equal('uebergroesse');
  });

  it('function words weigh little: a shared "der die das" does not make texts similar', () => {
    const a = embedLocalHash('der die das und Brandschutz');
    const b = embedLocalHash('der die das und Urlaubsantrag');
    const c = embedLocalHash('Brandschutz');
    expect(cosine(a, c)).to.be.greaterThan(cosine(a, b));
  });

  it('lets inflected forms of a word meet (light German stemming)', () => {
    expect(stemGerman('urlaubs')).to.equal(stemGerman('urlaub'));
    expect(stemGerman('kuendigungen')).to.equal(stemGerman('kuendigung'));
    expect(stemGerman('arbeitnehmern')).to.equal(stemGerman('arbeitnehmer'));
    expect(stemGerman('tag')).to.equal('tag'); // short words stay
    const query = embedLocalHash('Kündigungen des Arbeitnehmers');
    const inflected = embedLocalHash('Die Kündigung eines Arbeitnehmers ist schriftlich zu erklären.');
    const other = embedLocalHash('Die Vergütung eines Arbeitnehmers ist monatlich zu zahlen.');
    expect(cosine(query, inflected)).to.be.greaterThan(cosine(query, other) + 0.1);
  });

  it('damps repeated words: ten times a word does not outweigh a second topic tenfold', () => {
    const repeated = embedLocalHash(`${'Urlaub '.repeat(10)}Kündigungsschutz`);
    const urlaub = embedLocalHash('Urlaub');
    const kuendigung = embedLocalHash('Kündigungsschutz');
    // raw counts would put the ratio near 10 (and more with the n-grams); 1 + ln(10) = 3.3
    const ratio = cosine(repeated, urlaub) / cosine(repeated, kuendigung);
    expect(ratio).to.be.below(3);
    expect(ratio).to.be.above(1);
  });

  it('embeds the empty text as the zero vector', () => {
    expect(embedLocalHash('').every((v) => v === 0)).to.equal(true);
  });

  it('gives the same bits as the reference implementation, for German text and Unicode edge cases', () => {
    const handbook = readdirSync(path.join(examplesDir, 'handbuch'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => readFileSync(path.join(examplesDir, 'handbuch', name), 'utf8'));
    expect(handbook.length).to.be.greaterThan(0);
    // a seeded generator of "words" from German letters, digits and awkward code units, most of them distinct,
    // so that one text has far more features than the table starts with (it grows mid-text)
    let seed = 7;
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const alphabet = [
      'a',
      'e',
      'n',
      'r',
      's',
      't',
      'ä',
      'ö',
      'ü',
      'ß',
      'Ä',
      'ẞ',
      'İ',
      '7',
      '²',
      'é',
      'e\u0301',
    ];
    // letters and numbers beyond Latin-1 (Arabic-Indic digit, Roman numeral, CJK), a letter and an emoji outside
    // the BMP, lone surrogates, a soft hyphen, punctuation
    alphabet.push('٣', 'Ⅻ', '中', '\u{1d400}', '\u{1f600}', '\ud800', '\udc00', '\u00ad', '-', ' ', '.', '§');
    const word = () =>
      Array.from(
        { length: 1 + Math.floor(random() * 14) },
        () => alphabet[Math.floor(random() * alphabet.length)],
      ).join('');
    const many = Array.from({ length: 3000 }, word).join(' ');
    const texts = [
      ...handbook.flatMap((text) => [text, text.slice(0, 2000), text.slice(1000, 1400)]),
      many,
      'der die das und oder',
      'Kündigungsschutz',
      'a b c',
      'ÜBERGRÖSSE Übergröße uebergroesse',
      '',
    ];
    for (const text of texts) {
      for (const dimensions of [1024, 384, 7]) {
        const got = embedLocalHash(text, dimensions);
        const want = embedLocalHashReference(text, dimensions);
        expect(
          Buffer.from(got.buffer).equals(Buffer.from(want.buffer)),
          `${dimensions}: ${text.slice(0, 40)}`,
        ).to.equal(true);
      }
    }
  });
});

describe('chunk text to embed', () => {
  it('puts "title › heading path" in front of the chunk, without repeating a title the first heading starts with', () => {
    expect(chunkContextLine({ title: 'Handbuch', headingPath: ['Personal', 'Urlaub'] })).to.equal(
      'Handbuch › Personal › Urlaub',
    );
    expect(
      chunkContextLine({
        title: 'Arbeitszeitgesetz',
        headingPath: ['Arbeitszeitgesetz (ArbZG)', '§ 4 Ruhepausen'],
      }),
    ).to.equal('Arbeitszeitgesetz (ArbZG) › § 4 Ruhepausen');
    expect(chunkContextLine({ title: null, headingPath: [] })).to.equal('');
    expect(
      chunkEmbedText(
        'Der Urlaub  beträgt\n24 Werktage.',
        { title: 'BUrlG', headingPath: ['§ 3 Dauer'] },
        800,
      ),
    ).to.equal('BUrlG › § 3 Dauer Der Urlaub beträgt 24 Werktage.');
    expect(chunkEmbedText('Text ohne Kontext', {}, 800)).to.equal('Text ohne Kontext');
  });

  it('caps at max_embed_chars for a model with a context window, context included; the local embedder reads all', () => {
    const content = 'Wort '.repeat(400);
    const capped = chunkEmbedText(content, { title: 'Titel' }, embedCharLimit({ kind: 'ollama' }, 800));
    expect(capped).to.have.length(800);
    expect(capped.startsWith('Titel Wort')).to.equal(true);
    const whole = chunkEmbedText(content, { title: 'Titel' }, embedCharLimit({ kind: 'local' }, 800));
    expect(whole).to.equal(`Titel ${content.trim()}`);
  });
});

describe('prepareEmbedText', () => {
  it('collapses dot leaders and whitespace, and caps at max_embed_chars', () => {
    expect(prepareEmbedText('Kapitel 3 ............ 12\n\nDie  Einleitung', 800)).to.equal(
      'Kapitel 3 ... 12 Die Einleitung',
    );
    expect(prepareEmbedText('Inhalt . . . . . . 4', 800)).to.equal('Inhalt ... 4');
    expect(prepareEmbedText('Ende...', 800)).to.equal('Ende...');
    expect(prepareEmbedText('a'.repeat(1000), 800)).to.have.length(800);
  });

  it('collapses every whitespace run to one space, as /\\s+/ would', () => {
    const spaces = [' ', '\t', '\n', '\r', '\v', '\f', '\u00a0', '\u2003', '\u2028', '\u3000', '\ufeff'];
    const pieces = ['a', 'Wort', '.', '…', 'ü', ...spaces];
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    for (let i = 0; i < 2000; i++) {
      const text = Array.from({ length: 1 + (next() % 40) }, () => pieces[next() % pieces.length]).join('');
      const expected = text
        .replace(/(?:\.\s?){4,}/g, '... ')
        .replace(/[…]{2,}/g, '…')
        .replace(/\s+/g, ' ')
        .trim();
      expect(prepareEmbedText(text, Number.POSITIVE_INFINITY), JSON.stringify(text)).to.equal(expected);
    }
  });

  it('does not cut a surrogate pair in half', () => {
    const text = `${'a'.repeat(9)}😀rest`;
    expect(prepareEmbedText(text, 10)).to.equal('a'.repeat(9));
  });
});

describe('vector BLOBs', () => {
  it('round-trips float32 little-endian bytes, also from an unaligned buffer', () => {
    const vector = Float32Array.from([0.5, -1.25, 3e-7, 42]);
    const blob = vectorToBlob(vector);
    expect(blob.byteLength).to.equal(16);
    expect(blob.readFloatLE(4)).to.equal(-1.25);
    const unaligned = Buffer.concat([Buffer.from([7]), blob]).subarray(1);
    expect(Array.from(blobToVector(unaligned))).to.deep.equal(Array.from(vector));
    expect(() => blobToVector(Buffer.alloc(5))).to.throw(/not float32/);
  });

  it('normalises to unit length and leaves a zero vector zero', () => {
    const n = normalizeVector(Float32Array.from([3, 4]));
    expect(n[0]).to.be.closeTo(0.6, 1e-7);
    expect(n[1]).to.be.closeTo(0.8, 1e-7);
    expect(Array.from(normalizeVector(new Float32Array(3)))).to.deep.equal([0, 0, 0]);
  });
});
