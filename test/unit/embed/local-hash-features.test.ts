import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { embedLocalHash, localHashFeatureMatcher, localHashFeatures } from '../../../src/embed/local-hash.js';
import { exactCosineReference, localHashFeaturesReference } from './local-hash-reference.js';

const examplesDir = path.resolve(import.meta.dirname, '../../../examples/documents');

const cosine = (a: Float32Array, b: Float32Array) => a.reduce((s, v, i) => s + v * b[i]!, 0);

/** Paragraphs of the example handbook. */
function handbookParagraphs(): string[] {
  const paragraphs = readdirSync(path.join(examplesDir, 'handbuch'))
    .filter((name) => name.endsWith('.md'))
    .flatMap((name) => readFileSync(path.join(examplesDir, 'handbuch', name), 'utf8').split(/\n\s*\n/));
  expect(paragraphs.length).to.be.greaterThan(10);
  return paragraphs;
}

/** The handbook's paragraphs, and words whose folded forms split or join across ä/ö/ü/ß, and other edge cases. */
const texts = () => [
  ...handbookParagraphs(),
  'Im März erzählen Maßnahmen von Übergrößen.',
  'Massnahme MASSNAHME maerz',
  'Ku\u0308ndigungsschutz nach § 622 BGB',
  '你好世界 und 世界',
  'a\u{1f600}b \u{1d400}\u{1d400}\u{1d400}\u{1d400}',
  'der die das',
  'xq',
  // shares only the n-gram "<ze" with "Zebra": the word's start
  'Zeit',
  '',
];

const QUERIES = [
  'Maßnahme',
  'März',
  'zählen',
  'erzählen',
  'Kündigungsschutz',
  '§ 488 BGB',
  'xq',
  'zzz',
  '你好世界',
  '世界',
  'a\u{1f600}b',
  '\u{1d400}\u{1d400}\u{1d400}',
  'der die das',
  'Wie gebe ich Feedback?',
  'Auftragsklärung',
  'Zebra',
];

describe('local-hash-v2 features', () => {
  it('are the hashes the reference implementation makes, in the order first seen', () => {
    for (const text of [...texts(), ...QUERIES]) {
      expect(Array.from(localHashFeatures(text)), text.slice(0, 40)).to.deep.equal(
        localHashFeaturesReference(text),
      );
    }
  });

  it('tell whether a text has a feature of a query, which a positive cosine does not', () => {
    let shared = 0;
    for (const query of QUERIES) {
      const wanted = new Set(localHashFeaturesReference(query));
      const matcher = localHashFeatureMatcher(query);
      for (const text of texts()) {
        const shares = localHashFeaturesReference(text).some((feature) => wanted.has(feature));
        const label = `${query} / ${text.slice(0, 40)}`;
        expect(matcher.score(text) > 0, label).to.equal(shares);
        expect(matcher.score(text), label).to.be.closeTo(exactCosineReference(query, text), 1e-9);
        if (shares) {
          // the quick test never rules out a text that has one
          expect(matcher.mayShare(text), label).to.equal(true);
          shared++;
        }
      }
    }
    expect(shared).to.be.greaterThan(50);
    // across ä/ß and their spellings, and through stems: "Maßnahmen" has the word "Massnahme"
    expect(localHashFeatureMatcher('Massnahme').score('Maßnahmen')).to.be.above(0);
    expect(localHashFeatureMatcher('maerz').score('Im März')).to.be.above(0);
    // the whole handbook scores above 0 with "zzz" by bucket collisions alone, though none of it has the word
    const handbook = handbookParagraphs().join('\n\n');
    expect(cosine(embedLocalHash('zzz'), embedLocalHash(handbook))).to.be.above(0);
    expect(localHashFeatureMatcher('zzz').score(handbook)).to.equal(0);
  });
});
