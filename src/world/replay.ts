/** Replay: rebuilding a domain's state from its base and the applied records of the audit log. */
import { applyDelta } from './apply.js';
import type { JsonObject } from './json.js';
import type { AuditRecord } from './types.js';

/** Re-applies applied audit records, oldest first, onto `state` (mutated and returned). */
export function replayRecords(
  state: JsonObject,
  records: readonly Pick<AuditRecord, 'status' | 'op' | 'path' | 'value'>[],
): JsonObject {
  for (const record of records) {
    if (record.status !== 'applied') continue;
    const op = record.op;
    if (op !== 'set' && op !== 'inc' && op !== 'push') continue;
    applyDelta(state, record.path, op, record.value);
  }
  return state;
}
