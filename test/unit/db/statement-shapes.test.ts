import { expect } from 'chai';
import { IN_LIST_MAX, inList, inLists, marks, rowSlices } from '../../../src/db/statement-shapes.js';

describe('statement shapes', () => {
  it('writes n placeholders', () => {
    expect(marks(0)).to.equal('');
    expect(marks(1)).to.equal('?');
    expect(marks(3)).to.equal('?, ?, ?');
  });

  it('pads an IN list to a power of two with its last value, so that lists of similar length share one text', () => {
    expect(inList([7])).to.deep.equal({ marks: '?', values: [7] });
    expect(inList([1, 2, 3])).to.deep.equal({ marks: '?, ?, ?, ?', values: [1, 2, 3, 3] });
    expect(inList([1, 2, 3, 4])).to.deep.equal({ marks: '?, ?, ?, ?', values: [1, 2, 3, 4] });
    const texts = new Set(
      Array.from({ length: 200 }, (_, n) => inList(Array.from({ length: n + 1 }, (_, i) => i)).marks),
    );
    expect(texts.size).to.equal(9); // 1, 2, 4, ..., 256
    expect(() => inList([])).to.throw(RangeError);
    expect(() => inList(new Array(IN_LIST_MAX + 1).fill(1))).to.throw(/1 to 256 values, not 257/);
  });

  it('cuts long IN lists at the maximum, every value in exactly one list', () => {
    const values = Array.from({ length: 601 }, (_, i) => `v${i}`);
    const lists = inLists(values, 200);
    expect(lists.map((l) => l.values.length)).to.deep.equal([256, 256, 256, 1]);
    expect(lists.flatMap((l) => [...new Set(l.values)])).to.deep.equal(values);
    expect(inLists([])).to.deep.equal([]);
  });

  it('slices rows in powers of two down to 16 on SQLite and as large as allowed on MariaDB, in order', () => {
    const rows = Array.from({ length: 237 }, (_, i) => i);
    const sqlite = rowSlices('sqlite', rows, 100);
    expect(sqlite.map((s) => s.length)).to.deep.equal([64, 64, 64, 32, 13]);
    expect(rowSlices('sqlite', rows.slice(0, 15), 100).map((s) => s.length)).to.deep.equal([15]);
    expect(rowSlices('sqlite', rows.slice(0, 37), 100).map((s) => s.length)).to.deep.equal([32, 5]);
    expect(sqlite.flat()).to.deep.equal(rows);
    const mysql = rowSlices('mysql', rows, 100);
    expect(mysql.map((s) => s.length)).to.deep.equal([100, 100, 37]);
    expect(mysql.flat()).to.deep.equal(rows);
    expect(rowSlices('sqlite', [], 100)).to.deep.equal([]);
  });
});
