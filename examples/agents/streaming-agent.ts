/**
 * "stream": an example agent that declares `capabilities.streaming` and effect-domain-v1, and
 * emits submitted → working → artifact(s) → completed with a pause before finishing.
 */
import {
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  createWorldStateDeltaPart,
} from '../../src/protocol/index.js';
import { startAgent, textPart, type AgentBehaviour, type RunningAgent } from './harness.js';

/** The streaming agent's behaviour: two artifacts, each with deltas, after `delayMs`. */
export function streamingBehaviour(delayMs = 20): AgentBehaviour {
  return (call) => ({
    delayMs,
    artifacts: [
      [
        textPart(`building ${call.skill ?? 'build'}`),
        createWorldStateDeltaPart([{ domain: 'ci', path: 'data.running', op: 'inc', value: 1 }]),
      ],
      [
        createWorldStateDeltaPart([
          { domain: 'ci', path: 'data.lastBuild', op: 'set', value: 'ok' },
        ]),
      ],
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
    extensions: [{ uri: EFFECT_DOMAIN_V1_URI }, { uri: COST_V1_URI }],
    behaviour: options.behaviour ?? streamingBehaviour(),
  });
}
