/**
 * Deterministic "model" behind the Anthropic and Ollama chat test servers: the answer is derived from the
 * prompt, so tests can assert rows. It reads the sections cpe's prompts put the material in (<text>,
 * <entities>, <source id="...">, <statement>) and answers the schema it was given:
 * - entities: the capitalised words (German nouns) of the text, type CONCEPT (or the first allowed type);
 * - relations: consecutive pairs of the listed entities;
 * - categories: ["Schulung", <first noun of the text>];
 * - chunk semantics, summaries, questions, knowledge statements (first sentence of each source), validation
 *   verdicts (grounded when most words of the statement occur in the sources), image descriptions;
 * - anything else: a generic value built from the schema.
 * Fault modes (in the servers): invalid answers at a rate, HTTP errors with Retry-After, stalls.
 */
import { createHash } from 'node:crypto';

export interface FakeMessage {
  role: string;
  text: string;
  images: number;
}

type Schema = Record<string, any>;

const STOPWORDS = new Set(
  'Der Die Das Den Dem Des Ein Eine Einer Eines Einem Einen Diese Dieser Dieses Diesen Wenn Aber Und Oder Auch Sie Er Es Wir Ihr Bei Mit Nach Von Vor Für Aus Auf Ist Sind Wird Werden Kann Können Muss Müssen Nicht Nur Alle Jede Jeder Jedes Zum Zur Im In Am An Als Wie So Da Dann Hier Dort Damit Daher Deshalb Soweit Sofern Absatz Satz'.split(
    ' ',
  ),
);

export function section(text: string, tag: string): string | undefined {
  const open = text.indexOf(`<${tag}>`);
  if (open < 0) return undefined;
  const close = text.indexOf(`</${tag}>`, open);
  return text.slice(open + tag.length + 2, close < 0 ? undefined : close).trim();
}

export function sources(text: string): Array<{ id: string; text: string }> {
  const out: Array<{ id: string; text: string }> = [];
  let at = 0;
  for (;;) {
    const open = text.indexOf('<source id="', at);
    if (open < 0) return out;
    const idEnd = text.indexOf('"', open + 12);
    const bodyStart = text.indexOf('>', idEnd) + 1;
    const close = text.indexOf('</source>', bodyStart);
    out.push({
      id: text.slice(open + 12, idEnd),
      text: text.slice(bodyStart, close < 0 ? undefined : close).trim(),
    });
    at = close < 0 ? text.length : close + 9;
  }
}

/** Capitalised words of length >= 4 that are not function words: a crude but stable "German noun" list. */
export function nouns(text: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of text.split(/[^\p{L}\p{N}-]+/u)) {
    const word = raw.replace(/^-+|-+$/g, '');
    if (word.length < 4 || !/^\p{Lu}\p{Ll}/u.test(word) || STOPWORDS.has(word)) continue;
    if (seen.has(word)) continue;
    seen.add(word);
    out.push(word);
  }
  return out;
}

export function sentences(text: string): string[] {
  return text
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

const firstSentence = (text: string): string => {
  const s = sentences(text)[0] ?? text.trim();
  return (s.length > 300 ? s.slice(0, 300) : s) || 'Kein Inhalt.';
};

function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length >= 4);
}

export const hashOf = (text: string): number => createHash('sha256').update(text).digest().readUInt32BE(0);

function limit(schema: Schema | undefined, fallback: number): number {
  const max = schema?.maxItems;
  return typeof max === 'number' ? Math.min(max, fallback) : fallback;
}

