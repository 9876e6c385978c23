import type { SqlExecutor } from '../../src/db/sql.js';

export interface StepRowSpec {
  name: string;
  type: string;
  config?: Record<string, unknown> | string | null;
  dependsOn?: string[] | string | null;
  enabled?: boolean;
}

/** Inserts a pipeline the way a user would, with plain SQL and only the required columns. Returns its id. */
export async function insertPipeline(
  db: SqlExecutor,
  name: string,
  steps: StepRowSpec[],
  isDefault = false,
): Promise<number> {
  await db.run('INSERT INTO pipeline_configs (name, description, is_default, status) VALUES (?, ?, ?, ?)', [
    name,
    `test pipeline ${name}`,
    isDefault ? 1 : 0,
    'active',
  ]);
  const [{ id }] = await db.query<{ id: number }>('SELECT id FROM pipeline_configs WHERE name = ?', [name]);
  let order = 10;
  for (const step of steps) {
    const config =
      step.config === undefined || step.config === null
        ? null
        : typeof step.config === 'string'
          ? step.config
          : JSON.stringify(step.config);
    const dependsOn =
      step.dependsOn === undefined || step.dependsOn === null
        ? null
        : typeof step.dependsOn === 'string'
          ? step.dependsOn
          : JSON.stringify(step.dependsOn);
    if (dependsOn === null) {
      await db.run(
        'INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config) VALUES (?, ?, ?, ?, ?, ?)',
        [id, step.name, step.type, order, step.enabled === false ? 0 : 1, config],
      );
    } else {
      await db.run(
        'INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on) VALUES (?, ?, ?, ?, ?, ?, ?)',
        [id, step.name, step.type, order, step.enabled === false ? 0 : 1, config, dependsOn],
      );
    }
    order += 10;
  }
  return Number(id);
}
