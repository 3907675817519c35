/**
 * "plain": an example agent that declares no extension. It still reports a delta through the kit
 * (which warns that no gateway will read it: `agent.warnings`), so a test can show that nothing is
 * published for an agent that never declared effect-domain-v1.
 */
import { startAgent, textPart, type AgentBehaviour, type RunningAgent } from './harness.js';

/** The plain agent's behaviour: echoes the text, with an (undeclared) delta. */
export const plainBehaviour: AgentBehaviour = (call) => ({
  artifacts: [[textPart(`echo: ${call.text}`)]],
  deltas: [{ domain: 'board', path: 'data.echoes', op: 'inc', value: 1 }],
});

/** Starts the plain agent. */
export function startPlainAgent(
  options: { port?: number; behaviour?: AgentBehaviour } = {},
): Promise<RunningAgent> {
  return startAgent({
    name: 'plain',
    description: 'Echoes its input; declares no extension.',
    ...(options.port === undefined ? {} : { port: options.port }),
    skills: [{ id: 'echo' }],
    behaviour: options.behaviour ?? plainBehaviour,
  });
}
