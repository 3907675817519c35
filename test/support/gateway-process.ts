/**
 * A gateway in its own process, for crash tests: `node --import tsx gateway-process.ts <agentUrl>
 * <sqliteFile> <scenario>`. It prints one JSON line when it reached the point where the test kills
 * it (SIGKILL), and then waits.
 * - `tracked`: started a task with return-immediately and tracked it (polls an hour later).
 * - `committed`: a blocking call whose terminal reply was claimed, its events in the outbox, the
 *   outbox relay never started.
 */
import { createInMemoryEventBus, createOutboxRelay, EventCollector } from '../../src/bus/index.js';
import { createFleetClient, createTaskTerminal } from '../../src/dispatch/index.js';
import { ExtensionRegistry, registerStandardExtensions } from '../../src/extensions/index.js';
import { openGatewayStore } from '../../src/service/index.js';
import { createStoreTaskRecords, TaskTracker } from '../../src/tasks/index.js';

const [agentUrl, file, scenario] = process.argv.slice(2);
if (agentUrl === undefined || file === undefined || scenario === undefined) {
  process.stderr.write('usage: gateway-process.ts <agentUrl> <sqliteFile> tracked|committed\n');
  process.exit(64);
}
const card: unknown = await (
  await fetch(`${agentUrl}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
).json();
const store = await openGatewayStore(`sqlite:${file}`);
const bus = createInMemoryEventBus();
const records = createStoreTaskRecords(store.db);
const relay = createOutboxRelay({ db: store.db, bus });
const collector = new EventCollector(bus);
const registry = registerStandardExtensions(new ExtensionRegistry(), { bus: collector });
const fleet = createFleetClient({
  registry,
  bus: collector,
  cards: new Map([['ops', { url: agentUrl, card }]]),
  terminal: createTaskTerminal({ durable: { records, collector } }),
});
const tracker = new TaskTracker({ records, fleet, polling: { intervalMs: 3_600_000 } });

if (scenario === 'tracked') {
  const result = await fleet.call('ops', 'pr_review', 'go', { mode: 'return-immediately' });
  const taskId = result.task!.id;
  await tracker.follow({
    agent: 'ops',
    skill: 'pr_review',
    correlationId: result.correlationId,
    taskId,
    state: result.state === 'message' ? 'unknown' : result.state,
  });
  process.stdout.write(`${JSON.stringify({ taskId })}\n`);
} else {
  const result = await fleet.call('ops', 'pr_review', 'go');
  process.stdout.write(
    `${JSON.stringify({ taskId: result.task!.id, terminal: result.terminal })}\n`,
  );
}
void relay; // deliberately never started: the process dies with its events in the outbox
setInterval(() => undefined, 60_000);
