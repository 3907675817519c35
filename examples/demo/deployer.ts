/**
 * "deployer": the demo's deployer. `production_deploy` (public, gated) ships a version — a human
 * approves it first; `rollback` (fleet, veto with a window) goes back one version unless vetoed.
 * Both report the `deploy` domain.
 */
import { createWorldStateDeltaPart } from '../../src/protocol/index.js';
import { startAgent, textPart, type AgentBehaviour, type RunningAgent } from '../agents/harness.js';
import { declare, skillList, type DemoSkill } from './declare.js';

/** The veto window of `rollback`. */
export const ROLLBACK_VETO_MS = 30_000;

export const DEPLOYER_SKILLS: Readonly<Record<string, DemoSkill>> = {
  production_deploy: {
    radius: 'public',
    mode: 'gated',
    domains: ['deploy'],
    description: 'Deploys a version to production.',
  },
  rollback: {
    radius: 'fleet',
    mode: 'veto',
    vetoTtlMs: ROLLBACK_VETO_MS,
    domains: ['deploy'],
    description: 'Rolls production back one version.',
  },
};

const behaviour: AgentBehaviour = (call) => {
  if (call.skill === 'rollback') {
    return {
      delayMs: 500,
      artifacts: [
        [
          textPart('Rolled back one version.'),
          createWorldStateDeltaPart([
            { domain: 'deploy', path: 'data.rollbacks', op: 'inc', value: 1 },
          ]),
        ],
      ],
    };
  }
  const version = /\d+\.\d+\.\d+/.exec(call.text)?.[0] ?? '1.5.0';
  return {
    delayMs: 1000,
    artifacts: [
      [
        textPart(`Deployed ${version} to production.`),
        createWorldStateDeltaPart([
          { domain: 'deploy', path: 'data.version', op: 'set', value: version },
          { domain: 'deploy', path: 'data.deploys', op: 'inc', value: 1 },
        ]),
      ],
    ],
  };
};

/** Starts the deployer on a free loopback port. */
export function startDeployer(): Promise<RunningAgent> {
  return startAgent({
    name: 'deployer',
    description: 'Deployer: ships and rolls back production.',
    skills: skillList(DEPLOYER_SKILLS),
    declare: declare(DEPLOYER_SKILLS),
    behaviour,
  });
}
