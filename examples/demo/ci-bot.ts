/**
 * "ci": the demo's CI bot. `sitrep` (self, autonomous) reports on itself; `rerun_checks` (repo,
 * notification) re-runs a PR's checks and reports what changed in the `ci` domain.
 */
import { createCostPart, createWorldStateDeltaPart } from '../../src/protocol/index.js';
import { startAgent, textPart, type AgentBehaviour, type RunningAgent } from '../agents/harness.js';
import { declare, skillList, type DemoSkill } from './declare.js';
import { DEMO_SEEDS } from './seeds.js';

export const CI_SKILLS: Readonly<Record<string, DemoSkill>> = {
  sitrep: {
    radius: 'self',
    mode: 'autonomous',
    domains: [],
    description: 'Reports the state of the CI queue.',
  },
  rerun_checks: {
    radius: 'repo',
    mode: 'notification',
    domains: ['ci'],
    description: "Re-runs a pull request's checks.",
  },
};

function behaviour(): AgentBehaviour {
  /** The checks failing now, as this bot sees its queue. */
  let failing: number = DEMO_SEEDS.ci.data.failingChecks;
  return (call) => {
    const pr = /\d+/.exec(call.text)?.[0] ?? '42';
    if (call.skill === 'sitrep') {
      // `self`: it changes nothing but itself, so it reports no world-state delta (a delta here
      // would be a violation of its radius, and the gateway would raise its floor).
      return {
        delayMs: 100,
        artifacts: [
          [
            textPart('CI queue: 3 jobs running, nothing stuck.'),
            createCostPart({ usage: { input_tokens: 80, output_tokens: 20 }, costUsd: 0.0003 }),
          ],
        ],
      };
    }
    // A re-run mostly fixes a failing check; with none failing, a flaky one sometimes turns red.
    const passed = failing > 0 ? Math.random() < 0.8 : Math.random() < 0.7;
    failing = failing > 0 ? failing - (passed ? 1 : 0) : passed ? 0 : 1;
    return {
      delayMs: 400,
      artifacts: [
        [
          textPart(`Checks of PR ${pr} re-run: ${passed ? 'green' : 'still red'}.`),
          createWorldStateDeltaPart([
            { domain: 'ci', path: 'data.reruns', op: 'inc', value: 1 },
            { domain: 'ci', path: 'data.failingChecks', op: 'set', value: failing },
            { domain: 'ci', path: 'data.lastRun', op: 'set', value: { pr: Number(pr), passed } },
          ]),
          createCostPart({ usage: { input_tokens: 310, output_tokens: 42 }, costUsd: 0.0011 }),
        ],
      ],
    };
  };
}

/** Starts the CI bot on a free loopback port. */
export function startCiBot(): Promise<RunningAgent> {
  return startAgent({
    name: 'ci',
    description: 'CI bot: re-runs checks and reports the CI queue.',
    skills: skillList(CI_SKILLS),
    declare: declare(CI_SKILLS),
    behaviour: behaviour(),
  });
}
