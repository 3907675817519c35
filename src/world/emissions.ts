/**
 * The events the materialiser emits besides `world.state.updated`: the rejections of an event (in
 * parts when they are many bytes) and the alert for a domain at its size limit. No I/O.
 */
import type { RejectedDeltaEntry } from '../protocol/index.js';
import { deterministicEventId, partEventId, splitBySize } from '../protocol/index.js';
import type { WorldEmission } from './types.js';

/** The event the emissions are about. */
export interface EmissionContext {
  eventId: string;
  correlationId: string;
  source: string;
  skill: string;
  taskId: string;
}

/** The rejection of an entry that would grow its domain past `limit` (to about `bytes`). */
export function domainFullRejection(
  entry: { index: number; domain: string; path: string; op: string },
  value: unknown,
  bytes: number,
  limit: number,
): RejectedDeltaEntry & { reason: string } {
  return {
    index: entry.index,
    entry: { domain: entry.domain, path: entry.path, op: entry.op, value },
    reason:
      `domain ${entry.domain} would grow to about ${bytes} bytes, more than its limit of ` +
      `${limit} (FLEETGATE_WORLD_DOMAIN_FULL)`,
    code: 'FLEETGATE_WORLD_DOMAIN_FULL',
  };
}

/** The domains one event found at their size limit, for one alert each. */
export class DomainsFull {
  readonly #domains = new Map<string, { bytes: number; count: number }>();

  /** An entry for `domain` (at about `bytes`) was rejected. */
  note(domain: string, bytes: number): void {
    const full = this.#domains.get(domain);
    if (full === undefined) this.#domains.set(domain, { bytes, count: 1 });
    else full.count += 1;
  }

  /** One `ops.alert.world_domain_full` per domain, with a deterministic id. */
  alerts(context: EmissionContext, limit: number): WorldEmission[] {
    return [...this.#domains].map(([domain, full]) => ({
      topic: 'ops.alert.world_domain_full',
      payload: {
        kind: 'world_domain_full',
        severity: 'warning',
        agent: context.source,
        skill: context.skill,
        radius: 'unknown',
        message:
          `World domain ${domain} is at about ${full.bytes} bytes of its ${limit} limit: ` +
          `${full.count} ${full.count === 1 ? 'entry' : 'entries'} of task ${context.taskId} ` +
          `rejected (FLEETGATE_WORLD_DOMAIN_FULL). Shrink the domain or raise limits.domainBytes.`,
        evidence: {
          domain,
          bytes: full.bytes,
          limit,
          rejected: full.count,
          taskId: context.taskId,
          eventId: context.eventId,
        },
      },
      id: deterministicEventId('ops.alert.world_domain_full', context.eventId, domain),
      correlationId: context.correlationId,
    }));
  }
}

/**
 * The `world.state.delta.rejected` of an event: one, or — when the (summarised) rejections are
 * more bytes than one event carries — parts in order, each with `part: { index, count }`.
 */
export function rejectionEmissions(
  rejected: RejectedDeltaEntry[],
  context: EmissionContext,
  maxEventBytes: number,
): WorldEmission[] {
  const about = { source: context.source, skill: context.skill, taskId: context.taskId };
  const id = deterministicEventId('world.state.delta.rejected', 'materialiser', context.eventId);
  const runs = splitBySize(rejected, maxEventBytes, {
    baseBytes: Buffer.byteLength(JSON.stringify(about)) + 600,
  });
  return runs.map((run, index) => ({
    topic: 'world.state.delta.rejected',
    payload:
      runs.length === 1
        ? { ...about, rejected: run }
        : { ...about, rejected: run, part: { index, count: runs.length } },
    id: partEventId(id, index),
    correlationId: context.correlationId,
  }));
}
