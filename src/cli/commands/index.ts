/**
 * Every command of `fleetgate`, in the order `fleetgate --help` lists them. This list is the one
 * place a command is registered: the program, the README's command table and its test all read it.
 */
import type { Command } from 'commander';
import type { CliIo } from '../io.js';
import { createProgram } from '../program.js';
import { registerAgents } from './agents.js';
import { registerApprovals } from './approvals.js';
import { registerCalls } from './calls.js';
import { registerCheckAgent } from './check-agent.js';
import { registerConfig, registerInit } from './config.js';
import { registerDispatch } from './dispatch.js';
import { registerFleetActions } from './fleet-actions.js';
import { registerLintCard } from './lint-card.js';
import { registerStart } from './start.js';
import { registerTail } from './tail.js';
import { registerWorld } from './world.js';

import type { RegisterCommand } from './types.js';

export type { RegisterCommand } from './types.js';

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
  registerCalls,
  registerFleetActions,
];

/** The program with every command (help pages, the command reference). */
export function buildProgram(io: CliIo, setExit: (code: number) => void): Command {
  return createProgram(io, setExit, COMMANDS);
}
