import { existsSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { strFromU8, unzipSync } from 'fflate';
import { type CpeError, ErrorCodes } from '../../../src/errors.js';
import { chartTexts, paragraphText } from '../../../src/extract/drawingml-text.js';
import { extractPptx } from '../../../src/extract/pptx.js';
import type { ExtractedDocument } from '../../../src/extract/types.js';
import { parseXml } from '../../../src/extract/xml.js';
import { editPackage, extractOptions, makePptx, renameMainPart } from './office-fixtures.js';

const blocksOf = (doc: ExtractedDocument) =>
  doc.blocks.map((b) => ({
    type: b.type,
    text: doc.text.slice(b.start, b.end),
    page: b.page,
    level: b.level,
  }));

const NS =
  'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"';
const textShape = (text: string, ph = '') =>
  `<p:sp><p:nvSpPr><p:cNvPr id="9" name="t"/><p:cNvSpPr/><p:nvPr>${ph}</p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:p><a:r><a:t>${text}</a:t></a:r></a:p></p:txBody></p:sp>`;
const group = (inner: string) =>
  `<p:grpSp><p:nvGrpSpPr><p:cNvPr id="8" name="g"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>${inner}</p:grpSp>`;
const slideXml = (shapes: string, prolog = '') =>
  `<?xml version="1.0" encoding="UTF-8"?>${prolog}<p:sld ${NS}><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>${shapes}</p:spTree></p:cSld></p:sld>`;

const slideRels = 'ppt/slides/_rels/slide3.xml.rels';
/** An edit of a .rels part that adds one relationship (types by their last segment, or a full URI). */
const addRelationship = (id: string, type: string, target: string) => (old: string) =>
  old.replace(
    '</Relationships>',
    `<Relationship Id="${id}" Type="${type.startsWith('http') ? type : `http://schemas.openxmlformats.org/officeDocument/2006/relationships/${type}`}" Target="${target}"/></Relationships>`,
  );
const frame = (graphicData: string) =>
  `<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="4" name="f"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm/><a:graphic>${graphicData}</a:graphic></p:graphicFrame>`;
const MC = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"';
const CX = 'http://schemas.microsoft.com/office/drawing/2014/chartex';
const rich = (text: string) =>
  `<c:tx><c:rich><a:bodyPr/><a:lstStyle/><a:p><a:r><a:t>${text}</a:t></a:r></a:p></c:rich></c:tx>`;

async function extractError(bytes: Uint8Array, code: string, options = extractOptions): Promise<CpeError> {
  try {
    await extractPptx(bytes, 'deck.pptx', options);
  } catch (error) {
    expect((error as CpeError).code, (error as Error).message).to.equal(code);
    expect((error as Error).message).to.contain('deck.pptx');
    return error as CpeError;
  }
  return expect.fail(`expected ${code}`);
}

describe('extract/pptx', () => {
  let pptx: Uint8Array;
  let doc: ExtractedDocument;
  before(async () => {
    pptx = await makePptx(3);
    doc = await extractPptx(pptx, 'schulung.pptx', extractOptions);
  });

  /** The deck with slide 3 made of `shapes`: the result, and the blocks of slide 3. */
  const withSlide3 = async (shapes: string) => {
    const result = await extractPptx(
      editPackage(pptx, { 'ppt/slides/slide3.xml': slideXml(shapes) }),
      'deck.pptx',
      extractOptions,
    );
    return { result, third: blocksOf(result).filter((b) => b.page === 3) };
  };

  it('makes one page per slide with the slide title as the first, level-1 heading', () => {
    expect(doc.pages.map((p) => p.number)).to.deep.equal([1, 2, 3]);
    expect(doc.pages.map((p) => p.metadata.slideTitle)).to.deep.equal([
      'Einführung in die Qualitätssicherung',
      'Begriffe',
      'Folie 3',
    ]);
    const first = blocksOf(doc).filter((b) => b.page === 1);
    // the title shape comes after a free text box in the slide XML, yet leads the page
    expect(first[0]).to.deep.equal({
      type: 'heading',
      text: 'Einführung in die Qualitätssicherung',
      page: 1,
      level: 1,
    });
    expect(first.map((b) => b.text)).to.include('Freier Text vor dem Titel');
  });

  it('keeps bullets with their indent level, tables and speaker notes', () => {
    const blocks = blocksOf(doc);
    expect(blocks.filter((b) => b.type === 'list_item').map((b) => [b.text, b.level])).to.deep.equal([
      ['Erster Punkt', 0],
      ['Unterpunkt', 1],
    ]);
    expect(blocks.filter((b) => b.type === 'table')).to.deep.equal([
      { type: 'table', text: 'Begriff | Bedeutung\nAudit | Prüfung', page: 2, level: undefined },
    ]);
    expect(blocks.filter((b) => b.type === 'notes')).to.deep.equal([
      { type: 'notes', text: 'Sprechernotiz: Zeit für Fragen einplanen', page: 1, level: undefined },
    ]);
    expect(doc.pages.map((p) => [p.metadata.hasNotes, p.metadata.tables])).to.deep.equal([
      [true, 0],
      [false, 1],
      [false, 0],
    ]);
  });

  it('takes the document title from the first slide when core.xml has none worth keeping', async () => {
    const edited = editPackage(pptx, {
      'docProps/core.xml': (old) =>
        old.replace(/<dc:title>[^<]*<\/dc:title>/, '<dc:title>PowerPoint Presentation</dc:title>'),
    });
    const result = await extractPptx(edited, 'deck.pptx', extractOptions);
    expect(result.metadata.title).to.equal('Einführung in die Qualitätssicherung');
    expect(result.metadata.slideCount).to.equal(3);
  });

  it('reads a deck whose presentation part has another name (ppt/presentation2.xml)', async () => {
    const renamed = renameMainPart(pptx, 'ppt/presentation.xml', 'ppt/presentation2.xml');
    const read = await extractPptx(renamed, 'folien.pptx', extractOptions);
    expect(read.text).to.equal(doc.text);
    expect(read.blocks).to.deep.equal(doc.blocks);
  });

  it('follows the slide order of presentation.xml, not the file names', async () => {
    const files = unzipSync(pptx);
    const presentation = strFromU8(files['ppt/presentation.xml']!);
    const ids = presentation.match(/<p:sldId [^>]*\/>/g)!;
    expect(ids).to.have.length(3);
    const reversed = presentation.replace(ids.join(''), [...ids].reverse().join(''));
    const result = await extractPptx(
      editPackage(pptx, { 'ppt/presentation.xml': reversed }),
      'deck.pptx',
      extractOptions,
    );
    expect(result.pages.map((p) => p.metadata.slideTitle)).to.deep.equal([
      'Folie 3',
      'Begriffe',
      'Einführung in die Qualitätssicherung',
    ]);
  });

  it('reads text inside nested group shapes and leaves out slide numbers', async () => {
    const shapes =
      textShape('Oben') +
      group(textShape('In Gruppe') + group(textShape('Tief verschachtelt'))) +
      textShape('7', '<p:ph type="sldNum"/>');
    const { result, third } = await withSlide3(shapes);
    expect(third.map((b) => b.text)).to.deep.equal(['Oben', 'In Gruppe', 'Tief verschachtelt']);
    expect(result.pages[2]!.metadata.slideTitle).to.equal(null);
  });

  it('keeps a footer once as text and always as page metadata', async () => {
    const footer = textShape('© Akademie 2024', '<p:ph type="ftr"/>');
    const edited = editPackage(pptx, {
      'ppt/slides/slide2.xml': slideXml(textShape('Zwei') + footer),
      'ppt/slides/slide3.xml': slideXml(textShape('Drei') + footer),
    });
    const result = await extractPptx(edited, 'deck.pptx', extractOptions);
    expect(result.text.split('© Akademie 2024')).to.have.length(2);
    expect(result.pages[2]!.metadata.footer).to.deep.equal(['© Akademie 2024']);
  });

  it('gives an empty success for a deck with zero slides', async () => {
    const edited = editPackage(pptx, {
      'ppt/presentation.xml': (old) => old.replace(/<p:sldIdLst>[\s\S]*<\/p:sldIdLst>/, ''),
    });
    const result = await extractPptx(edited, 'leer.pptx', extractOptions);
    expect(result.text).to.equal('');
    expect(result.pages).to.deep.equal([]);
    expect(result.metadata.slideCount).to.equal(0);
  });

  it('skips a malformed slide with a warning and keeps the others', async () => {
    const edited = editPackage(pptx, { 'ppt/slides/slide2.xml': '<p:sld><p:cSld x="1></p:sld>' });
    const result = await extractPptx(edited, 'deck.pptx', extractOptions);
    expect(result.pages).to.have.length(3);
    expect(result.text).to.contain('Einführung in die Qualitätssicherung').and.contain('Folie 3');
    expect(result.warnings.join('\n')).to.contain('slide 2 skipped');
  });

  it("reads the slides by their parts' names when the slide list is damaged, with a warning", async () => {
    const ordered = await extractPptx(pptx, 'deck.pptx', extractOptions);
    const damages: Array<Record<string, (old: string) => string>> = [
      { 'ppt/_rels/presentation.xml.rels': (old) => old.slice(0, 120) },
      { 'ppt/presentation.xml': (old) => old.replace('<p:sldIdLst>', '<p:sldIdLst x="1>') },
    ];
    for (const damaged of damages) {
      const result = await extractPptx(editPackage(pptx, damaged), 'deck.pptx', extractOptions);
      expect(result.text).to.equal(ordered.text);
      expect(result.warnings.join('\n')).to.match(
        /^malformed XML in ppt\/.*: slides read in the order of their parts' names/,
      );
    }
  });

  it('keeps the numbers of the slides after a slide id without a slide part, which is skipped', async () => {
    const files = unzipSync(pptx);
    const presentation = strFromU8(files['ppt/presentation.xml']!);
    const second = presentation.match(/<p:sldId [^>]*\/>/g)![1]!;
    const dangling = presentation.replace(second, second.replace(/r:id="[^"]+"/, 'r:id="rIdNirgends"'));
    const result = await extractPptx(
      editPackage(pptx, { 'ppt/presentation.xml': dangling }),
      'deck.pptx',
      extractOptions,
    );
    expect(
      result.pages.map((p) => [p.number, p.metadata.slideTitle ?? null, p.metadata.skipped ?? false]),
    ).to.deep.equal([
      [1, 'Einführung in die Qualitätssicherung', false],
      [2, null, true],
      [3, 'Folie 3', false],
    ]);
    expect(result.warnings.join('\n')).to.match(/slide 2 skipped: .*slide id \d+ has no slide part/);
  });

  it("reads the slides by their names when the presentation's relationships are gone, and a slide whose own are damaged", async () => {
    const noRels = await extractPptx(
      editPackage(pptx, { 'ppt/_rels/presentation.xml.rels': null }),
      'deck.pptx',
      extractOptions,
    );
    expect(noRels.pages.map((p) => p.metadata.slideTitle ?? null)).to.deep.equal([
      'Einführung in die Qualitätssicherung',
      'Begriffe',
      'Folie 3',
    ]);
    expect(noRels.warnings.join('\n')).to.contain("the presentation's relationships name no slide part");
    const damaged = await extractPptx(
      editPackage(pptx, {
        'ppt/slides/slide3.xml': slideXml(textShape('Noch da')),
        'ppt/slides/_rels/slide3.xml.rels': '<Relationships><kaputt',
      }),
      'deck.pptx',
      extractOptions,
    );
    expect(
      blocksOf(damaged)
        .filter((b) => b.page === 3)
        .map((b) => b.text),
    ).to.deep.equal(['Noch da']);
    expect(damaged.warnings.join('\n')).to.match(/slide3\.xml: its relationships are damaged/);
  });

  it('reads a chart title linked to a cell, and a negative list level as the top one', async () => {
    const chart = parseXml(
      '<c:chartSpace xmlns:c="c"><c:chart><c:title><c:tx><c:strRef><c:f>Tabelle1!$B$1</c:f><c:strCache><c:pt idx="0"><c:v>Umsatz je Quartal</c:v></c:pt></c:strCache></c:strRef></c:tx></c:title></c:chart></c:chartSpace>',
      'deck.pptx',
      'ppt/charts/chart1.xml',
    );
    expect(chartTexts(chart)).to.deep.equal(['Umsatz je Quartal']);
    // an equation as PowerPoint writes it: for itself (a14:m) and as runs for older readers
    const equation = parseXml(
      '<a:p xmlns:a="a" xmlns:mc="mc"><a:r><a:t>Formel: </a:t></a:r><mc:AlternateContent><mc:Choice Requires="a14"><a14:m xmlns:a14="a14"/></mc:Choice><mc:Fallback><a:r><a:t>E=mc2</a:t></a:r></mc:Fallback></mc:AlternateContent></a:p>',
      'deck.pptx',
      'ppt/slides/slide1.xml',
    );
    expect(paragraphText(equation)).to.equal('Formel: E=mc2');
    const list = `<p:sp><p:nvSpPr><p:cNvPr id="9" name="t"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:p><a:pPr lvl="-1"><a:buChar char="•"/></a:pPr><a:r><a:t>Punkt</a:t></a:r></a:p></p:txBody></p:sp>`;
    const { third } = await withSlide3(list);
    const levels = third.map((b) => b.level ?? 0);
    expect(Math.min(...levels)).to.equal(0);
  });

  it('reads equations: an equation shape (Office Math, a picture as fallback) and math inside a paragraph', async () => {
    const math = (inner: string) =>
      `<a14:m><m:oMathPara xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"><m:oMath>${inner}</m:oMath></m:oMathPara></a14:m>`;
    const mr = (text: string) => `<m:r><a:rPr lang="de-DE" i="1"/><m:t>${text}</m:t></m:r>`;
    const sup = (base: string, exponent: string) =>
      `<m:sSup><m:e>${mr(base)}</m:e><m:sup>${mr(exponent)}</m:sup></m:sSup>`;
    const box = (paragraph: string) =>
      `<p:sp><p:nvSpPr><p:cNvPr id="7" name="Textfeld 6"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/>${paragraph}</p:txBody></p:sp>`;
    // as PowerPoint 365 writes it: the Fallback is the same box filled with a picture of the equation
    const equation = (paragraph: string) =>
      `<mc:AlternateContent ${MC}><mc:Choice xmlns:a14="http://schemas.microsoft.com/office/drawing/2010/main" Requires="a14">${box(paragraph)}</mc:Choice><mc:Fallback>${box('<a:p><a:r><a:rPr><a:noFill/></a:rPr><a:t> </a:t></a:r></a:p>')}</mc:Fallback></mc:AlternateContent>`;
    const shapes =
      equation(`<a:p>${math(mr('E=m') + sup('c', '2'))}</a:p>`) +
      equation(
        `<a:p><a:r><a:t>Fläche ist </a:t></a:r>${math(mr('π') + sup('r', '2'))}<a:r><a:t> hier.</a:t></a:r></a:p>`,
      );
    const { third } = await withSlide3(shapes);
    expect(third.map((b) => b.text)).to.deep.equal(['E=mc2', 'Fläche ist πr2 hier.']);
  });

  it('leaves out hidden shapes (text, groups, tables, pictures) and counts them in the page metadata', async () => {
    const hide = (shape: string, value: string) =>
      shape.replace(/<p:cNvPr id="(\d+)" name="(\w*)"/, `$&  hidden="${value}"`);
    const table = frame(
      '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tr h="1"><a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>Alte Zahl</a:t></a:r></a:p></a:txBody></a:tc></a:tr></a:tbl></a:graphicData>',
    );
    const picture =
      '<p:pic><p:nvPicPr><p:cNvPr id="6" name="Bild"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr><p:blipFill/><p:spPr/></p:pic>';
    const shapes =
      textShape('Umsatz plus 4 %') +
      hide(textShape('ENTWURF: alte Zahl 9 %, nicht veröffentlichen'), '1') +
      hide(group(textShape('In versteckter Gruppe')), 'true') +
      hide(table, '1') +
      hide(picture, '1') +
      hide(textShape('Sichtbar, hidden="0"'), '0');
    const { result, third } = await withSlide3(shapes);
    expect(third.map((b) => b.text)).to.deep.equal(['Umsatz plus 4 %', 'Sichtbar, hidden="0"']);
    expect(result.pages[2]!.metadata).to.include({ hiddenShapes: 4, images: 0, tables: 0 });
    expect(result.pages[0]!.metadata).to.not.have.property('hiddenShapes');
  });

  it("fails a deck whose every slide is unreadable with the first slide's error", async () => {
    const broken = '<p:sld><p:cSld x="1></p:sld>';
    const error = await extractError(
      editPackage(pptx, {
        'ppt/slides/slide1.xml': broken,
        'ppt/slides/slide2.xml': broken,
        'ppt/slides/slide3.xml': null,
      }),
      ErrorCodes.CORRUPT_FILE,
    );
    expect(error.message).to.equal('deck.pptx: malformed XML in ppt/slides/slide1.xml');
  });

  it('keeps the slide order of presentation.xml when the package relationships are damaged', async () => {
    const presentation = strFromU8(unzipSync(pptx)['ppt/presentation.xml']!);
    const ids = presentation.match(/<p:sldId [^>]*\/>/g)!;
    const result = await extractPptx(
      editPackage(pptx, {
        'ppt/presentation.xml': presentation.replace(ids.join(''), [...ids].reverse().join('')),
        '_rels/.rels': (old) => old.slice(0, -20),
      }),
      'deck.pptx',
      extractOptions,
    );
    expect(result.pages.map((p) => p.metadata.slideTitle)).to.deep.equal([
      'Folie 3',
      'Begriffe',
      'Einführung in die Qualitätssicherung',
    ]);
    expect(result.warnings).to.deep.equal([
      '_rels/.rels: the package relationships are damaged (malformed XML in _rels/.rels): ppt/presentation.xml read',
    ]);
  });

  it('reads the newer chart types (chartEx) and never their fallback notice', async () => {
    const notice = "This chart isn't available in your version of PowerPoint.";
    const chartEx = `<mc:AlternateContent ${MC}><mc:Choice xmlns:cx1="http://schemas.microsoft.com/office/drawing/2015/9/8/chartex" Requires="cx1">${frame(`<a:graphicData uri="${CX}"><cx:chart xmlns:cx="${CX}" r:id="rIdCx"/></a:graphicData>`)}</mc:Choice><mc:Fallback>${textShape(notice)}</mc:Fallback></mc:AlternateContent>`;
    const waterfall = `<cx:chartSpace xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:cx="${CX}"><cx:chartData><cx:data id="0"><cx:strDim type="cat"><cx:f>Tabelle1!$A$2:$A$4</cx:f><cx:lvl ptCount="3"><cx:pt idx="0">Start</cx:pt><cx:pt idx="1">Umsatz</cx:pt><cx:pt idx="2">Kosten</cx:pt></cx:lvl></cx:strDim><cx:numDim type="val"><cx:lvl ptCount="3"><cx:pt idx="0">100</cx:pt><cx:pt idx="1">50</cx:pt><cx:pt idx="2">-30</cx:pt></cx:lvl></cx:numDim></cx:data></cx:chartData><cx:chart><cx:title><cx:tx><cx:rich><a:bodyPr/><a:p><a:r><a:t>Kapitalfluss</a:t></a:r></a:p></cx:rich></cx:tx></cx:title><cx:plotArea><cx:plotAreaRegion><cx:series layoutId="waterfall"><cx:tx><cx:txData><cx:f>Tabelle1!$B$1</cx:f><cx:v>Cashflow 2024</cx:v></cx:txData></cx:tx><cx:dataId val="0"/></cx:series></cx:plotAreaRegion></cx:plotArea></cx:chart></cx:chartSpace>`;
    const edits = {
      'ppt/slides/slide3.xml': slideXml(chartEx),
      [slideRels]: addRelationship(
        'rIdCx',
        'http://schemas.microsoft.com/office/2014/relationships/chartEx',
        '../charts/chartEx1.xml',
      ),
    };
    const result = await extractPptx(
      editPackage(pptx, { ...edits, 'ppt/charts/chartEx1.xml': waterfall }),
      'deck.pptx',
      extractOptions,
    );
    expect(blocksOf(result).filter((b) => b.page === 3)).to.deep.equal([
      {
        type: 'caption',
        text: 'Kapitalfluss\nSeries: Cashflow 2024\nCategories: Start, Umsatz, Kosten',
        page: 3,
        level: undefined,
      },
    ]);
    // a chartEx part that cannot be read gives no text: not the notice in its place
    const missing = await extractPptx(editPackage(pptx, edits), 'deck.pptx', extractOptions);
    expect(missing.text).to.not.contain(notice);
    expect(missing.warnings.join('\n')).to.contain('ppt/charts/chartEx1.xml referenced but missing');
  });

  it('adds the titles of the shown axes and the texts typed into data labels to a chart caption', async () => {
    const chart = `<c:chartSpace xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><c:chart><c:title>${rich('Umsatz nach Region')}</c:title><c:plotArea><c:barChart><c:ser><c:idx val="0"/><c:tx><c:strRef><c:strCache><c:pt idx="0"><c:v>GJ 2024</c:v></c:pt></c:strCache></c:strRef></c:tx><c:dLbls><c:dLbl><c:idx val="1"/>${rich('Rekordquartal')}<c:showVal val="1"/></c:dLbl><c:showVal val="1"/></c:dLbls><c:cat><c:strRef><c:strCache><c:pt idx="0"><c:v>EMEA</c:v></c:pt><c:pt idx="1"><c:v>APAC</c:v></c:pt></c:strCache></c:strRef></c:cat><c:val><c:numRef><c:numCache><c:pt idx="0"><c:v>5</c:v></c:pt><c:pt idx="1"><c:v>7</c:v></c:pt></c:numCache></c:numRef></c:val></c:ser></c:barChart><c:catAx><c:axId val="1"/><c:title>${rich('Vertriebsregion')}</c:title></c:catAx><c:valAx><c:axId val="2"/><c:title>${rich('Umsatz (Mio. EUR)')}</c:title></c:valAx><c:serAx><c:axId val="3"/><c:delete val="1"/><c:title>${rich('Gelöschte Achse')}</c:title></c:serAx></c:plotArea></c:chart></c:chartSpace>`;
    const result = await extractPptx(
      editPackage(pptx, {
        'ppt/slides/slide3.xml': slideXml(
          frame(
            '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/chart"><c:chart xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" r:id="rIdChart"/></a:graphicData>',
          ),
        ),
        [slideRels]: addRelationship('rIdChart', 'chart', '../charts/chart1.xml'),
        'ppt/charts/chart1.xml': chart,
      }),
      'deck.pptx',
      extractOptions,
    );
    expect(blocksOf(result).find((b) => b.page === 3)!.text).to.equal(
      'Umsatz nach Region\nSeries: GJ 2024\nCategories: EMEA, APAC\nAxes: Vertriebsregion, Umsatz (Mio. EUR)\nLabels: Rekordquartal',
    );
  });

  it("decides bullets by the shape's list style and the layout's placeholder before the placeholder's kind", async () => {
    // a "Section Header" layout: its body placeholder has no bullet on the first level
    const layout = `<p:sldLayout ${NS}><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/><p:sp><p:nvSpPr><p:cNvPr id="3" name="Textplatzhalter 2"/><p:cNvSpPr/><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle><a:lvl1pPr marL="0" indent="0"><a:buNone/></a:lvl1pPr></a:lstStyle><a:p><a:r><a:t>Textmasterformat bearbeiten</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:sldLayout>`;
    const body = `<p:sp><p:nvSpPr><p:cNvPr id="2" name="b"/><p:cNvSpPr/><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/><a:p><a:r><a:t>Wohin es geht und warum</a:t></a:r></a:p><a:p><a:pPr lvl="1"/><a:r><a:t>Zweite Ebene</a:t></a:r></a:p></p:txBody></p:sp>`;
    const textBox = `<p:sp><p:nvSpPr><p:cNvPr id="5" name="Textfeld 4"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle><a:lvl1pPr><a:buChar char="•"/></a:lvl1pPr></a:lstStyle><a:p><a:r><a:t>Punkt eins</a:t></a:r></a:p><a:p><a:pPr><a:buNone/></a:pPr><a:r><a:t>Kein Punkt</a:t></a:r></a:p></p:txBody></p:sp>`;
    const slide = { 'ppt/slides/slide3.xml': slideXml(body + textBox) };
    const items = (doc: ExtractedDocument) =>
      blocksOf(doc)
        .filter((b) => b.page === 3)
        .map((b) => [b.type, b.text]);
    const result = await extractPptx(
      editPackage(pptx, { ...slide, 'ppt/slideLayouts/slideLayout2.xml': layout }),
      'deck.pptx',
      extractOptions,
    );
    expect(items(result)).to.deep.equal([
      ['paragraph', 'Wohin es geht und warum'],
      ['list_item', 'Zweite Ebene'],
      ['list_item', 'Punkt eins'],
      ['paragraph', 'Kein Punkt'],
    ]);
    // a damaged layout costs nothing but its list styles: the body placeholder has bullets, as by default
    const damaged = await extractPptx(
      editPackage(pptx, { ...slide, 'ppt/slideLayouts/slideLayout2.xml': '<p:sldLayout><kaputt' }),
      'deck.pptx',
      extractOptions,
    );
    expect(items(damaged)[0]).to.deep.equal(['list_item', 'Wohin es geht und warum']);
    expect(damaged.warnings).to.deep.equal([]);
  });

  it('puts the numbers of auto-numbered lists in front of their items, as PowerPoint shows them', async () => {
    const p = (text: string, pPr = '') => `<a:p>${pPr}<a:r><a:t>${text}</a:t></a:r></a:p>`;
    const num = (type: string, lvl = 0, startAt = '') =>
      `<a:pPr lvl="${lvl}"><a:buAutoNum type="${type}"${startAt ? ` startAt="${startAt}"` : ''}/></a:pPr>`;
    const box = (paragraphs: string, listStyle = '') =>
      `<p:sp><p:nvSpPr><p:cNvPr id="5" name="Textfeld 4"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle>${listStyle}</a:lstStyle>${paragraphs}</p:txBody></p:sp>`;
    const shapes = [
      // arabicPeriod from 3: writers repeat startAt on every item, which counts on; an empty paragraph neither
      // counts nor ends the list
      box(
        p('Drei', num('arabicPeriod', 0, '3')) +
          '<a:p><a:pPr><a:buAutoNum type="arabicPeriod" startAt="3"/></a:pPr><a:endParaRPr/></a:p>' +
          p('Vier', num('arabicPeriod', 0, '3')),
      ),
      box(p('Apfel', num('alphaLcParenR')) + p('Birne', num('alphaLcParenR'))),
      // romanUcPeriod from the shape's list style, the paragraphs saying nothing of their own
      box(
        p('Eins') + p('Zwei') + p('Drei') + p('Vier'),
        '<a:lvl1pPr><a:buAutoNum type="romanUcPeriod"/></a:lvl1pPr>',
      ),
      // a sub-list starts again each time it begins; the outer list counts on past it; a paragraph without a
      // number ends the list; another scheme starts a list of its own, one we do not draw numbered as arabicPeriod
      box(
        p('Planen', num('arabicPeriod')) +
          p('Ziele', num('alphaLcPeriod', 1)) +
          p('Termine', num('alphaLcPeriod', 1)) +
          p('Umsetzen', num('arabicPeriod')) +
          p('Schulen', num('alphaLcPeriod', 1)) +
          p('Prüfen', num('arabicPeriod')) +
          p('Zwischentext', '<a:pPr><a:buNone/></a:pPr>') +
          p('Neu', num('arabicPeriod')) +
          p('Fremd', num('ea1JpnKorPeriod')),
      ),
      // bullets are no numbers: their items stay as they are
      box(
        p('Punkt eins', '<a:pPr><a:buChar char="•"/></a:pPr>') +
          p('Punkt zwei', '<a:pPr><a:buChar char="•"/></a:pPr>'),
      ),
    ].join('');
    const { third } = await withSlide3(shapes);
    expect(third.map((b) => [b.type, b.level, b.text])).to.deep.equal([
      ['list_item', 0, '3. Drei'],
      ['list_item', 0, '4. Vier'],
      ['list_item', 0, 'a) Apfel'],
      ['list_item', 0, 'b) Birne'],
      ['list_item', 0, 'I. Eins'],
      ['list_item', 0, 'II. Zwei'],
      ['list_item', 0, 'III. Drei'],
      ['list_item', 0, 'IV. Vier'],
      ['list_item', 0, '1. Planen'],
      ['list_item', 1, 'a. Ziele'],
      ['list_item', 1, 'b. Termine'],
      ['list_item', 0, '2. Umsetzen'],
      ['list_item', 1, 'a. Schulen'],
      ['list_item', 0, '3. Prüfen'],
      ['paragraph', undefined, 'Zwischentext'],
      ['list_item', 0, '1. Neu'],
      ['list_item', 0, '1. Fremd'],
      ['list_item', 0, 'Punkt eins'],
      ['list_item', 0, 'Punkt zwei'],
    ]);
  });

  it('puts SmartArt nodes in the order of the diagram tree (parOf connections by srcOrd), the unconnected last', async () => {
    const point = (id: string, text: string) =>
      `<dgm:pt modelId="${id}"><dgm:prSet/><dgm:spPr/><dgm:t><a:bodyPr/><a:p><a:r><a:t>${text}</a:t></a:r></a:p></dgm:t></dgm:pt>`;
    const cxn = (src: string, dest: string, order: number, type = '') =>
      `<dgm:cxn modelId="c${src}${dest}"${type} srcId="${src}" destId="${dest}" srcOrd="${order}" destOrd="0"/>`;
    // "Planen" was added before "Bauen" (Add Shape Before): last among the points, first among the siblings
    const data = `<dgm:dataModel xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><dgm:ptLst><dgm:pt modelId="D" type="doc"><dgm:prSet/><dgm:spPr/><dgm:t><a:bodyPr/><a:p/></dgm:t></dgm:pt>${point('T', 'Testen')}${point('B', 'Bauen')}${point('S', 'Ausliefern')}${point('L', 'Lose')}${point('P', 'Planen')}<dgm:pt modelId="Pr" type="pres"><dgm:prSet/><dgm:spPr/></dgm:pt></dgm:ptLst><dgm:cxnLst>${cxn('D', 'B', 1)}${cxn('D', 'S', 2, ' type="parOf"')}${cxn('B', 'T', 0)}${cxn('D', 'P', 0)}${cxn('L', 'Pr', 0, ' type="presOf"')}${cxn('Pr', 'L', 0, ' type="presParOf"')}</dgm:cxnLst></dgm:dataModel>`;
    const result = await extractPptx(
      editPackage(pptx, {
        'ppt/slides/slide3.xml': slideXml(
          frame(
            '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/diagram"><dgm:relIds xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" r:dm="rIdDm" r:lo="rIdLo" r:qs="rIdQs" r:cs="rIdCs"/></a:graphicData>',
          ),
        ),
        [slideRels]: addRelationship('rIdDm', 'diagramData', '../diagrams/data1.xml'),
        'ppt/diagrams/data1.xml': data,
      }),
      'deck.pptx',
      extractOptions,
    );
    expect(
      blocksOf(result)
        .filter((b) => b.page === 3)
        .map((b) => b.text),
    ).to.deep.equal(['Planen', 'Bauen', 'Testen', 'Ausliefern', 'Lose']);
  });

  it('joins a character written as two references to its UTF-16 halves; drops a lone half', async () => {
    const result = await extractPptx(
      editPackage(pptx, {
        'ppt/slides/slide3.xml': slideXml(
          textShape('Smiley &#55357;&#56832; und &#xD83D;&#xDE00;, halb: &#55357;.'),
        ),
      }),
      'deck.pptx',
      extractOptions,
    );
    expect(blocksOf(result).find((b) => b.page === 3)!.text).to.equal('Smiley 😀 und 😀, halb: .');
  });

  it('reads xsd:boolean attributes written as words: show="false" hides a slide, vMerge="true" merges a cell', async () => {
    const table = `<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="5" name="T"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tr h="1"><a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>Rolle</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>Aufgabe</a:t></a:r></a:p></a:txBody></a:tc></a:tr><a:tr h="1"><a:tc vMerge="true"><a:txBody><a:bodyPr/><a:p><a:r><a:t>Rolle</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>Prüfen</a:t></a:r></a:p></a:txBody></a:tc></a:tr></a:tbl></a:graphicData></a:graphic></p:graphicFrame>`;
    const hidden = slideXml(table).replace('<p:sld ', '<p:sld show="false" ');
    const result = await extractPptx(
      editPackage(pptx, { 'ppt/slides/slide2.xml': hidden }),
      'deck.pptx',
      extractOptions,
    );
    expect(result.pages[1]!.metadata.hidden).to.equal(true);
    expect(result.pages[0]!.metadata.hidden).to.equal(undefined);
    const tableBlock = blocksOf(result).find((b) => b.type === 'table')!;
    expect(tableBlock.text.split('\n')[1]).to.not.contain('Rolle');
  });

  it('never resolves an external entity in slide XML', async () => {
    const target = existsSync('/etc/hostname') ? '/etc/hostname' : '/etc/passwd';
    const secret = readFileSync(target, 'utf8').trim().split('\n')[0]!;
    const prolog = `<!DOCTYPE p:sld [<!ENTITY xxe SYSTEM "file://${target}">]>`;
    const edited = editPackage(pptx, {
      'ppt/slides/slide3.xml': slideXml(textShape('Wert: [&xxe;]'), prolog),
    });
    const result = await extractPptx(edited, 'deck.pptx', extractOptions);
    expect(result.text).to.contain('Wert: []');
    expect(result.text).not.to.contain(secret);
  });

  it('refuses more slides than allowed and non-PowerPoint content', async () => {
    await extractError(pptx, ErrorCodes.TOO_MANY_PAGES, { ...extractOptions, maxPages: 2 });
    const tooLarge = await extractError(pptx, ErrorCodes.FILE_TOO_LARGE, {
      ...extractOptions,
      maxFileBytes: 100,
    });
    expect(tooLarge.details).to.deep.equal({ size: pptx.length, limit: 100 });
    await extractError(new TextEncoder().encode('%PDF-1.4\n'), ErrorCodes.FORMAT_MISMATCH);
    await extractError(pptx.subarray(0, 1000), ErrorCodes.CORRUPT_FILE);
  });
});
