/**
 * "board": the demo's board bot. `triage` (project) takes a few seconds and reports to the
 * gateway by push notification; it moves issues in the `board` domain. `plan_sprint` (project)
 * asks which milestone to plan for (`input-required`) and finishes once answered.
 */
import { createWorldStateDeltaPart } from '../../src/protocol/index.js';
import { startAgent, textPart, type AgentBehaviour, type RunningAgent } from '../agents/harness.js';
import { declare, skillList, type DemoSkill } from './declare.js';
import { DEMO_SEEDS } from './seeds.js';

export const BOARD_SKILLS: Readonly<Record<string, DemoSkill>> = {
  triage: {
    radius: 'project',
    mode: 'autonomous',
    domains: ['board'],
    description: 'Triages new issues on the project board (takes a few seconds).',
  },
  plan_sprint: {
    radius: 'project',
    mode: 'autonomous',
    domains: ['board'],
    description: 'Plans the next sprint; asks which milestone first.',
  },
};

/** How long a triage takes, in milliseconds. */
const TRIAGE_MS = 3000;

function behaviour(): AgentBehaviour {
  const asked = new Set<string>();
  /** Issues waiting for triage, as this bot sees the board. */
  let untriaged: number = DEMO_SEEDS.board.data.untriaged;
  return (call) => {
    if (call.skill === 'plan_sprint') {
      if (!asked.has(call.taskId)) {
        asked.add(call.taskId);
        return { state: 'input-required', statusText: 'Which milestone should the sprint target?' };
      }
      asked.delete(call.taskId);
      return {
        artifacts: [
          [
            textPart(`Sprint planned for ${call.text}.`),
            createWorldStateDeltaPart([
              { domain: 'board', path: 'data.sprint', op: 'set', value: call.text },
              { domain: 'board', path: 'data.inProgress', op: 'inc', value: 3 },
            ]),
          ],
        ],
      };
    }
    // Never more than are waiting; an empty inbox fills up again (new issues were filed).
    if (untriaged === 0) untriaged = 3 + Math.floor(Math.random() * 6);
    const moved = Math.min(untriaged, 1 + Math.floor(Math.random() * 3));
    untriaged -= moved;
    return {
      delayMs: TRIAGE_MS,
      artifacts: [
        [
          textPart(`Triaged ${moved} issue(s); ${untriaged} left.`),
          createWorldStateDeltaPart([
            { domain: 'board', path: 'data.untriaged', op: 'set', value: untriaged },
            { domain: 'board', path: 'data.triaged', op: 'inc', value: moved },
          ]),
        ],
      ],
    };
  };
}

/** Starts the board bot (push notifications on) on a free loopback port. */
export function startBoardBot(): Promise<RunningAgent> {
  return startAgent({
    name: 'board',
    description: 'Board bot: triages issues and plans sprints.',
    pushNotifications: true,
    skills: skillList(BOARD_SKILLS),
    declare: declare(BOARD_SKILLS),
    behaviour: behaviour(),
  });
}
