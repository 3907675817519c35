/**
 * "legacy": an example agent that speaks only A2A v0.3 (the SDK's `legacyCompat` layer): a v0.3
 * card, `message/send`, `kind` discriminators, lowercase states, `X-A2A-Extensions`. It declares
 * effect-domain-v1 and blast-v1 and reports deltas.
 */
import {
  BLAST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  createWorldStateDeltaPart,
} from '../../src/protocol/index.js';
import { startAgent, textPart, type AgentBehaviour, type RunningAgent } from './harness.js';

/** The legacy agent's behaviour. */
export const legacyBehaviour: AgentBehaviour = (call) => ({
  artifacts: [
    [
      textPart(`triaged (${call.requestedVersion})`),
      createWorldStateDeltaPart([
        { domain: 'board', path: 'data.untriaged', op: 'inc', value: -2 },
      ]),
    ],
  ],
});

/** Starts the legacy agent. */
export function startLegacyAgent(
  options: { port?: number; behaviour?: AgentBehaviour } = {},
): Promise<RunningAgent> {
  return startAgent({
    name: 'legacy',
    description: 'Triages the board; speaks A2A v0.3 only.',
    ...(options.port === undefined ? {} : { port: options.port }),
    legacy: true,
    skills: [{ id: 'triage' }],
    extensions: [
      { uri: EFFECT_DOMAIN_V1_URI },
      { uri: BLAST_V1_URI, params: { skills: { triage: { radius: 'project' } } } },
    ],
    behaviour: options.behaviour ?? legacyBehaviour,
  });
}
