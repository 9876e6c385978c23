import { expect } from 'chai';
import { createLocalEmbedder, embedLocalHash, foldGerman } from '../../../src/embed/local-hash.js';
import { prepareEmbedText } from '../../../src/embed/prepare.js';
import { blobToVector, normalizeVector, vectorToBlob } from '../../../src/embed/vector-blob.js';

const cosine = (a: Float32Array, b: Float32Array) => a.reduce((s, v, i) => s + v * b[i], 0);

describe('local-hash-v1 embedder', () => {
  it('is deterministic, 1024-dimensional, unit length, and named local-hash-v1', async () => {
    const embedder = createLocalEmbedder();
    expect(embedder).to.include({ model: 'local-hash-v1', dimensions: 1024, kind: 'local' });
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

  it('embeds the empty text as the zero vector', () => {
    expect(embedLocalHash('').every((v) => v === 0)).to.equal(true);
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
