/** What every ingestion contender reports from its child process. */
export interface IngestArgs {
  /** folder of .md and .txt files */
  source: string;
  /** scratch folder the contender may write to (cpe's data folder) */
  workDir: string;
  /** ingest twice and time the second (unchanged) pass; the first pass is not timed */
  reingest?: boolean;
}

export interface IngestResult {
  /** wall time of the timed pass */
  ms: number;
  /** CPU time of the whole process (every thread) in the timed pass */
  cpuMs: number;
  /** CPU time of the main thread alone in the timed pass (Linux; see bench/lib/timed.ts) */
  mainCpuMs?: number;
  /** documents and bytes the contender read in the timed pass */
  documents: number;
  bytes: number;
  /** chunks and vectors in the index after the timed pass */
  chunks: number;
  vectors: number;
  /** re-ingest only: work done in the timed pass (chunks embedded / document steps run) */
  workDone?: number;
  /** what workDone counts */
  workUnit?: string;
  /** what the contender did, in words (shown under the table) */
  notes?: string;
}
