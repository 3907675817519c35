/**
 * End to end: a real `@a2a-js/sdk` agent (the example ops agent) returns worldstate-delta and
 * cost-v1 parts; the fleet client with the standard extensions publishes `world.state.delta` and
 * `cost.sample`; the materialiser (SQLite file, transactional outbox, relay) applies the deltas,
 * and the reconciliation, action-quality monitor and cost summaries read the same bus.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { OPS_DELTAS, startOpsAgent } from '../examples/agents/index.js';
import type { DeclarationLookup } from '../src/alerts/index.js';
import {
  createActionQualityMonitor,
  createCostSummaries,
  createReconciler,
  createStoreFloorWriter,
  listLearnedFloors,
} from '../src/alerts/index.js';
import type {
  EventEnvelope,
  InMemoryEventBus,
  OpsAlertEvent,
  OutboxRelay,
} from '../src/bus/index.js';
import { createInMemoryEventBus, createOutboxRelay } from '../src/bus/index.js';
import type { FleetAgent, FleetClient } from '../src/dispatch/index.js';
import { createFleetClient } from '../src/dispatch/index.js';
import { ExtensionRegistry, registerStandardExtensions } from '../src/extensions/index.js';
import type { CardBroker } from '../src/fleet/index.js';
import type { BlastRadius, Declarations } from '../src/protocol/index.js';
import { maxRadius, readDeclarations } from '../src/protocol/index.js';
import type { Store } from '../src/store/index.js';
import { openStore } from '../src/store/index.js';
import type { WorldMaterialiser } from '../src/world/index.js';
import { createSqlWorldStore, createWorldMaterialiser } from '../src/world/index.js';

/** Compile-time check: the fleet's card broker implements the alerts' `DeclarationLookup` port. */
const CARD_BROKER_IS_A_DECLARATION_LOOKUP: CardBroker extends DeclarationLookup ? true : never =
  true;
void CARD_BROKER_IS_A_DECLARATION_LOOKUP;

/** Declarations read from the agents' real cards, plus learned floors (the fleet directory's job). */
class CardDeclarations implements DeclarationLookup {
  readonly floors = new Map<string, BlastRadius>();
  constructor(private readonly cards: ReadonlyMap<string, Declarations>) {}
  effectiveRadius(agent: string, skill: string) {
    const declared = this.cards.get(agent)?.blast[skill]?.radius;
    return { radius: maxRadius(declared, this.floors.get(`${agent}/${skill}`)), stale: false };
  }
  declaredDomains(agent: string, skill: string) {
    return this.cards.get(agent)?.effectDomain[skill]?.domains;
  }
}

