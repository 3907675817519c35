/**
 * Each top-level command's module, loaded only when the command line names it: `fleetgate agents`
 * reads the code of `agents` and nothing of `start`'s gateway, so a command answers in a fraction
 * of the time loading all of them takes. `commands/index.ts` stays the one list of every command
 * (help, docs); a test checks that this map names each of its commands.
 */
import type { RegisterCommand } from './types.js';

type Loader = () => Promise<RegisterCommand>;

const agents: Loader = async () => (await import('./agents.js')).registerAgents;
const approvals: Loader = async () => (await import('./approvals.js')).registerApprovals;
const calls: Loader = async () => (await import('./calls.js')).registerCalls;
const fleetActions: Loader = async () => (await import('./fleet-actions.js')).registerFleetActions;

/** Top-level command name → the function that registers it. */
export const COMMAND_LOADERS: Readonly<Record<string, Loader>> = {
  start: async () => (await import('./start.js')).registerStart,
  init: async () => (await import('./config.js')).registerInit,
  config: async () => (await import('./config.js')).registerConfig,
  'lint-card': async () => (await import('./lint-card.js')).registerLintCard,
  agents,
  cards: agents,
  tail: async () => (await import('./tail.js')).registerTail,
  world: async () => (await import('./world.js')).registerWorld,
  approvals,
  policy: approvals,
  'check-agent': async () => (await import('./check-agent.js')).registerCheckAgent,
  dispatch: async () => (await import('./dispatch.js')).registerDispatch,
  calls,
  call: calls,
  refresh: fleetActions,
  ack: fleetActions,
  cancel: fleetActions,
};

/** Every command, in the order `fleetgate --help` lists them. */
export async function loadAllCommands(): Promise<RegisterCommand[]> {
  return (await import('./index.js')).COMMANDS.slice();
}