/** The answer object for a chat, derived from the first user message (the task; later ones are repairs). */
export function fakeAnswer(schema: Schema, messages: FakeMessage[]): unknown {
  const prompt = messages.find((m) => m.role === 'user')?.text ?? '';
  const text = section(prompt, 'text') ?? prompt;
  const props = (schema.properties ?? {}) as Record<string, Schema>;

  if (props.entities) {
    const itemSchema = props.entities.items ?? {};
    const types: string[] = itemSchema.properties?.type?.enum ?? ['CONCEPT'];
    const type = types.includes('CONCEPT') ? 'CONCEPT' : types[0]!;
    return {
      entities: nouns(text)
        .slice(0, limit(props.entities, 8))
        .map((name) => ({ name, type, description: `${name} ist ein Begriff aus dem Abschnitt.` })),
    };
  }
  if (props.relations) {
    const listed = (section(prompt, 'entities') ?? '')
      .split('\n')
      .map((line) =>
        line
          .replace(/^-\s*/, '')
          .replace(/\s*\([^)]*\)\s*$/, '')
          .trim(),
      )
      .filter(Boolean);
    const types: string[] = props.relations.items?.properties?.type?.enum ?? ['RELATED_TO'];
    const relations = [];
    for (let i = 0; i + 1 < listed.length && relations.length < limit(props.relations, 5); i++) {
      relations.push({
        source: listed[i]!,
        target: listed[i + 1]!,
        type: types.includes('RELATED_TO') ? 'RELATED_TO' : types[0]!,
        description: `${listed[i]} steht im Text im Zusammenhang mit ${listed[i + 1]}.`,
        confidence: 0.8,
      });
    }
    return { relations };
  }
  if (props.categories) {
    const head = nouns(text)[0] ?? 'Allgemein';
    return { categories: [{ path: ['Schulung', head], confidence: 0.9 }] };
  }
  if (props.verdict) {
    const statement = section(prompt, 'statement') ?? '';
    const sourceWords = new Set(
      words(
        sources(prompt)
          .map((s) => s.text)
          .join(' '),
      ),
    );
    const statementWords = words(statement);
    const found = statementWords.filter((w) => sourceWords.has(w)).length;
    const grounded = statementWords.length > 0 && found / statementWords.length >= 0.6;
    return {
      verdict: grounded ? 'grounded' : 'unsupported',
      reason: grounded
        ? `${found} von ${statementWords.length} Begriffen der Aussage stehen in den Quellen.`
        : `Nur ${found} von ${statementWords.length} Begriffen der Aussage stehen in den Quellen.`,
    };
  }
  if (props.statements) {
    const list = sources(prompt);
    return {
      statements: list
        .slice(0, limit(props.statements, 10))
        .map((s) => ({ statement: firstSentence(s.text), sources: [s.id] })),
    };
  }
  if (props.questions) {
    return {
      questions: sentences(text)
        .slice(0, limit(props.questions, 3))
        .map((s, i) => ({
          question: `Was sagt der Text über ${nouns(s)[0] ?? `Punkt ${i + 1}`}?`,
          answer: s,
        })),
    };
  }
  if (props.description && props.contents) {
    const images = messages.reduce((n, m) => n + m.images, 0);
    return {
      description: `Die Seite zeigt ${images} Abbildung(en). ${firstSentence(text)}`,
      contents: ['diagram'],
      visibleText: nouns(text).slice(0, 3).join(' '),
    };
  }
  if (props.summary && props.keywords) {
    const list = nouns(text);
    return {
      summary: firstSentence(text),
      keywords: list.slice(0, limit(props.keywords, 5)),
      sentiment: 'neutral',
      topics: list.slice(0, limit(props.topics, 2)),
    };
  }
  if (props.summary) return { summary: sentences(text).slice(0, 2).join(' ') || 'Kein Inhalt.' };
  return generic(schema, text);
}

function generic(schema: Schema, text: string): unknown {
  if (Array.isArray(schema.enum)) return schema.enum[0];
  switch (schema.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, sub] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
        out[key] = generic(sub, text);
      }
      return out;
    }
    case 'array':
      return [generic(schema.items ?? { type: 'string' }, text)];
    case 'number':
    case 'integer':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    default:
      return firstSentence(text);
  }
}

/** Shared fault plan of a test server. */
export class FaultPlan {
  /** share (0..1) of first answers that are invalid (by a hash of the prompt, so reruns behave alike) */
  invalidRate = 0;
  /** every answer invalid, repairs included */
  alwaysInvalid = false;
  private queue: Array<{ status: number; retryAfterSeconds?: number; stallMs?: number }> = [];
  /** how the next answers end: cut off by the token limit (half their JSON), or declined (no text) */
  private endings: Array<'max_tokens' | 'refusal'> = [];

