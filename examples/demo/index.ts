/**
 * The demo fleet `fleetgate start` runs when it is given no configuration: a CI bot, a board bot
 * and a deployer — real `@a2a-js/sdk` servers on free loopback ports — and the world state they
 * start from.
 */
import type { RunningAgent } from '../agents/harness.js';
import { startBoardBot } from './board-bot.js';
import { startCiBot } from './ci-bot.js';
import { startDeployer } from './deployer.js';

export { BOARD_SKILLS } from './board-bot.js';
export { CI_SKILLS } from './ci-bot.js';
export { DEPLOYER_SKILLS, ROLLBACK_VETO_MS } from './deployer.js';
export { DEMO_SEEDS } from './seeds.js';

/** Starts the three demo agents. */
export function startDemoAgents(): Promise<RunningAgent[]> {
  return Promise.all([startCiBot(), startBoardBot(), startDeployer()]);
}
