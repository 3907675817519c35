/**
 * Every command of `fleetgate`, in the order `fleetgate --help` lists them. This list is the one
 * place a command is registered: the program, the README's command table and its test all read it.
 */
import type { Command } from 'commander';
import type { CliIo } from '../io.js';
import { registerAgents } from './agents.js';
import { registerApprovals } from './approvals.js';
import { registerCheckAgent } from './check-agent.js';
import { registerConfig, registerInit } from './config.js';
import { registerDispatch } from './dispatch.js';
import { registerFleetActions } from './fleet-actions.js';
import { registerLintCard } from './lint-card.js';
import { registerStart } from './start.js';
import { registerTail } from './tail.js';
import { registerWorld } from './world.js';

/**
 * Adds a command (or a family of them) to the program. An action returns through `setExit` with
 * its exit code, or throws: the error printer reports what it threw.
 */
export type RegisterCommand = (
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
) => void;

/** The commands, registered in this order. */
export const COMMANDS: readonly RegisterCommand[] = [
  registerStart,
  registerInit,
  registerConfig,
  registerLintCard,
  registerAgents,
  registerTail,
  registerWorld,
  registerApprovals,
  registerCheckAgent,
  registerDispatch,
  registerFleetActions,
];
