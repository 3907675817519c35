/**
 * "stream": an example agent on the agent-author kit that declares `capabilities.streaming`,
 * effect-domain-v1 and cost-v1, and emits submitted → working → progress artifact → effects
 * artifact → completed with a pause before finishing. The deltas of the build are reported through
 * the kit, which sends them once, on the effects artifact right before the final status — never on
 * the progress artifact.
 */
import { declareCost, declareEffectDomain } from '../../src/agent/index.js';
import { startAgent, textPart, type AgentBehaviour, type RunningAgent } from './harness.js';

/** The streaming agent's behaviour: a progress artifact and two deltas, after `delayMs`. */
export function streamingBehaviour(delayMs = 20): AgentBehaviour {
  return (call) => ({
    delayMs,
    artifacts: [[textPart(`building ${call.skill ?? 'build'}`)]],
    deltas: [
      { domain: 'ci', path: 'data.running', op: 'inc', value: 1 },
      { domain: 'ci', path: 'data.lastBuild', op: 'set', value: 'ok' },
    ],
  });
}

/** Starts the streaming agent. */
export function startStreamingAgent(
  options: { port?: number; behaviour?: AgentBehaviour } = {},
): Promise<RunningAgent> {
  return startAgent({
    name: 'stream',
    description: 'Runs builds and streams progress.',
    ...(options.port === undefined ? {} : { port: options.port }),
    streaming: true,
    skills: [{ id: 'build' }],
    declare: (card) => declareCost(declareEffectDomain(card, { build: { domains: ['ci'] } })),
    behaviour: options.behaviour ?? streamingBehaviour(),
  });
}
