import { expect } from 'chai';
import { printError } from '../../../src/cli/print-error.js';
import { createProgress } from '../../../src/cli/progress.js';
import type { QueueItem } from '../../../src/engine/queue.js';
import { ConfigError, ErrorCodes } from '../../../src/errors.js';
import type { BuiltContext } from '../../../src/retrieval/context.js';
import { formatContext, formatSearchHits } from '../../../src/retrieval/format.js';
import type { SearchHit } from '../../../src/retrieval/search.js';

/** What a file name may hold: an escape sequence (turns the terminal red) and a line break. */
const oddPath = '/quelle/rot\x1b[31mROT\x1b[0m/zeile\nzwei.txt';
const shownPath = '/quelle/rot\\x1b[31mROT\\x1b[0m/zeile\\nzwei.txt';

describe('text output of a file name with control characters', () => {
  it('search shows its path and title escaped', () => {
    const hit: SearchHit = {
      score: 0.5,
      document_id: 1,
      document_title: 'alt\x1b[31m gespeichert',
      source_path: oddPath,
      heading_path: ['Kapitel\x1b[2J'],
      page: 1,
      chunk_index: 0,
      chunk_id: 1,
      content: 'Feedback',
      section_offset: 0,
    };
    const text = formatSearchHits('Feedback', [hit]);
    expect(text).to.not.contain('\x1b');
    expect(text.split('\n')).to.deep.equal([
      '1. 0.500  alt\\x1b[31m gespeichert',
      '   Kapitel\\x1b[2J · page 1',
      '   Feedback',
      `   ${shownPath}`,
    ]);
  });

  it("context shows a stored title's control characters escaped and keeps its lines", () => {
    const context: BuiltContext = {
      text: '[Quelle 1: rot\x1b[31mROT]\nFeedback',
      sources: [{ n: 1 } as BuiltContext['sources'][number]],
      matched: 1,
      tokens: 5,
    };
    expect(formatContext(context, 'Feedback')).to.equal('[Quelle 1: rot\\x1b[31mROT]\nFeedback');
  });

  it('progress lines show the path escaped; log lines and errors their escape sequences, keeping indented lines', () => {
    const writes: string[] = [];
    const stream = {
      isTTY: false,
      write: (t: string) => writes.push(t) > 0,
    } as unknown as NodeJS.WriteStream;
    const ci = process.env.CI;
    delete process.env.CI;
    try {
      const progress = createProgress(stream);
      const item = { id: 1, path: oddPath, action: 'new', document_id: null } as QueueItem;
      progress.onEvent({ type: 'document-finished', item, documentId: 1, status: 'done' });
      // a message may be of several lines (a pipeline's problems, each on an indented line): those line breaks are
      // kept; one in a file name is escaped, so that the reason stays on the line of its file
      progress.onLog('warn', `warn [extract doc 1]: ${oddPath}: not valid UTF-8`);
      progress.onLog('warn', "pipeline 'x' is invalid:\n  row 3: unknown step type");
    } finally {
      if (ci !== undefined) process.env.CI = ci;
    }
    expect(writes).to.deep.equal([
      `done    new    ${shownPath}\n`,
      'warn [extract doc 1]: /quelle/rot\\x1b[31mROT\\x1b[0m/zeile\\nzwei.txt: not valid UTF-8\n',
      "pipeline 'x' is invalid:\n  row 3: unknown step type\n",
    ]);
    let printed = '';
    printError(new ConfigError(ErrorCodes.USAGE, `no document ${oddPath}`), (t) => {
      printed += t;
    });
    expect(printed).to.equal('cpe: no document /quelle/rot\\x1b[31mROT\\x1b[0m/zeile\nzwei.txt\n');
  });
});
