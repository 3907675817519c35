import type { CollectedEvent } from '../bus/index.js';
import type { OpenTopics } from '../protocol/index.js';
import { createOutboxWriter } from '../bus/index.js';
import type { TerminalClaim, TerminalCommit } from '../dispatch/index.js';
import type { TaskRecordStore } from './task-records.js';

/** Options of {@link createTerminalCommit}. */
export interface TerminalCommitOptions {
  records: Pick<TaskRecordStore, 'claim'>;
  /** Called after a winning commit, e.g. `relay.notify()` so the events go out at once. */
  onCommitted?: (claim: TerminalClaim, events: readonly CollectedEvent[]) => void;
  now?: () => number;
}

const outbox = createOutboxWriter<OpenTopics>();

/**
 * The durable terminal commit: claims the task record (compare-and-set, or records a task that was
 * terminal in the reply) and writes the events its `after` hooks produced to the outbox, in one
 * transaction. The outbox relay publishes them; their deterministic ids make a re-send a no-op.
 *
 * @example
 * ```ts
 * const collector = new EventCollector(bus);
 * registerStandardExtensions(registry, { bus: collector, blast });
 * const relay = createOutboxRelay({ db: store.db, bus });
 * const commit = createTerminalCommit({ records, onCommitted: () => relay.notify() });
 * createFleetClient({ registry, bus: collector, cards, durable: { collector, commit } });
 * ```
 */
export function createTerminalCommit(options: TerminalCommitOptions): TerminalCommit {
  const now = options.now ?? Date.now;
  return async (claim, events) => {
    const won = await options.records.claim(
      claim.agent,
      claim.taskId,
      {
        via: claim.via,
        state: claim.state,
        at: now(),
        call: {
          skill: claim.skill,
          correlationId: claim.correlationId,
          startedAt: claim.startedAt,
        },
      },
      async (trx) => {
        for (const event of events) {
          await outbox.write(trx, event.topic, event.payload, {
            id: event.id,
            ...(event.correlationId === undefined ? {} : { correlationId: event.correlationId }),
          });
        }
      },
    );
    if (won) options.onCommitted?.(claim, events);
    return won;
  };
}
