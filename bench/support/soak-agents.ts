/**
 * The soak benchmark's fleet, in a process of its own (so its task stores never count in the
 * gateway's memory): the four demo agents, each answering as the demo does, plus — for the three
 * that declare effect-domain-v1 — one `inc` into the `soak` domain per task. Every such task id is
 * appended to the file named by `FLEETGATE_SOAK_IDS` before the agent answers: the truth the
 * benchmark checks the world state against. Prints `{"ops": url, …}` and lives until stdin closes.
 */
import { appendFileSync } from 'node:fs';
import type { AgentBehaviour } from '../../examples/agents/harness.js';
import {
  legacyBehaviour,
  opsBehaviour,
  startLegacyAgent,
  startOpsAgent,
  startPlainAgent,
  startStreamingAgent,
  streamingBehaviour,
} from '../../examples/agents/index.js';
import { createWorldStateDeltaPart } from '../../src/protocol/index.js';

/** The domain every delta-reporting soak task increments once. */
export const SOAK_DOMAIN = 'soak';

const idsFile = process.env.FLEETGATE_SOAK_IDS;
if (idsFile === undefined) throw new Error('FLEETGATE_SOAK_IDS must name the task-id file');

function reporting(base: AgentBehaviour): AgentBehaviour {
  return async (call) => {
    const plan = await base(call);
    appendFileSync(idsFile!, `${call.taskId}\n`);
    return {
      ...plan,
      artifacts: [
        ...(plan.artifacts ?? []),
        [
          createWorldStateDeltaPart([
            { domain: SOAK_DOMAIN, path: 'data.count', op: 'inc', value: 1 },
          ]),
        ],
      ],
    };
  };
}

const agents = await Promise.all([
  startOpsAgent({ behaviour: reporting(opsBehaviour) }),
  startStreamingAgent({ behaviour: reporting(streamingBehaviour(5)) }),
  startLegacyAgent({ behaviour: reporting(legacyBehaviour) }),
  startPlainAgent(),
]);
process.stdout.write(`${JSON.stringify(Object.fromEntries(agents.map((a) => [a.name, a.url])))}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void Promise.all(agents.map((a) => a.close())).then(() => process.exit(0));
});
