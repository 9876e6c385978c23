import { expect } from 'chai';
import { createProgress } from '../../../src/cli/progress.js';
import type { QueueItem } from '../../../src/engine/queue.js';
import type { RunEvent } from '../../../src/engine/runner.js';

/** A stream that keeps what is written to it; a terminal when `tty`. */
function fakeStream(tty: boolean) {
  const writes: string[] = [];
  const stream = {
    isTTY: tty,
    write: (text: string) => writes.push(text) > 0,
  } as unknown as NodeJS.WriteStream;
  return { stream, writes };
}

const item = { id: 7, path: '/quelle/leer.pdf', action: 'new' } as QueueItem;
const started: RunEvent = { type: 'document-started', item };
const stepFailed = (documentId: number | null): RunEvent => ({
  type: 'step-finished',
  step: documentId === null ? 'index_optimize' : 'extract',
  stepType: documentId === null ? 'index_optimize' : 'extract',
  documentId,
  status: 'failed',
  ms: 1,
  reason: 'kaputt',
  counts: {},
});
const failed: RunEvent = {
  type: 'document-finished',
  item,
  documentId: 3,
  status: 'failed',
  error: 'kaputt',
};

describe('cli/progress', () => {
  let ci: string | undefined;
  beforeEach(() => {
    ci = process.env.CI;
    delete process.env.CI;
  });
  afterEach(() => {
    if (ci === undefined) delete process.env.CI;
    else process.env.CI = ci;
  });

  it('on a terminal, clears the status line before a warning and draws it again after (no warning glued to it)', () => {
    const { stream, writes } = fakeStream(true);
    const progress = createProgress(stream);
    progress.onEvent(started);
    progress.onLog('warn', 'warn [extract doc 3]: not valid UTF-8');
    const at = writes.findIndex((w) => w.includes('not valid UTF-8'));
    expect(writes[at]).to.equal('\r\x1b[2Kwarn [extract doc 3]: not valid UTF-8\n');
    expect(writes[at - 1]).to.match(/1 in progress/);
    expect(writes[at + 1]).to.match(/^\r\x1b\[2K0 done, 0 failed, 0 skipped, 1 in progress/);
  });

  it("shows a document's failure once, a failed step of the run itself, and warnings even when quiet", () => {
    const { stream, writes } = fakeStream(false);
    const progress = createProgress(stream);
    for (const event of [started, stepFailed(3), failed, stepFailed(null)]) progress.onEvent(event);
    expect(writes).to.deep.equal([
      'failed  new    /quelle/leer.pdf\n',
      '  step index_optimize failed: kaputt\n',
    ]);
    const quiet = fakeStream(false);
    const silent = createProgress(quiet.stream, true);
    silent.onEvent(failed);
    silent.onLog('error', 'error [extract doc 3]: kaputt');
    expect(quiet.writes).to.deep.equal(['error [extract doc 3]: kaputt\n']);
  });

  it('says why each document was processed: new, update, delete, or again for one processed once more', () => {
    const { stream, writes } = fakeStream(false);
    const progress = createProgress(stream);
    const finished = (action: QueueItem['action'], documentId: number | null): RunEvent => ({
      type: 'document-finished',
      item: { ...item, action, document_id: documentId },
      documentId: 3,
      status: 'done',
    });
    for (const event of [
      finished('new', null),
      finished('update', null),
      finished('new', 3),
      finished('update', 3),
      finished('delete', 3),
    ])
      progress.onEvent(event);
    expect(writes.map((w) => w.split(/\s+/)[1])).to.deep.equal(['new', 'update', 'again', 'again', 'delete']);
  });
});
