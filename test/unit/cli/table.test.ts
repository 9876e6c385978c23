import { expect } from 'chai';
import { displayWidth, formatTable } from '../../../src/cli/table.js';

describe('plain-text tables', () => {
  it('pads columns to what a terminal shows: wide CJK characters two columns, combining marks none', () => {
    expect(displayWidth('Schulung')).to.equal(8);
    expect(displayWidth('研修')).to.equal(4);
    expect(displayWidth('Schülung'.normalize('NFD'))).to.equal(8);
    const table = formatTable(
      ['pipeline', 'status'],
      [
        ['研修', 'ok'],
        ['Schülung'.normalize('NFD'), 'failed'],
        ['Standard', 'ok'],
      ],
    );
    const columnOf = (line: string) => displayWidth(line.slice(0, line.search(/ (ok|failed|status)$/) + 1));
    const lines = table.split('\n');
    expect(new Set([0, 2, 3, 4].map((i) => columnOf(lines[i]!)))).to.have.property('size', 1);
  });
});
