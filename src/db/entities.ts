import type { EntitySchemaColumnOptions } from 'typeorm';
import { EntitySchema } from './typeorm.js';

/**
 * TypeORM entity schemas of the tables cpe reads through repositories. The DDL itself lives in the numbered
 * migrations (src/db/migrations), never in `synchronize`; these schemas only describe it.
 */
export interface PipelineConfigRow {
  id: number;
  name: string;
  description: string | null;
  is_default: number | boolean;
  status: string;
  source_path: string | null;
  settings: string | null;
  created_at: string;
  updated_at: string;
}

export interface PipelineStepRow {
  id: number;
  pipeline_id: number;
  name: string | null;
  step_type: string;
  sort_order: number;
  enabled: number | boolean;
  config: string | null;
  depends_on: string | null;
  created_at: string;
  updated_at: string;
}

export interface DocumentRow {
  id: number;
  filename: string;
  source_path: string;
  file_size: number;
  content_hash: string;
  mime_type: string | null;
  page_count: number | null;
  title: string | null;
  language: string | null;
  status: 'pending' | 'processing' | 'done' | 'failed' | 'deleted';
  version: number;
  previous_version_id: number | null;
  is_latest: number | boolean;
  metadata: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
  processed_at: string | null;
}

const id: EntitySchemaColumnOptions = { type: Number, primary: true, generated: 'increment' };
const text = (nullable = true): EntitySchemaColumnOptions => ({ type: 'text', nullable });
const str = (nullable = false): EntitySchemaColumnOptions => ({ type: 'varchar', nullable });
const int = (nullable = false): EntitySchemaColumnOptions => ({ type: 'int', nullable });
const time = (nullable = false): EntitySchemaColumnOptions => ({ type: 'varchar', nullable });

export const PipelineConfigEntity = new EntitySchema<PipelineConfigRow>({
  name: 'PipelineConfig',
  tableName: 'pipeline_configs',
  columns: {
    id,
    name: str(),
    description: text(),
    is_default: int(),
    status: str(),
    source_path: str(true),
    settings: text(),
    created_at: time(),
    updated_at: time(),
  },
});

export const PipelineStepEntity = new EntitySchema<PipelineStepRow>({
  name: 'PipelineStep',
  tableName: 'pipeline_steps',
  columns: {
    id,
    pipeline_id: int(),
    name: str(true),
    step_type: str(),
    sort_order: int(),
    enabled: int(),
    config: text(),
    depends_on: text(),
    created_at: time(),
    updated_at: time(),
  },
});

export const DocumentEntity = new EntitySchema<DocumentRow>({
  name: 'Document',
  tableName: 'documents',
  columns: {
    id,
    filename: str(),
    source_path: str(),
    file_size: int(),
    content_hash: str(),
    mime_type: str(true),
    page_count: int(true),
    title: str(true),
    language: str(true),
    status: str(),
    version: int(),
    previous_version_id: int(true),
    is_latest: int(),
    metadata: text(),
    error: text(),
    created_at: time(),
    updated_at: time(),
    processed_at: time(true),
  },
});

export interface PipelineRunRow {
  id: number;
  pipeline_id: number | null;
  pipeline_name: string;
  version_hash: string | null;
  command: string | null;
  host: string;
  pid: number;
  status: 'running' | 'ok' | 'failed' | 'cancelled';
  profile: string | null;
  docs_total: number;
  docs_done: number;
  docs_failed: number;
  docs_skipped: number;
  steps_ok: number;
  steps_failed: number;
  steps_skipped: number;
  tokens_in: number;
  tokens_out: number;
  error: string | null;
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
}

export const PipelineRunEntity = new EntitySchema<PipelineRunRow>({
  name: 'PipelineRun',
  tableName: 'pipeline_runs',
  columns: {
    id,
    pipeline_id: int(true),
    pipeline_name: str(),
    version_hash: str(true),
    command: text(),
    host: str(),
    pid: int(),
    status: str(),
    profile: text(),
    docs_total: int(),
    docs_done: int(),
    docs_failed: int(),
    docs_skipped: int(),
    steps_ok: int(),
    steps_failed: int(),
    steps_skipped: int(),
    tokens_in: int(),
    tokens_out: int(),
    error: text(),
    started_at: time(),
    finished_at: time(true),
    duration_ms: int(true),
  },
});

export const entitySchemas = {
  content: [PipelineConfigEntity, PipelineStepEntity, DocumentEntity],
  log: [PipelineRunEntity],
};
