import type { Plan } from '../engine/plan.js';

/**
 * Draws a plan as layers: every step sits one layer below its deepest dependency, so steps on the same layer
 * can run at the same time. Each line names what the step waits for.
 */
export function drawDag(plan: Plan): string {
  const layer = new Map<string, number>();
  for (const step of plan.steps) {
    const deps = step.dependsOn.filter((d) => plan.byName.get(d)?.phase === step.phase);
    layer.set(step.name, deps.length ? Math.max(...deps.map((d) => layer.get(d) ?? 0)) + 1 : 0);
  }
  const lines: string[] = [
    `${plan.pipeline.name}  (version ${plan.versionHash}, ${plan.steps.length} steps)`,
  ];
  const phases: Array<[string, string]> = [
    ['pre', 'before the documents (once per run)'],
    ['document', 'per document'],
    ['post', 'after the documents (once per run)'],
  ];
  for (const [phase, title] of phases) {
    const steps = plan.steps.filter((s) => s.phase === phase);
    if (!steps.length) continue;
    lines.push('', `${title}:`);
    const depth = Math.max(...steps.map((s) => layer.get(s.name)!));
    for (let l = 0; l <= depth; l++) {
      const row = steps.filter((s) => layer.get(s.name) === l);
      row.forEach((step, i) => {
        const branch = row.length > 1 ? (i === 0 ? '┬' : i === row.length - 1 ? '└' : '├') : '─';
        const label = step.name === step.type ? step.name : `${step.name} (${step.type})`;
        const waits = step.dependsOn.length ? `  <- ${step.dependsOn.join(', ')}` : '';
        lines.push(`  ${String(l + 1).padStart(2)} ${branch} ${label}${waits}`);
      });
    }
  }
  return lines.join('\n');
}
