import { FleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { BlastRadius, HitlMode } from '../protocol/index.js';
import { unknownAgent } from './directory.js';
import type { DeclarationRatchet, RatchetKind } from './ratchet.js';

/** A skill whose narrower declaration waits for an operator. */
export interface PendingAcknowledgement {
  agent: string;
  skill: string;
  kind: RatchetKind;
  /** The level in force. */
  accepted: string;
  /** The narrower level the card declares. */
  pending: string;
}

/** Options of {@link createAcknowledgements}. */
export interface AcknowledgementsOptions {
  /** The ratchet holds pending narrowings and persists acknowledgements. */
  ratchet: DeclarationRatchet;
  /** Only configured agents can be acknowledged. */
  directory: { get(name: string): unknown };
}

/** Operator acknowledgements of narrower declarations (persisted through the ratchet). */
export interface Acknowledgements {
  /**
   * An operator accepts the narrower radius and/or mode a skill now declares. Returns what took
   * effect.
   *
   * @throws FleetgateError `FLEETGATE_AGENT_UNKNOWN`, `FLEETGATE_NOTHING_TO_ACKNOWLEDGE`
   */
  acknowledge(
    agent: string,
    skill: string,
    by?: string,
  ): Promise<{ radius?: BlastRadius; mode?: HitlMode }>;
  /** Skills of configured agents whose narrower declaration waits for acknowledgement. */
  pending(): PendingAcknowledgement[];
}

/**
 * Creates the acknowledgements: the one place an operator lowers an effective radius or mode.
 *
 * @example
 * ```ts
 * const acks = createAcknowledgements({ ratchet, directory });
 * await acks.acknowledge('quinn', 'pr_review', 'alice'); // { radius: 'self' }
 * ```
 */
export function createAcknowledgements(options: AcknowledgementsOptions): Acknowledgements {
  const { ratchet, directory } = options;
  return {
    async acknowledge(agent, skill, by = 'operator') {
      if (directory.get(agent) === undefined) throw unknownAgent(agent);
      const radius = await ratchet.acknowledge('blast', agent, skill, by);
      const mode = await ratchet.acknowledge('hitl', agent, skill, by);
      if (radius === undefined && mode === undefined) {
        throw new FleetgateError(
          'FLEETGATE_NOTHING_TO_ACKNOWLEDGE',
          `${agent}/${skill} has no narrower radius or mode waiting for acknowledgement.`,
          { details: { agent, skill } },
        );
      }
      return defined({ radius, mode });
    },
    pending() {
      return ratchet
        .pendingRows()
        .filter((r) => directory.get(r.agent) !== undefined)
        .map((r) => ({
          agent: r.agent,
          skill: r.skill,
          kind: r.kind,
          accepted: r.accepted,
          pending: r.pending ?? '',
        }));
    },
  };
}