  /** a model that answers at length: every summary this many words (whatever it was asked for), 0 = as usual */
  summaryWords = 0;
  /** a test's own answer for a schema (by its top-level property names), instead of the one made from the prompt */
  answers = new Map<string, unknown>();

  /** the next `count` answers end as `stop` says */
  endNext(count: number, stop: 'max_tokens' | 'refusal'): void {
    for (let i = 0; i < count; i++) this.endings.push(stop);
  }

  /** the next `count` requests fail with `status` (and Retry-After when given) */
  failNext(count: number, status: number, retryAfterSeconds?: number): void {
    for (let i = 0; i < count; i++) this.queue.push({ status, retryAfterSeconds });
  }

  /** the next `count` requests wait `ms` before answering (client timeouts) */
  stallNext(count: number, ms: number): void {
    for (let i = 0; i < count; i++) this.queue.push({ status: 0, stallMs: ms });
  }

  /** forgets the faults not yet taken */
  clear(): void {
    this.queue.length = 0;
  }

  takeFault(): { status: number; retryAfterSeconds?: number; stallMs?: number } | undefined {
    return this.queue.shift();
  }

  /** the answer text: valid JSON, or one of two kinds of invalid answer, or one that did not finish */
  answerText(
    schema: Schema,
    messages: FakeMessage[],
  ): { text: string; invalid: boolean; stop?: 'max_tokens' | 'refusal' } {
    const stop = this.endings.shift();
    if (stop === 'refusal') return { text: '', invalid: true, stop };
    if (stop === 'max_tokens') {
      const whole = JSON.stringify(fakeAnswer(schema, messages));
      return { text: whole.slice(0, Math.floor(whole.length / 2)), invalid: true, stop };
    }
    const isRepair = messages.some((m) => m.role === 'assistant');
    const prompt = messages.find((m) => m.role === 'user')?.text ?? '';
    const invalid =
      this.alwaysInvalid ||
      (!isRepair && this.invalidRate > 0 && (hashOf(prompt) % 1000) / 1000 < this.invalidRate);
    if (!invalid) {
      const own = this.answers.get(
        Object.keys(schema.properties ?? {})
          .sort()
          .join(','),
      );
      if (own !== undefined) return { text: JSON.stringify(own), invalid: false };
      const answer = fakeAnswer(schema, messages) as Record<string, unknown>;
      if (this.summaryWords > 0 && typeof answer?.summary === 'string')
        answer.summary = Array.from(
          { length: this.summaryWords },
          (_, i) => `Zusammenfassungswort${i % 50}`,
        ).join(' ');
      return { text: JSON.stringify(answer), invalid: false };
    }
    // half malformed JSON, half well-formed JSON of the wrong shape
    return hashOf(`${prompt}#kind`) % 2 === 0
      ? { text: '{"ergebnis": [{"name": "unvollständig"', invalid: true }
      : { text: JSON.stringify({ ergebnis: 'falsche Form' }), invalid: true };
  }
}

export interface ServerCounters {
  /** every HTTP request received */
  requests: number;
  /** chat requests answered with 200 */
  answered: number;
  /** answered requests that were repair attempts (the conversation holds an earlier answer) */
  repairs: number;
  /** answers deliberately invalid */
  invalidAnswers: number;
  /** requests failed on purpose (HTTP errors, stalls) */
  faults: number;
  tokensIn: number;
  tokensOut: number;
}

export const newCounters = (): ServerCounters => ({
  requests: 0,
  answered: 0,
  repairs: 0,
  invalidAnswers: 0,
  faults: 0,
  tokensIn: 0,
  tokensOut: 0,
});

/** Rough token count for usage figures (1 token ~ 4 characters). */
export const tokensOf = (text: string): number => Math.max(1, Math.ceil(text.length / 4));
