/**
 * The {@link TaskEffects} a `withEffects` executor is handed: reports validated at once and kept on
 * the task's record, with a warning for what a gateway would not read as meant.
 */
import type { CostPayload, WorldStateDeltaEntry } from '../protocol/index.js';
import { FleetgateError, LIMITS, parseCostPayload, parseDeltaEntry } from '../protocol/index.js';
import type { EffectsScope, TaskRecord } from './effects-records.js';
import { warnOnce } from './effects-records.js';
import type { SizeCounter } from './effects-size.js';
import {
  DELTAS_WARNING_BYTES,
  deltasTooLarge,
  entryBytes,
  entryFrameBound,
  snapshot,
} from './effects-size.js';
import { addCost, failingField } from './effects-support.js';
import type { TaskEffects } from './effects-types.js';

/** Warns when reported deltas name a domain the skill did not declare (or cannot be checked). */
function checkDomains(
  scope: EffectsScope,
  record: TaskRecord,
  entries: readonly WorldStateDeltaEntry[],
): void {
  if (!scope.effectDomainDeclared) {
    warnOnce(scope, record, 'effect-domain', {
      kind: 'extension-not-declared',
      message: `task ${record.taskId} reported deltas, but the card does not declare effect-domain-v1: a Fleetgate gateway never reads them (declareEffectDomain)`,
    });
    return;
  }
  const skill = record.skill;
  if (skill === undefined) {
    warnOnce(scope, record, 'skill', {
      kind: 'unknown-skill',
      message: `task ${record.taskId}: no x-effect-domain-skill stamp and more than one skill on the card; the reported domains cannot be checked`,
    });
    return;
  }
  const domains = scope.declarations.effectDomain[skill]?.domains;
  for (const entry of entries) {
    if (domains?.includes(entry.domain) === true) continue;
    warnOnce(scope, record, `domain:${entry.domain}`, {
      kind: 'undeclared-domain',
      skill,
      domain: entry.domain,
      message:
        domains === undefined
          ? `${skill} reported a change to domain "${entry.domain}" but declares no effect-domain-v1 domains: the gateway raises an undeclared_effect alert`
          : `${skill} reported a change to domain "${entry.domain}", outside its declared domains (${domains.join(', ') || 'none'}): the gateway raises an undeclared_effect alert`,
    });
  }
}

/**
 * Warns, once per task, when its deltas as JSON pass {@link DELTAS_WARNING_BYTES}. `bound` is an
 * upper bound of the bytes of the entries just added: only when the bound of the whole list passes
 * the threshold are the entries not yet measured serialised, each once.
 */
function checkSize(scope: EffectsScope, record: TaskRecord, bound: number): void {
  const size = record.deltaBytes;
  size.pending += bound;
  if (size.exact + size.pending + 1 <= DELTAS_WARNING_BYTES || record.warned.has('size')) return;
  const { deltas } = record;
  for (let i = size.measured; i < deltas.length; i += 1) size.exact += entryBytes(deltas[i]!) + 1;
  size.measured = deltas.length;
  size.pending = 0;
  const bytes = size.exact + 1;
  if (bytes <= DELTAS_WARNING_BYTES) return;
  warnOnce(scope, record, 'size', {
    kind: 'effects-too-large',
    bytes,
    message: `task ${record.taskId} reported ${deltasTooLarge(bytes)}`,
  });
}

/** The fields of a cost sample (typed so that a new field of `CostPayload` must be added here). */
const COST_FIELDS: Readonly<Record<keyof CostPayload, true>> = {
  usage: true,
  durationMs: true,
  costUsd: true,
  success: true,
};

/**
 * The field a cost reason is about: it starts with the path (`usage.input_tokens …`) when
 * the issue is inside the sample; anything else is about the sample as a whole.
 */
function costField(reason: string): string {
  const path = /^[\w.]+(?= )/.exec(reason)?.[0];
  const head = path?.split('.')[0];
  return head !== undefined && Object.hasOwn(COST_FIELDS, head) ? path! : 'sample';
}

/** How a non-object reads in a message: `string`, `null`, `array`… */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}

/** Refuses a report once the task ended and its effects were sent. */
function assertOpen(record: TaskRecord, method: 'report' | 'reportCost'): void {
  if (record.sealed) {
    throw new FleetgateError(
      'FLEETGATE_EFFECTS_CLOSED',
      `${method}(): task ${record.taskId} already ended and its effects were sent`,
      { details: { taskId: record.taskId } },
    );
  }
}

/** The effects handed to the executor for one task. */
export function effectsOf(scope: EffectsScope, record: TaskRecord): TaskEffects {
  return {
    taskId: record.taskId,
    get contextId() {
      return record.contextId;
    },
    skill: record.skill,
    stamps: record.stamps,
    get deltas() {
      return record.deltas;
    },
    report(deltas) {
      assertOpen(record, 'report');
      const batch: readonly unknown[] = Array.isArray(deltas) ? deltas : [deltas];
      if (record.deltas.length + batch.length > LIMITS.deltasPerTask) {
        throw new FleetgateError(
          'FLEETGATE_LIMIT_EXCEEDED',
          `report(): a task may report at most ${LIMITS.deltasPerTask} deltas (task ${record.taskId} has ${record.deltas.length}, ${batch.length} more given)`,
          { details: { taskId: record.taskId, limit: LIMITS.deltasPerTask } },
        );
      }
      const accepted: WorldStateDeltaEntry[] = [];
      const size: SizeCounter = { bytes: 0 };
      batch.forEach((candidate, index) => {
        const verdict = parseDeltaEntry(candidate);
        if (verdict.ok) {
          // The value is known to be plain JSON now; what is kept must not change with the caller's
          // object. (A getter is read twice, to check and to copy: one that answers differently
          // the second time gets past this check, never past the gateway's.)
          const { domain, path } = verdict.entry;
          accepted.push({ ...verdict.entry, value: snapshot(verdict.entry.value, size) });
          size.bytes += entryFrameBound(domain, path) + 1;
          return;
        }
        const field = failingField(candidate);
        throw new FleetgateError(
          'FLEETGATE_DELTA_INVALID',
          `report(): deltas[${index}].${field} is invalid: ${verdict.reason}`,
          { details: { taskId: record.taskId, index, field, reason: verdict.reason } },
        );
      });
      checkDomains(scope, record, accepted);
      for (const entry of accepted) record.deltas.push(entry);
      record.reported = true;
      checkSize(scope, record, size.bytes);
    },
    reportCost(sample) {
      assertOpen(record, 'reportCost');
      const verdict = parseCostPayload(sample);
      if (!verdict.ok) {
        const whole = typeof sample !== 'object' || sample === null || Array.isArray(sample);
        const field = whole ? 'sample' : costField(verdict.reason);
        throw new FleetgateError(
          'FLEETGATE_COST_INVALID',
          whole
            ? `reportCost(): the sample must be an object (got ${kindOf(sample)})`
            : `reportCost(): ${field} is invalid: ${verdict.reason}`,
          { details: { taskId: record.taskId, field, reason: verdict.reason } },
        );
      }
      if (!scope.costDeclared) {
        warnOnce(scope, record, 'cost', {
          kind: 'extension-not-declared',
          message: `task ${record.taskId} reported a cost, but the card does not declare cost-v1: a Fleetgate gateway never reads it (declareCost)`,
        });
      }
      record.cost = addCost(record.cost, verdict.payload);
    },
  };
}
