/**
 * A gateway in its own process, for crash tests: `node --import tsx gateway-process.ts <agentUrl>
 * <sqliteFile> <scenario>`. It prints one JSON line when it reached the point where the test kills
 * it (SIGKILL), and then waits.
 * - `tracked`: started a task with return-immediately and tracked it (polls an hour later).
 * - `committed`: a blocking call whose terminal reply was claimed, its events in the outbox, the
 *   outbox relay never started.
 */
import { assembleGateway } from '../../src/service/internal.js';

const [agentUrl, file, scenario] = process.argv.slice(2);
if (agentUrl === undefined || file === undefined || scenario === undefined) {
  process.stderr.write('usage: gateway-process.ts <agentUrl> <sqliteFile> tracked|committed\n');
  process.exit(64);
}
// The outbox relay never starts: the process dies with its events in the outbox.
const { gateway: gateway, parts } = await assembleGateway(
  { store: `sqlite:${file}`, agents: [{ name: 'ops', url: agentUrl }] },
  { relay: false, tracking: { polling: { intervalMs: 3_600_000 } } },
);

if (scenario === 'tracked') {
  const result = await gateway.call('ops', 'pr_review', 'go', { mode: 'return-immediately' });
  const taskId = result.task!.id;
  await parts.tracker.follow({
    agent: 'ops',
    skill: 'pr_review',
    correlationId: result.correlationId,
    taskId,
    state: result.state === 'message' ? 'unknown' : result.state,
  });
  process.stdout.write(`${JSON.stringify({ taskId })}\n`);
} else {
  const result = await gateway.call('ops', 'pr_review', 'go');
  process.stdout.write(
    `${JSON.stringify({ taskId: result.task!.id, terminal: result.terminal })}\n`,
  );
}
setInterval(() => undefined, 60_000);
