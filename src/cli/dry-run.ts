import type { Engine } from '../engine/engine.js';
import { skippedCheckpointHash } from '../engine/engine.js';
import type { Plan } from '../engine/plan.js';
import { scanSource } from '../engine/scan.js';

interface DryRunFile {
  path: string;
  decision: string;
  steps: string[];
}

/** `--dry-run`: what a run would do per file, from a scan that writes nothing. */
export async function printDryRun(
  engine: Engine,
  plan: Plan,
  sourceDir: string | undefined,
  json: boolean,
): Promise<void> {
  const db = engine.dbs.content.sql;
  const documentSteps = plan.steps.filter((s) => s.phase === 'document');
  const files: DryRunFile[] = [];
  if (sourceDir) {
    const detect = plan.steps.find((s) => s.type === 'detect');
    const scan = await scanSource(db, sourceDir, {
      extensions: (detect?.config.extensions as string[] | undefined) ?? [
        '.pdf',
        '.docx',
        '.pptx',
        '.md',
        '.txt',
      ],
      followSymlinks: (detect?.config.follow_symlinks as boolean | undefined) ?? true,
    });
    for (const entry of scan.entries) {
      let steps: string[] = [];
      if (entry.decision === 'new' || entry.decision === 'update') steps = documentSteps.map((s) => s.name);
      else if (entry.decision === 'delete') steps = ['(retract the document: points, chunks, knowledge)'];
      else if (entry.documentId !== null) {
        const rows = await db.query<{ step_name: string; config_hash: string }>(
          'SELECT step_name, config_hash FROM step_checkpoints WHERE document_id = ? AND pipeline_id = ?',
          [entry.documentId, plan.pipeline.id],
        );
        const done = new Map(rows.map((r) => [r.step_name, r.config_hash]));
        const profileKey = String(engine.settings.profileKey);
        steps = documentSteps
          .filter((s) => {
            const hash = done.get(s.name);
            return hash !== s.lineageHash && hash !== skippedCheckpointHash(s.lineageHash, profileKey);
          })
          .map((s) => s.name);
      }
      files.push({ path: entry.path, decision: entry.decision, steps });
    }
  }
  const queued = await db.query<{ path: string; action: string; status: string }>(
    "SELECT path, action, status FROM pipeline_queue WHERE status IN ('pending', 'failed') ORDER BY id",
  );
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ pipeline: plan.pipeline.name, versionHash: plan.versionHash, files, queued }, null, 2)}\n`,
    );
    return;
  }
  process.stdout.write(
    `dry run of pipeline '${plan.pipeline.name}' (${plan.versionHash}); nothing is changed\n`,
  );
  for (const run of plan.steps.filter((s) => s.phase === 'pre'))
    process.stdout.write(`  before documents: ${run.name}\n`);
  for (const file of files) {
    const what = file.steps.length ? file.steps.join(' -> ') : 'nothing (up to date)';
    process.stdout.write(`${file.decision.padEnd(9)} ${file.path}\n          ${what}\n`);
  }
  if (queued.length) process.stdout.write(`${queued.length} item(s) already queued would be processed too\n`);
  for (const run of plan.steps.filter((s) => s.phase === 'post'))
    process.stdout.write(`  after documents: ${run.name}\n`);
}
