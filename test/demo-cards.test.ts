/**
 * The demo fleet's agents declare their extensions with the agent-author kit: every card they
 * serve reads back without a diagnostic, with the radius, mode and domains of its skill table.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/harness.js';
import { BOARD_SKILLS, startBoardBot } from '../examples/demo/board-bot.js';
import { CI_SKILLS, startCiBot } from '../examples/demo/ci-bot.js';
import type { DemoSkill } from '../examples/demo/declare.js';
import { DEPLOYER_SKILLS, startDeployer } from '../examples/demo/deployer.js';
import { lintCard } from '../src/cli/index.js';
import { COST_V1_URI, readDeclarations } from '../src/protocol/index.js';

describe('demo fleet cards', () => {
  const agents: [RunningAgent, Readonly<Record<string, DemoSkill>>][] = [];

  beforeAll(async () => {
    agents.push([await startCiBot(), CI_SKILLS]);
    agents.push([await startBoardBot(), BOARD_SKILLS]);
    agents.push([await startDeployer(), DEPLOYER_SKILLS]);
  });
  afterAll(async () => {
    await Promise.all(agents.map(([a]) => a.close()));
  });

  it('lint clean and read back as their skill tables declare', async () => {
    for (const [agent, table] of agents) {
      const card = await agent.fetchCard();
      expect(lintCard(card, agent.url).summary).toMatchObject({ errors: 0, warnings: 0 });
      const read = readDeclarations(card);
      expect(read.diagnostics).toEqual([]);
      for (const [skill, want] of Object.entries(table)) {
        expect(read.blast[skill]?.radius).toBe(want.radius);
        expect(read.hitlMode[skill]?.mode).toBe(want.mode);
        expect([...(read.effectDomain[skill]?.domains ?? [])]).toEqual(want.domains);
      }
      expect(read.extensions).toContain(COST_V1_URI);
    }
  });
});
