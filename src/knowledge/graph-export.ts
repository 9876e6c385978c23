import type { SqlExecutor } from '../db/sql.js';
import { ConfigError, ErrorCodes } from '../errors.js';

export type GraphFormat = 'graphml' | 'json';

export interface GraphNode {
  id: string;
  kind: 'entity' | 'term' | 'document';
  label: string;
  type?: string;
  description?: string;
  /** entities: how many mentions, in how many documents */
  mentions?: number;
  documents?: number;
  /** terms: the full path */
  path?: string;
}

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  kind: 'relation' | 'broader' | 'classified_as';
  label: string;
  description?: string;
  confidence?: number;
  /** relations: the evidence */
  documentId?: number;
  chunkId?: number;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

/** A current document version: the latest of its file, not deleted (as search and verify take them). */
const CURRENT_DOCUMENT = "d.is_latest = 1 AND d.status <> 'deleted'";

/**
 * The knowledge graph as materialised in SQL: entities with their relations, taxonomy terms with their
 * parents, and the documents filed under the terms; the current documents' knowledge only (a version on its way,
 * failed or replaced has rows of its own until it is retracted). Ordered by id, so equal data gives equal output.
 */
export async function loadGraph(db: SqlExecutor): Promise<Graph> {
  const entities = await db.query<{
    id: number;
    name: string;
    type: string;
    description: string | null;
    mentions: number;
    documents: number;
  }>(
    // the current versions' knowledge only, as the placements below: a version still on its way (or stopped)
    // has mentions and relations already, which doubled edges and counts
    `SELECT e.id, e.name, e.type, e.description,
            (SELECT COUNT(*) FROM entity_mentions m JOIN documents d ON d.id = m.document_id
              WHERE m.entity_id = e.id AND ${CURRENT_DOCUMENT}) AS mentions,
            (SELECT COUNT(DISTINCT m.document_id) FROM entity_mentions m JOIN documents d ON d.id = m.document_id
              WHERE m.entity_id = e.id AND ${CURRENT_DOCUMENT}) AS documents
       FROM entities e ORDER BY e.id`,
  );
  const relations = await db.query<{
    id: number;
    source_entity_id: number;
    target_entity_id: number;
    relation_type: string;
    description: string | null;
    confidence: number | null;
    document_id: number;
    chunk_id: number | null;
  }>(
    `SELECT r.id, r.source_entity_id, r.target_entity_id, r.relation_type, r.description, r.confidence,
            r.document_id, r.chunk_id
       FROM entity_relations r JOIN documents d ON d.id = r.document_id
      WHERE ${CURRENT_DOCUMENT} ORDER BY r.id`,
  );
  const allTerms = await db.query<{
    id: number;
    name: string;
    parent_id: number | null;
    path: string;
    description: string | null;
  }>('SELECT id, name, parent_id, path, description FROM taxonomy_terms ORDER BY id');
  const placements = await db.query<{
    id: number;
    document_id: number;
    term_id: number;
    confidence: number | null;
    title: string | null;
    filename: string;
  }>(
    `SELECT dt.id, dt.document_id, dt.term_id, dt.confidence, d.title, d.filename
       FROM document_taxonomy dt JOIN documents d ON d.id = dt.document_id
      WHERE ${CURRENT_DOCUMENT} ORDER BY dt.id`,
  );
  // the terms current documents are filed under, and their ancestors (as the entities: those of current documents)
  const parentOf = new Map(allTerms.map((t) => [Number(t.id), t.parent_id]));
  const used = new Set<number>();
  for (const p of placements) {
    let id: number | null | undefined = Number(p.term_id);
    while (id !== null && id !== undefined && !used.has(id)) {
      used.add(id);
      const parent = parentOf.get(id);
      id = parent === null || parent === undefined ? parent : Number(parent);
    }
  }
  const terms = allTerms.filter((t) => used.has(Number(t.id)));

  const nodes: GraphNode[] = entities
    .filter((e) => Number(e.mentions) > 0)
    .map((e) => ({
      id: `e${e.id}`,
      kind: 'entity',
      label: e.name,
      type: e.type,
      ...(e.description ? { description: e.description } : {}),
      mentions: Number(e.mentions),
      documents: Number(e.documents),
    }));
  for (const t of terms) {
    nodes.push({
      id: `t${t.id}`,
      kind: 'term',
      label: t.name,
      path: t.path,
      ...(t.description ? { description: t.description } : {}),
    });
  }
  const documents = new Map<number, string>();
  for (const p of placements) documents.set(Number(p.document_id), p.title?.trim() || p.filename);
  for (const [id, label] of [...documents.entries()].sort((a, b) => a[0] - b[0]))
    nodes.push({ id: `d${id}`, kind: 'document', label });

  const entityNodes = new Set(nodes.map((n) => n.id));
  const edges: GraphEdge[] = relations
    .filter((r) => entityNodes.has(`e${r.source_entity_id}`) && entityNodes.has(`e${r.target_entity_id}`))
    .map((r) => ({
      id: `r${r.id}`,
      source: `e${r.source_entity_id}`,
      target: `e${r.target_entity_id}`,
      kind: 'relation',
      label: r.relation_type,
      ...(r.description ? { description: r.description } : {}),
      ...(r.confidence !== null ? { confidence: Number(r.confidence) } : {}),
      documentId: Number(r.document_id),
      ...(r.chunk_id !== null ? { chunkId: Number(r.chunk_id) } : {}),
    }));
  for (const t of terms) {
    if (t.parent_id !== null)
      edges.push({
        id: `b${t.id}`,
        source: `t${t.id}`,
        target: `t${t.parent_id}`,
        kind: 'broader',
        label: 'BROADER',
      });
  }
  for (const p of placements) {
    edges.push({
      id: `c${p.id}`,
      source: `d${p.document_id}`,
      target: `t${p.term_id}`,
      kind: 'classified_as',
      label: 'CLASSIFIED_AS',
      ...(p.confidence !== null ? { confidence: Number(p.confidence) } : {}),
    });
  }
  return { nodes, edges };
}

