import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InMemoryEventBus } from '../bus/index.js';
import type { EventEnvelope, OpsAlertEvent } from '../protocol/index.js';
import { createInMemoryEventBus } from '../bus/index.js';
import type { WorldStateDeltaEntry } from '../protocol/index.js';
import { FakeDeclarations, FakeFloorWriter } from '../../test/world-alert-fakes.js';
import { createReconciler } from './reconciler.js';
import type { ReconcilerOptions } from './reconciler.js';

function delta(domain: string, path = 'data.x'): WorldStateDeltaEntry {
  return { domain, path, op: 'inc', value: 1 };
}

describe('reconciliation', () => {
  let bus: InMemoryEventBus;
  let alerts: EventEnvelope<string, OpsAlertEvent>[];
  let n = 0;

  async function publishDeltas(
    source: string,
    skill: string,
    deltas: WorldStateDeltaEntry[],
    id?: string,
  ) {
    n += 1;
    await bus.publish(
      'world.state.delta',
      { source, skill, deltas, taskId: `task-${n}`, correlationId: `corr-${n}` },
      { id: id ?? `delta-${n}`, correlationId: `corr-${n}` },
    );
    await bus.idle();
  }

  async function start(options: Omit<ReconcilerOptions, 'bus'>) {
    const reconciler = createReconciler({ bus, ...options });
    await reconciler.start();
    return reconciler;
  }

  beforeEach(async () => {
    bus = createInMemoryEventBus();
    alerts = [];
    await bus.subscribe('ops.alert.>', (e) => void alerts.push(e), { name: 'alerts' });
  });

  afterEach(() => bus.close());

  it('raises undeclared_effect for a domain the skill did not declare', async () => {
    const declarations = new FakeDeclarations({
      'quinn/pr_review': { radius: 'repo', domains: ['ci'] },
    });
    await start({ declarations });
    await publishDeltas('quinn', 'pr_review', [
      delta('ci'),
      delta('board'),
      delta('board', 'data.y'),
    ]);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.topic).toBe('ops.alert.undeclared_effect');
    expect(alerts[0]!.correlationId).toBe(`corr-${n}`);
    expect(alerts[0]!.payload).toMatchObject({
      kind: 'undeclared_effect',
      severity: 'warning',
      agent: 'quinn',
      skill: 'pr_review',
      radius: 'repo',
      evidence: {
        eventId: `delta-${n}`,
        taskId: `task-${n}`,
        undeclaredDomains: ['board'],
        declaredDomains: ['ci'],
      },
    });
    // What happened and where (the task), and what to do about it.
    expect(alerts[0]!.payload.message).toBe(
      `quinn/pr_review changed board in task task-${n}, outside its declared domains (ci); ` +
        'the change was applied: review it (fleetgate world board --history), then declare the ' +
        'domain for the skill or have the agent stop changing it',
    );
  });

  it('treats a skill without any declared domains as undeclared for every domain', async () => {
    const declarations = new FakeDeclarations({ 'quinn/pr_review': { radius: 'repo' } });
    await start({ declarations });
    await publishDeltas('quinn', 'pr_review', [delta('ci')]);
    expect(alerts.map((a) => a.payload.evidence)).toEqual([
      expect.objectContaining({ undeclaredDomains: ['ci'], declaredDomains: null }),
    ]);
  });

  it('raises nothing when the deltas stay inside what was declared', async () => {
    const declarations = new FakeDeclarations({
      'quinn/pr_review': { radius: 'repo', domains: ['ci', 'deploy'] },
    });
    await start({ declarations, domains: { deploy: { minRadius: 'repo' } } });
    await publishDeltas('quinn', 'pr_review', [delta('ci'), delta('deploy')]);
    expect(alerts).toEqual([]);
  });

  it('raises blast_violation when a domain minRadius is wider than the effective radius', async () => {
    const declarations = new FakeDeclarations({
      'quinn/pr_review': { radius: 'repo', domains: ['ci', 'deploy'] },
    });
    await start({
      declarations,
      domains: { deploy: { minRadius: 'public' }, ci: { minRadius: 'project' } },
    });
    await publishDeltas('quinn', 'pr_review', [delta('ci'), delta('deploy')]);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.topic).toBe('ops.alert.blast_violation');
    expect(alerts[0]!.payload).toMatchObject({
      kind: 'blast_violation',
      severity: 'critical',
      radius: 'public',
      evidence: {
        effectiveRadius: 'repo',
        observedRadius: 'public',
        domainMinRadius: { ci: 'project', deploy: 'public' },
      },
    });
    expect(alerts[0]!.payload.message).toMatch(
      /effective radius repo but reached public: deploy has minRadius public/,
    );
    expect(alerts[0]!.payload.evidence).not.toHaveProperty('floorRaised');
  });

  it('treats any delta from a self skill as a violation', async () => {
    const declarations = new FakeDeclarations({
      'ava/sitrep': { radius: 'self', domains: ['board'] },
    });
    await start({ declarations });
    await publishDeltas('ava', 'sitrep', [delta('board')]);
    expect(alerts.map((a) => a.topic)).toEqual(['ops.alert.blast_violation']);
    expect(alerts[0]!.payload).toMatchObject({
      radius: 'project',
      severity: 'error',
      evidence: { effectiveRadius: 'self', observedRadius: 'project' },
    });
    expect(alerts[0]!.payload.message).toMatch(/a self skill must not change shared world state/);
  });

  it('with learnFloors raises the floor to the observed radius, says so, and the next call is not a violation', async () => {
    const declarations = new FakeDeclarations({
      'quinn/pr_review': { radius: 'repo', domains: ['deploy'] },
    });
    const floorWriter = new FakeFloorWriter(declarations);
    await start({
      declarations,
      domains: { deploy: { minRadius: 'fleet' } },
      learnFloors: true,
      floorWriter,
    });
    await publishDeltas('quinn', 'pr_review', [delta('deploy')]);
    expect(floorWriter.calls).toEqual([
      expect.objectContaining({ agent: 'quinn', skill: 'pr_review', radius: 'fleet' }),
    ]);
    expect(floorWriter.calls[0]!.reason).toMatch(/blast violation in task task-\d+/);
    expect(alerts[0]!.payload.message).toMatch(/operator floor raised to fleet/);
    expect(alerts[0]!.payload.evidence).toMatchObject({ floorRaised: 'fleet' });
    expect(declarations.blast('quinn', 'pr_review').radius).toBe('fleet');
    await publishDeltas('quinn', 'pr_review', [delta('deploy')]);
    expect(alerts).toHaveLength(1);
  });

  it('publishes the alert and reports a failed floor write on system.error', async () => {
    const errors: unknown[] = [];
    await bus.subscribe('system.error', (e) => void errors.push(e.payload), { name: 'errors' });
    const declarations = new FakeDeclarations({
      'ava/sitrep': { radius: 'self', domains: ['board'] },
    });
    const floorWriter = new FakeFloorWriter(declarations);
    floorWriter.failWith = new Error('disk full');
    await start({ declarations, learnFloors: true, floorWriter });
    await publishDeltas('ava', 'sitrep', [delta('board')]);
    await bus.idle();
    expect(alerts[0]!.payload.message).toMatch(
      /raising the operator floor to project failed: disk full/,
    );
    expect(errors).toEqual([
      expect.objectContaining({
        message: expect.stringContaining('FLEETGATE_FLOOR_WRITE_FAILED') as unknown,
      }),
    ]);
  });

  it('needs a floorWriter for learnFloors', () => {
    expect(() =>
      createReconciler({ bus, declarations: new FakeDeclarations({}), learnFloors: true }),
    ).toThrow(/floorWriter/);
  });

  it('scales unknown and stale radii as public and never checks them for violations', async () => {
    const declarations = new FakeDeclarations({
      'old/deploy': { radius: 'self', domains: ['ci'], stale: true },
    });
    await start({ declarations });
    await publishDeltas('new', 'anything', [delta('ci')]);
    await publishDeltas('old', 'deploy', [delta('board')]);
    const kinds = alerts.map((a) => [
      a.payload.agent,
      a.payload.kind,
      a.payload.radius,
      a.payload.severity,
    ]);
    expect(kinds).toEqual([
      ['new', 'undeclared_effect', 'unknown', 'critical'],
      ['old', 'undeclared_effect', 'unknown', 'critical'],
      ['old', 'blast_violation', 'unknown', 'critical'],
    ]);
    expect(alerts[2]!.payload.evidence).toMatchObject({ stale: true });
  });

  it('scales the severity of each alert by radius', async () => {
    const radii = ['self', 'project', 'repo', 'fleet', 'public'] as const;
    const declarations = new FakeDeclarations(
      Object.fromEntries(radii.map((r) => [`a/${r}`, { radius: r, domains: [] }])),
    );
    await start({ declarations });
    for (const r of radii) await publishDeltas('a', r, [delta(`d${r}`)]);
    const undeclared = alerts.filter((a) => a.payload.kind === 'undeclared_effect');
    // undeclared_effect has base warning; a self skill also violates (its delta reached project).
    expect(undeclared.map((a) => [a.payload.radius, a.payload.severity])).toEqual([
      ['self', 'info'],
      ['project', 'warning'],
      ['repo', 'warning'],
      ['fleet', 'error'],
      ['public', 'critical'],
    ]);
  });

  it('never duplicates an alert when the same delta event is processed twice', async () => {
    const declarations = new FakeDeclarations({
      'quinn/pr_review': { radius: 'repo', domains: [] },
    });
    const reconciler = await start({ declarations });
    await publishDeltas('quinn', 'pr_review', [delta('ci')], 'same-id');
    const event = {
      id: 'same-id',
      payload: { source: 'quinn', skill: 'pr_review', taskId: 'x', deltas: [delta('ci')] },
    };
    // A second replica (or a redelivery) reconciles the same event again.
    const again = await reconciler.reconcile(event);
    await bus.idle();
    expect(again).toHaveLength(1);
    expect(alerts).toHaveLength(1);
  });
});
