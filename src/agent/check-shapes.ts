/**
 * Wire-shape checks of what an agent answered: v0.3 shapes (`kind` discriminators, lowercase
 * states) in a v1.0 answer, and the reverse. A lenient reader such as Fleetgate reads both; a
 * strict v1.0 reader drops what it does not recognise.
 */

/** One shape problem, with the JSON path where it was found. */
export interface ShapeProblem {
  path: string;
  message: string;
}

const V03_KINDS = new Set([
  'text',
  'data',
  'file',
  'task',
  'message',
  'status-update',
  'artifact-update',
]);
/** How deep the walk goes; deeper values are payloads, not protocol structure. */
const MAX_DEPTH = 12;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Finds the first v0.3 `kind` and the first non-`TASK_STATE_*` state in a v1.0 answer, or the
 * first part without `kind` in a v0.3 answer. Payloads (`data`, `metadata`) are not walked.
 */
export function inspectWireShapes(
  results: readonly unknown[],
  version: '1.0' | '0.3',
): ShapeProblem[] {
  const problems: ShapeProblem[] = [];
  let kindSeen = false;
  let stateSeen = false;
  let kindMissing = false;
  const walk = (value: unknown, path: string, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, `${path}[${i}]`, depth + 1));
      return;
    }
    if (!isRecord(value)) return;
    if (version === '1.0') {
      if (!kindSeen && typeof value.kind === 'string' && V03_KINDS.has(value.kind)) {
        kindSeen = true;
        problems.push({
          path,
          message: `a v0.3 "kind": ${JSON.stringify(value.kind)} in a v1.0 answer: v1.0 readers expect no "kind" (parts are { text | data | url | raw })`,
        });
      }
      if (!stateSeen && typeof value.state === 'string' && !value.state.startsWith('TASK_STATE_')) {
        stateSeen = true;
        problems.push({
          path: `${path}.state`,
          message: `state ${JSON.stringify(value.state)} in a v1.0 answer: v1.0 states are TASK_STATE_*`,
        });
      }
    }
    for (const [key, child] of Object.entries(value)) {
      if (key === 'data' || key === 'metadata') continue;
      if (version === '0.3' && key === 'parts' && Array.isArray(child) && !kindMissing) {
        const i = child.findIndex((p) => isRecord(p) && typeof p.kind !== 'string');
        if (i !== -1) {
          kindMissing = true;
          problems.push({
            path: `${path}.parts[${i}]`,
            message: 'a part without "kind" in a v0.3 answer: v0.3 readers need "kind"',
          });
        }
      }
      walk(child, path === '' ? key : `${path}.${key}`, depth + 1);
    }
  };
  results.forEach((result, i) => walk(result, results.length === 1 ? 'result' : `events[${i}]`, 0));
  return problems;
}