/**
 * Text as XML 1.0 character data or attribute value: the characters XML does not allow (C0 controls but tab,
 * newline and carriage return; U+FFFE, U+FFFF; lone surrogates) are left out, a carriage return is written as a
 * reference (a parser would read it as a newline), and the markup characters are escaped.
 */
const escapeXml = (text: string): string =>
  text
    .replace(
      /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
      '',
    )
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/\r/g, '&#13;');

const NODE_KEYS: Array<{ key: keyof GraphNode; type: 'string' | 'int' }> = [
  { key: 'kind', type: 'string' },
  { key: 'label', type: 'string' },
  { key: 'type', type: 'string' },
  { key: 'description', type: 'string' },
  { key: 'path', type: 'string' },
  { key: 'mentions', type: 'int' },
  { key: 'documents', type: 'int' },
];
const EDGE_KEYS: Array<{ key: keyof GraphEdge; type: 'string' | 'int' | 'double' }> = [
  { key: 'kind', type: 'string' },
  { key: 'label', type: 'string' },
  { key: 'description', type: 'string' },
  { key: 'confidence', type: 'double' },
  { key: 'documentId', type: 'int' },
  { key: 'chunkId', type: 'int' },
];

/** GraphML 1.0 (yEd, Gephi, Cytoscape read it); attributes as <data> with declared keys. */
export function toGraphml(graph: Graph): string {
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">',
    ...NODE_KEYS.map((k) => `  <key id="n_${k.key}" for="node" attr.name="${k.key}" attr.type="${k.type}"/>`),
    ...EDGE_KEYS.map((k) => `  <key id="e_${k.key}" for="edge" attr.name="${k.key}" attr.type="${k.type}"/>`),
    '  <graph id="cpe" edgedefault="directed">',
  ];
  for (const node of graph.nodes) {
    lines.push(`    <node id="${escapeXml(node.id)}">`);
    for (const { key } of NODE_KEYS) {
      const value = node[key];
      if (value !== undefined) lines.push(`      <data key="n_${key}">${escapeXml(String(value))}</data>`);
    }
    lines.push('    </node>');
  }
  for (const edge of graph.edges) {
    lines.push(
      `    <edge id="${escapeXml(edge.id)}" source="${escapeXml(edge.source)}" target="${escapeXml(edge.target)}">`,
    );
    for (const { key } of EDGE_KEYS) {
      const value = edge[key];
      if (value !== undefined) lines.push(`      <data key="e_${key}">${escapeXml(String(value))}</data>`);
    }
    lines.push('    </edge>');
  }
  lines.push('  </graph>', '</graphml>');
  return `${lines.join('\n')}\n`;
}

/** `cpe graph export --format=graphml|json`: the graph as text. */
export async function exportGraph(db: SqlExecutor, format: GraphFormat): Promise<string> {
  if (format !== 'graphml' && format !== 'json') {
    throw new ConfigError(
      ErrorCodes.USAGE,
      `unknown graph format '${String(format)}' (known: graphml, json)`,
    );
  }
  const graph = await loadGraph(db);
  return format === 'json' ? `${JSON.stringify(graph, null, 2)}\n` : toGraphml(graph);
}
