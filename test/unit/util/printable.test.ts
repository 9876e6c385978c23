import { expect } from 'chai';
import { printable, printableLines, printableMessage } from '../../../src/util/printable.js';

describe('util/printable', () => {
  it('shows the control characters of a path as escapes, on one line', () => {
    expect(printable('/quelle/rot\x1b[31mROT\x1b[0m.txt')).to.equal('/quelle/rot\\x1b[31mROT\\x1b[0m.txt');
    expect(printable('/quelle/zeile\nzwei\r\tdrei.txt')).to.equal('/quelle/zeile\\nzwei\\r\\tdrei.txt');
    expect(printable('a\x00b\x7fc\x9bd')).to.equal('a\\x00b\\x7fc\\x9bd');
    // a bidirectional override reorders what follows it on screen: `txt.exe` shown as `exe.txt`
    expect(printable('rechnung\u202Etxt.exe')).to.equal('rechnung\\u202etxt.exe');
  });

  it('leaves other text as it is, and shows null as nothing', () => {
    expect(printable('Übungen für Prüfer 研修 😀.pdf')).to.equal('Übungen für Prüfer 研修 😀.pdf');
    expect(printable('C:\\Daten\\x.txt')).to.equal('C:\\Daten\\x.txt');
    expect(printable(null)).to.equal('');
    expect(printable(42)).to.equal('42');
  });

  it('keeps the line breaks and tabs of text of several lines', () => {
    expect(printableLines('[Quelle 1: rot\x1b[31m]\nText\tmit Tab')).to.equal(
      '[Quelle 1: rot\\x1b[31m]\nText\tmit Tab',
    );
  });

  it('keeps a message on its lines where a line break begins an indented line, and escapes any other', () => {
    expect(printableMessage("pipeline 'x' is invalid:\n  row 3: a\n  row 4: b")).to.equal(
      "pipeline 'x' is invalid:\n  row 3: a\n  row 4: b",
    );
    expect(printableMessage('/quelle/zeile\nzwei.txt: leer\x1b[31m\tx')).to.equal(
      '/quelle/zeile\\nzwei.txt: leer\\x1b[31m\\tx',
    );
  });
});
