/**
 * The fault campaign's fleet: a gateway built by `createGateway`, a real SDK agent (the example
 * ops agent) whose every task reports one `inc` delta into the `fault` domain, and a load driver
 * dispatching without pause. What the agent executed is the truth: after a fault, each of those
 * tasks must have exactly one applied delta in the world state — none lost, none doubled.
 */
import { sql } from 'kysely';
import { startOpsAgent } from '../../examples/agents/ops-agent.js';
import type { RunningAgent } from '../../examples/agents/harness.js';
import { textPart } from '../../examples/agents/harness.js';
import type { EventBus } from '../../src/bus/index.js';
import { createWorldStateDeltaPart, isFleetgateError } from '../../src/protocol/index.js';
import type { Gateway, GatewayDeps, GatewayStore } from '../../src/service/index.js';
import { assembleGateway } from '../../src/service/internal.js';

/** The domain every task of the fault fleet reports into. */
export const FAULT_DOMAIN = 'fault';

export interface FaultFleetOptions {
  /** The store URL the gateway opens, or a store it is lent. */
  store: string | GatewayStore;
  /** `memory`, a NATS URL the gateway connects to, or a bus it is lent. */
  bus: string | EventBus;
  /** Dispatches in flight (default 4). */
  concurrency?: number;
  /** How long the agent works on each task, in ms (default 20). */
  taskMs?: number;
}

/** What the load driver saw. */
export interface DriveStats {
  ok: number;
  failed: number;
  /** Failed dispatches by error code. */
  codes: Record<string, number>;
}

/** Applied delta counts against what the agent executed. */
export interface Tally {
  /** Tasks the agent executed. */
  executed: number;
  /** Tasks the agent executed with no applied delta. */
  lost: number;
  /** Applied deltas beyond one per task. */
  doubled: number;
  /** The domain's counter (the sum of every applied `inc`). */
  count: number;
}

