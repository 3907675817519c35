/**
 * "legacy": an example agent on the agent-author kit that speaks only A2A v0.3 (the SDK's
 * `legacyCompat` layer): a v0.3 card, `message/send`, `kind` discriminators, lowercase states,
 * `X-A2A-Extensions`. It declares effect-domain-v1 and blast-v1 and reports deltas through the
 * kit; the v0.3 layer carries the same parts a v1.0 caller reads.
 */
import { declareBlast, declareEffectDomain } from '../../src/agent/index.js';
import { startAgent, textPart, type AgentBehaviour, type RunningAgent } from './harness.js';

/** The legacy agent's behaviour. */
export const legacyBehaviour: AgentBehaviour = (call) => ({
  artifacts: [[textPart(`triaged (${call.requestedVersion})`)]],
  deltas: [{ domain: 'board', path: 'data.untriaged', op: 'inc', value: -2 }],
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
    declare: (card) =>
      declareBlast(declareEffectDomain(card, { triage: { domains: ['board'] } }), {
        triage: 'project',
      }),
    behaviour: options.behaviour ?? legacyBehaviour,
  });
}
