import { ConfigError, describeError } from '../errors.js';
import type { Engine } from './engine.js';
import { type Plan, planPipeline } from './plan.js';
import { RunLog } from './run-log.js';

/**
 * The plan of the pipeline a run is about to use (by name, else the configured or default one). A pipeline its
 * configuration makes unusable (invalid rows, unknown name) stops the run before it starts: that is recorded in
 * ki_dev as a failed run with the reason, so that every run a user started shows there, then thrown.
 */
export async function planForRun(engine: Engine, name: string | undefined, command: string): Promise<Plan> {
  const pipeline = name ?? engine.config.pipeline;
  return planPipeline(engine.dbs.content.sql, engine.registry, pipeline).catch(async (error: unknown) => {
    if (error instanceof ConfigError) {
      // under the pipeline's own name where it was found (an invalid default one), else what was asked for
      const found = error.details.pipeline;
      const named = typeof found === 'string' ? found : (pipeline ?? '(default)');
      await recordRefusedRun(engine, named, command, error);
    }
    throw error;
  });
}

/** A run refused before it started (its pipeline or its arguments make it unusable), recorded in ki_dev. */
export async function recordRefusedRun(
  engine: Engine,
  pipelineName: string,
  command: string,
  error: unknown,
): Promise<void> {
  await new RunLog(engine.dbs.log.sql)
    .recordRefusedRun({ pipelineName, command, profile: engine.profile, error: describeError(error) })
    .catch(() => undefined); // ki_dev unreachable: the error thrown is what the user needs
}