describe('world state end to end with a real SDK agent', () => {
  let dir: string;
  let agent: RunningAgent;
  let store: Store;
  let bus: InMemoryEventBus;
  let relay: OutboxRelay;
  let fleet: FleetClient;
  let world: WorldMaterialiser;
  let declarations: CardDeclarations;
  const costs = createCostSummaries();
  const alerts: EventEnvelope<string, OpsAlertEvent>[] = [];
  const updated: EventEnvelope[] = [];

  async function settle(): Promise<void> {
    await bus.idle();
    await relay.drain();
    await bus.idle();
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-world-e2e-'));
    agent = await startOpsAgent();
    store = await openStore(`sqlite:${join(dir, 'fleetgate.db')}`);
    bus = createInMemoryEventBus();
    relay = createOutboxRelay({ db: store.db, bus, pollIntervalMs: 50 });
    await bus.subscribe('ops.alert.>', (e) => void alerts.push(e), { name: 'alerts' });
    await bus.subscribe('world.state.updated', (e) => void updated.push(e), { name: 'updated' });

    const card = await agent.fetchCard();
    declarations = new CardDeclarations(new Map([['ops', readDeclarations(card)]]));
    world = createWorldMaterialiser({
      store: createSqlWorldStore({
        db: store.db,
        kind: store.kind,
        onCommitted: () => relay.notify(),
      }),
      bus,
      seeds: { ci: { data: { blockedPRs: 5 } }, board: { data: { untriaged: 12 } } },
    });
    await world.start();
    await createReconciler({
      bus,
      declarations,
      domains: { github_issues: { minRadius: 'public' } },
      learnFloors: true,
      floorWriter: createStoreFloorWriter({
        db: store.db,
        kind: store.kind,
        onRaised: (floor) => declarations.floors.set(`${floor.agent}/${floor.skill}`, floor.radius),
      }),
    }).start();
    await createActionQualityMonitor({ bus, declarations }).start();
    await costs.start(bus);
    relay.start();

    const registry = new ExtensionRegistry();
    registerStandardExtensions(registry, { bus });
    const cards = new Map<string, FleetAgent>([['ops', { url: agent.url, card }]]);
    fleet = createFleetClient({ registry, bus, cards });
  });

  afterAll(async () => {
    await relay?.stop();
    await world?.stop();
    await bus?.close();
    await store?.close();
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows the new values and an audit log naming the agent, skill and task', async () => {
    const result = await fleet.call('ops', 'pr_review', 'review #42');
    expect(result.ok).toBe(true);
    const taskId = result.task!.id;
    await settle();

    expect(await world.getDomain('ci')).toMatchObject({
      version: 1,
      state: { data: { blockedPRs: 4 } },
    });
    expect(await world.getDomain('board')).toMatchObject({
      version: 1,
      state: { data: { untriaged: 11 } },
    });
    const history = await world.history('ci');
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({
      agent: 'ops',
      skill: 'pr_review',
      taskId,
      path: 'data.blockedPRs',
      op: 'inc',
      value: OPS_DELTAS.pr_review![0]!.value,
      previous: 5,
      next: 4,
      status: 'applied',
      version: 1,
    });
    expect(updated.map((e) => e.payload)).toEqual(
      expect.arrayContaining([
        { domain: 'ci', version: 1, paths: ['data.blockedPRs'] },
        { domain: 'board', version: 1, paths: ['data.untriaged'] },
      ]),
    );
    // pr_review declared ci and board with radius repo: nothing to reconcile.
    expect(alerts).toEqual([]);
    expect(costs.summary('ops', 'pr_review')).toMatchObject({
      samples: 1,
      successRate: 1,
      tokensIn: 120,
      tokensOut: 40,
      measuredByAgent: 1,
    });
    expect((await world.replay('ci'))?.state).toEqual((await world.getDomain('ci'))?.state);
  });

  it('raises a blast violation for a self skill that reported a delta, and learns its floor', async () => {
    const result = await fleet.call('ops', 'sitrep', 'status');
    await settle();
    expect(await world.getDomain('board')).toMatchObject({
      version: 2,
      state: { data: { untriaged: 11, lastSitrep: 'green' } },
    });
    const violation = alerts.find((a) => a.payload.kind === 'blast_violation');
    expect(violation?.payload).toMatchObject({
      agent: 'ops',
      skill: 'sitrep',
      radius: 'project',
      severity: 'error',
      evidence: { taskId: result.task!.id, effectiveRadius: 'self', floorRaised: 'project' },
    });
    expect(await listLearnedFloors(store.db)).toEqual([
      expect.objectContaining({ agent: 'ops', skill: 'sitrep', radius: 'project' }),
    ]);
    expect(declarations.effectiveRadius('ops', 'sitrep').radius).toBe('project');
  });

  it('raises a violation by domain minRadius with severity scaled by the observed radius', async () => {
    await fleet.call('ops', 'bulk_migration', 'migrate');
    await settle();
    expect((await world.getDomain('github_issues'))?.state).toEqual({
      data: { migrated: ['repo-a'] },
    });
    // bulk_migration declared fleet, but a delta in github_issues implies public.
    const violations = alerts.filter((a) => a.payload.skill === 'bulk_migration');
    expect(violations.map((a) => a.payload)).toEqual([
      expect.objectContaining({
        kind: 'blast_violation',
        radius: 'public',
        severity: 'critical',
        evidence: expect.objectContaining({
          effectiveRadius: 'fleet',
          observedRadius: 'public',
          domainMinRadius: { github_issues: 'public' },
          floorRaised: 'public',
        }) as unknown,
      }),
    ]);
  });

  it('raises action_quality when the agent reports a failed task', async () => {
    const failing = await startOpsAgent({ behaviour: () => ({ state: 'failed', artifacts: [] }) });
    try {
      const card = await failing.fetchCard();
      const registry = new ExtensionRegistry();
      registerStandardExtensions(registry, { bus });
      const client = createFleetClient({
        registry,
        bus,
        cards: new Map<string, FleetAgent>([['ops', { url: failing.url, card }]]),
      });
      const result = await client.call('ops', 'pr_review', 'review #43').catch((e: unknown) => e);
      expect(result).toBeDefined();
      await settle();
      const quality = alerts.filter((a) => a.payload.kind === 'action_quality');
      expect(quality).toHaveLength(1);
      expect(quality[0]!.payload).toMatchObject({
        agent: 'ops',
        skill: 'pr_review',
        radius: 'repo',
        severity: 'warning',
      });
    } finally {
      await failing.close();
    }
  });
});
