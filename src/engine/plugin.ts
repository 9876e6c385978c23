import type { SqlExecutor } from '../db/sql.js';

/**
 * The step plugin contract. A plugin module's default export is a StepPlugin; built-ins live in steps/
 * (one file per type, basename = type), custom ones in the folders of CPE_PLUGIN_DIRS / the config file's
 * `plugins` key.
 */
export type StepScope = 'document' | 'run';

export interface StepPlugin<C = any> {
  /** the step type, e.g. 'chunk'; equals the file's basename for built-ins */
  type: string;
  description: string;
  scope: StepScope;
  /** JSON Schema (ajv) of the step's config; defaults are filled before anything runs */
  configSchema: Record<string, unknown>;
  /** does the work through ctx only; returning ctx.skip(reason) ends the step as `skipped` */
  // biome-ignore lint/suspicious/noConfusingVoidType: a step that returns nothing succeeded
  run(ctx: StepContext<C>): Promise<StepOutcome | undefined | void>;
  /** heavy resources, once per run (not per document) */
  setup?(ctx: RunStepContext<C>): Promise<void>;
  teardown?(ctx: RunStepContext<C>): Promise<void>;
  /**
   * Kinds of data the step reads that other steps write ('text', 'chunks', 'embeddings', ...; a custom plugin may
   * name its own). Planning refuses a pipeline in which a step reads a kind that other steps of the same pipeline
   * write but runs after none of them: it would find nothing, or an older version's data.
   */
  reads?: readonly string[];
  /**
   * kinds of data the step writes for later steps (see `reads`). A run step that writes `documents` fills the
   * queue the document steps work through (detect): planning refuses it anywhere but before every document step.
   */
  writes?: readonly string[];
  /**
   * What the schema cannot say about a config (defaults filled): relations between keys, a file it names. Called
   * at planning, so `pipelines validate`, a dry run and the run itself refuse the row before any document is
   * touched; each string is one problem ("config.min_chars (3000) must be below config.max_chars (2000)").
   */
  checkConfig?(config: C): readonly string[];
}

/** The kind a run step writes when it queues documents for the document steps (see StepPlugin.writes). */
export const QUEUES_DOCUMENTS = 'documents';

/** The document a document-scoped step works on (one version of one source file). */
export interface DocumentRef {
  id: number;
  sourcePath: string;
  filename: string;
  contentHash: string;
  version: number;
  fileSize: number;
  previousVersionId: number | null;
  /** the queue item being processed */
  queueId: number | null;
  /** why it is processed: new file, changed file (update), or gone from the source (delete) */
  action: 'new' | 'update' | 'delete';
  /**
   * A file with the archived original bytes of this version (read these, not sourcePath: the source may change).
   * For bytes archived in SQL (files up to 1 MiB) the file is written when a step first reads this property.
   */
  archivePath: string;
  /** the archived bytes, when the run holds them (archived in SQL): a step that reads whole files may use these */
  archivedBytes?: Buffer | undefined;
}

export interface Logger {
  debug(message: string, context?: Record<string, unknown>): void;
  info(message: string, context?: Record<string, unknown>): void;
  warn(message: string, context?: Record<string, unknown>): void;
  error(message: string, context?: Record<string, unknown>): void;
}

/** Counts a step reports; itemsIn/itemsOut/tokensIn/tokensOut have columns, the rest goes to `counts` JSON. */
export type StepCounts = Record<string, number> & {
  itemsIn?: number;
  itemsOut?: number;
  tokensIn?: number;
  tokensOut?: number;
};

export interface StepOutcome {
  status: 'skipped';
  reason: string;
}

export interface PipelineInfo {
  id: number;
  name: string;
  versionHash: string;
  /** true when an enabled step of this type is in the plan (e.g. embed writes points when there is no vector_store) */
  hasStepType(type: string): boolean;
  /**
   * the validated configs (defaults filled) of the plan's enabled steps of this type, in plan order: a step that
   * works on another's output follows its settings (vector_store stores the vectors of the embed step's model)
   */
  stepConfigs(type: string): ReadonlyArray<Readonly<Record<string, unknown>>>;
}

export interface RunInfo {
  id: number;
  /** the source folder of this run, when given */
  sourceDir: string | undefined;
  force: boolean;
  /** read and hash every source file, even those whose stat signature is unchanged (`--rehash`) */
  rehash?: boolean;
  /** leave out files changed less than this long before the scan: still being written (`cpe watch`) */
  leaveChangedWithinMs?: number;
  /**
   * For a run-scoped step that fills the queue: call as soon as it knows documents will come (detect, at the first
   * new or changed file). The document steps' setup then starts at once instead of after the step (the local
   * embedder's threads start while the scan goes on); a run that finds nothing to do still sets up nothing.
   */
  expectDocuments?(): void;
}

/** Providers are created lazily from configuration; undefined where the current profile has none. */
export interface Providers {
  /** the configured embedder (Ollama when CPE_OLLAMA_HOST is set, else the local embedder) */
  embedder(options?: { model?: string }): Promise<import('../embed/types.js').Embedder>;
  /** the vector index (Qdrant when CPE_QDRANT_URL is set, else vectors in SQLite) */
  vectors(): Promise<import('../vectors/types.js').VectorIndex>;
  /** an LLM for structured answers, or undefined with the reason when none is configured */
  llm(options?: { provider?: string; model?: string }): Promise<import('../llm/types.js').LlmResolution>;
  /** a vision model, or undefined with the reason */
  vision(options?: {
    provider?: string;
    model?: string;
  }): Promise<import('../llm/types.js').VisionResolution>;
}

export interface StepServices {
  /** ki_content */
  db: SqlExecutor;
  providers: Providers;
  /** application configuration (secrets are not in here; providers read them) */
  settings: Readonly<Record<string, unknown>>;
}

export interface RunStepContext<C = any> extends StepServices {
  config: C;
  /** lineageHash: this step's config and upstream lineage, as stored in checkpoints and chunk lineage */
  step: { id: number; name: string; type: string; lineageHash: string };
  pipeline: PipelineInfo;
  run: RunInfo;
  log: Logger;
  signal: AbortSignal;
  report(counts: StepCounts): void;
  skip(reason: string): StepOutcome;
  /**
   * Merges `patch` into documents.metadata of the document and returns what is stored: its keys replace the stored
   * ones, the others stay. Steps that run at the same time each keep their keys, where reading the column through
   * `db` and writing it back drops what another step wrote in between. It opens its own transaction: call it
   * outside `db.transaction` (inside, a statement through `db` waits for the transaction, which waits for it).
   */
  mergeDocumentMetadata(
    documentId: number,
    patch: Readonly<Record<string, unknown>>,
  ): Promise<Record<string, unknown>>;
  /** run-scoped steps only: the documents of this run */
  documents?: readonly DocumentRef[];
}

export interface StepContext<C = any> extends RunStepContext<C> {
  /** set for document-scoped steps */
  document: DocumentRef;
  /** per document and run: steps of one document share memoised work here (e.g. the extraction result) */
  memo: Map<string, unknown>;
}