export interface FaultFleet {
  readonly gateway: Gateway;
  readonly agent: RunningAgent;
  /** What the gateway reported on `system.error` (its `onError`), by code. */
  readonly reported: Record<string, number>;
  /** Starts dispatching with `concurrency` workers; `stop()` waits for them. */
  drive(): { stop(): Promise<DriveStats> };
  /** Counts applied deltas per task (a store that is down throws). */
  tally(): Promise<Tally>;
  /**
   * Waits until every task the agent executed has its delta applied and nothing waits (claims,
   * outbox rows); resolves the last tally, also when `timeoutMs` passed first.
   */
  converge(timeoutMs: number): Promise<Tally>;
  close(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Starts the agent and the gateway. */
export async function startFaultFleet(options: FaultFleetOptions): Promise<FaultFleet> {
  const executed = new Set<string>();
  const taskMs = options.taskMs ?? 20;
  const agent = await startOpsAgent({
    behaviour: (call) => {
      executed.add(call.taskId);
      return {
        delayMs: taskMs,
        artifacts: [
          [
            textPart('done'),
            createWorldStateDeltaPart([
              { domain: FAULT_DOMAIN, path: 'data.count', op: 'inc', value: 1 },
            ]),
          ],
        ],
      };
    },
  });
  const reported: Record<string, number> = {};
  const deps: GatewayDeps = {};
  if (typeof options.store !== 'string') deps.store = options.store;
  if (typeof options.bus !== 'string') deps.bus = options.bus;
  const { gateway: gateway, parts } = await assembleGateway(
    {
      ...(typeof options.store === 'string' ? { store: options.store } : {}),
      ...(typeof options.bus === 'string' ? { bus: options.bus } : {}),
      agents: [{ name: 'ops', url: agent.url }],
      // Short timeouts: a dead database is noticed in a second, not in half a minute.
      storeTimeouts: { connect: '1s', statement: '10s', query: '15s' },
    },
    {
      ...deps,
      relay: { pollIntervalMs: 100 },
      onError: (error) => {
        const code = isFleetgateError(error) ? error.code : 'uncoded';
        reported[code] = (reported[code] ?? 0) + 1;
      },
    },
  );
  const db = parts.store.db;

  async function tally(): Promise<Tally> {
    const rows = await sql<{ task_id: string; n: number | string }>`
      select task_id, count(*) as n from fleetgate_world_audit
      where domain = ${FAULT_DOMAIN} and status = 'applied' group by task_id`.execute(db);
    const applied = new Map(rows.rows.map((r) => [r.task_id, Number(r.n)]));
    let lost = 0;
    let doubled = 0;
    for (const id of executed) if ((applied.get(id) ?? 0) === 0) lost += 1;
    for (const n of applied.values()) if (n > 1) doubled += n - 1;
    const domain = await gateway.world.getDomain(FAULT_DOMAIN);
    const data = (domain?.state as { data?: { count?: number } } | undefined)?.data;
    return { executed: executed.size, lost, doubled, count: data?.count ?? 0 };
  }

  return {
    gateway,
    agent,
    reported,
    drive() {
      const stats: DriveStats = { ok: 0, failed: 0, codes: {} };
      let running = true;
      const worker = async (): Promise<void> => {
        while (running) {
          try {
            await gateway.dispatch({ agent: 'ops', skill: 'sitrep', text: 'go' }).answered();
            stats.ok += 1;
          } catch (error) {
            stats.failed += 1;
            const code = isFleetgateError(error) ? error.code : 'uncoded';
            stats.codes[code] = (stats.codes[code] ?? 0) + 1;
            await sleep(25);
          }
        }
      };
      const workers = Array.from({ length: options.concurrency ?? 4 }, worker);
      return {
        async stop() {
          running = false;
          await Promise.all(workers);
          return stats;
        },
      };
    },
    tally,
    async converge(timeoutMs) {
      // Gives up only after `timeoutMs` without progress: a long outage leaves a backlog (every
      // dispatch made meanwhile is in the outbox) that takes its own time to drain.
      let deadline = Date.now() + timeoutMs;
      let last: Tally = { executed: executed.size, lost: executed.size, doubled: 0, count: 0 };
      let backlog = Number.POSITIVE_INFINITY;
      for (;;) {
        try {
          await gateway.settle();
          last = await tally();
          const unsent = await db
            .selectFrom('fleetgate_outbox')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('sent_at', 'is', null)
            .executeTakeFirstOrThrow();
          const waiting = parts.fleet.terminal.retrying();
          if (last.lost === 0 && Number(unsent.n) === 0 && waiting === 0) return last;
          const left = Number(unsent.n) + last.lost;
          if (left < backlog) {
            backlog = left;
            deadline = Date.now() + timeoutMs;
          }
        } catch {
          // The store or the bus is still coming back.
        }
        if (Date.now() > deadline) return last;
        await sleep(200);
      }
    },
    async close() {
      await gateway.close();
      await agent.close();
    },
  };
}

/** Outages of the campaign, in seconds: `FLEETGATE_FAULT_OUTAGES` (e.g. `300`) or 1 and 30. */
/**
 * One outage under load: traffic runs, `server` is killed for `seconds` and started again, the
 * traffic stops, and the world state converges (given up after 90 s without progress).
 */
export async function runOutage(
  fleet: FaultFleet,
  server: { kill(): Promise<void>; start(): Promise<void> },
  seconds: number,
): Promise<{ stats: DriveStats; tally: Tally }> {
  const load = fleet.drive();
  await sleep(1_500);
  await server.kill();
  await sleep(seconds * 1_000);
  await server.start();
  await sleep(2_000);
  const stats = await load.stop();
  return { stats, tally: await fleet.converge(90_000) };
}

export function outagesSeconds(): number[] {
  const raw = process.env.FLEETGATE_FAULT_OUTAGES ?? '1,30';
  return raw
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isFinite(n) && n > 0);
}
