import { existsSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { ErrorCodes, FileError } from '../../../src/errors.js';
import {
  attr,
  children,
  decodeEntities,
  descendants,
  MAX_XML_DEPTH,
  parseXml,
  prefixedAttr,
  sanitizeXml,
  textContent,
} from '../../../src/extract/xml.js';

describe('extract/xml', () => {
  it('keeps document order of mixed children and decodes predefined and numeric entities', () => {
    const root = parseXml(
      '<?xml version="1.0"?><w:p><w:r><w:t>A &amp; B</w:t></w:r><w:r><w:t xml:space="preserve"> &#228;&#x00FC; </w:t></w:r><w:r><w:t>&lt;Ende&gt;</w:t></w:r></w:p>',
      'f.docx',
      'word/document.xml',
    );
    expect(root.local).to.equal('p');
    expect(descendants(root, 't').map(textContent)).to.deep.equal(['A & B', ' äü ', '<Ende>']);
  });

  it("takes the names of an object's prototype (constructor, toString) for no entities", () => {
    const xml = '<w:t>a&constructor;b&toString;c&amp;</w:t>';
    expect(sanitizeXml(xml)).to.equal('<w:t>abc&amp;</w:t>');
    expect(decodeEntities('a&constructor;b&hasOwnProperty;c')).to.equal('abc');
    expect(decodeEntities('a&constructor;b&auml;', { auml: 'ä' }, true)).to.equal('a&constructor;bä');
  });

  it('keeps CDATA literally and reads attributes by local name', () => {
    const root = parseXml('<p:sldId id="256" r:id="rId2"><![CDATA[a &amp; b]]></p:sldId>', 'f', 'p');
    expect(textContent(root)).to.equal('a &amp; b');
    expect(attr(root, 'id')).to.equal('256');
    expect(prefixedAttr(root, 'id')).to.equal('rId2');
    expect(children(root)).to.have.length(0);
  });

  it('never resolves an external entity pointing to a local file', () => {
    const target = existsSync('/etc/hostname') ? '/etc/hostname' : '/etc/passwd';
    const secret = readFileSync(target, 'utf8').trim().split('\n')[0]!;
    expect(secret.length).to.be.greaterThan(0);
    const xml = `<?xml version="1.0"?>\n<!DOCTYPE doc [\n  <!ENTITY xxe SYSTEM "file://${target}">\n  <!ENTITY % p SYSTEM "http://127.0.0.1:9/evil.dtd"> %p;\n]>\n<doc><t>vorher &xxe; nachher</t><u a="&xxe;"/></doc>`;
    const root = parseXml(xml, 'xxe.docx', 'word/document.xml');
    const text = textContent(root);
    expect(text).to.equal('vorher  nachher');
    expect(text).not.to.contain(secret);
    expect(attr(children(root, 'u')[0], 'a')).to.equal('');
  });

  it('does not expand internal entities (billion laughs)', () => {
    const lol = ['<!ENTITY lol "lol">'];
    for (let i = 1; i < 10; i++) lol.push(`<!ENTITY lol${i} "${`&lol${i === 1 ? '' : i - 1};`.repeat(10)}">`);
    const xml = `<!DOCTYPE lolz [${lol.join('')}]><lolz>&lol9;</lolz>`;
    expect(textContent(parseXml(xml, 'f', 'p'))).to.equal('');
  });

  it('strips DOCTYPEs whose subset contains quoted ">" and comments', () => {
    const xml = '<!DOCTYPE a [<!-- ] > --><!ENTITY x "a>b]">]><a>ok</a>';
    expect(sanitizeXml(xml)).to.equal('<a>ok</a>');
  });

  it('strips many DOCTYPEs in one pass, and none that removing others would join', () => {
    // (a search from the start after each removal took ~54 s for these: far beyond the test's time limit)
    expect(sanitizeXml(`${'<!DOCTYPE x>'.repeat(40_000)}<a>ok</a>`)).to.equal('<a>ok</a>');
    expect(sanitizeXml('<!DOC<!DOCTYPE x>TYPE y [<!ENTITY z "z">]><a>&z;</a>')).to.not.match(/<!DOCTYPE/i);
    expect(sanitizeXml('<!DOC&x;TYPE y><a/>')).to.equal('<a/>');
  });

  it('reports malformed XML as CORRUPT_FILE naming the part', () => {
    try {
      parseXml('<a x="1></a>', 'bad.pptx', 'ppt/slides/slide1.xml');
      expect.fail('expected an error');
    } catch (error) {
      expect(error).to.be.instanceOf(FileError);
      expect((error as FileError).code).to.equal(ErrorCodes.CORRUPT_FILE);
      expect((error as FileError).message)
        .to.contain('bad.pptx')
        .and.contain('ppt/slides/slide1.xml');
    }
    expect(() => parseXml('no xml here', 'f', 'p')).to.throw(/no root element/);
  });

  it('refuses absurdly deep nesting instead of overflowing the stack', () => {
    const depth = MAX_XML_DEPTH + 10;
    const xml = `${'<a>'.repeat(depth)}x${'</a>'.repeat(depth)}`;
    expect(() => parseXml(xml, 'deep.docx', 'p')).to.throw(/nested too deeply/);
  });
});
