import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InMemoryEventBus } from '../bus/index.js';
import type { EventEnvelope, OpsAlertEvent } from '../protocol/index.js';
import { createInMemoryEventBus } from '../bus/index.js';
import { FakeDeclarations } from '../../test/world-alert-fakes.js';
import { createActionQualityMonitor } from './action-quality.js';

describe('action quality alerts', () => {
  let bus: InMemoryEventBus;
  let alerts: EventEnvelope<string, OpsAlertEvent>[];
  const declarations = new FakeDeclarations({
    'ava/sitrep': { radius: 'self' },
    'quinn/pr_review': { radius: 'repo' },
    'ops/deploy': { radius: 'public' },
  });

  beforeEach(async () => {
    bus = createInMemoryEventBus();
    alerts = [];
    await bus.subscribe('ops.alert.>', (e) => void alerts.push(e), { name: 'alerts' });
    await createActionQualityMonitor({ bus, declarations }).start();
  });

  afterEach(() => bus.close());

  it('raises action_quality when a cost sample says success: false, scaled by radius', async () => {
    for (const agentSkill of ['ava/sitrep', 'quinn/pr_review', 'ops/deploy', 'x/unknown']) {
      const [agent, skill] = agentSkill.split('/') as [string, string];
      await bus.publish('cost.sample', {
        agent,
        skill,
        wallMs: 10,
        success: false,
        measured: 'agent',
      });
    }
    await bus.publish('cost.sample', {
      agent: 'ops',
      skill: 'deploy',
      wallMs: 10,
      success: true,
      measured: 'agent',
    });
    await bus.idle();
    expect(
      alerts.map((a) => [a.topic, a.payload.agent, a.payload.radius, a.payload.severity]),
    ).toEqual([
      ['ops.alert.action_quality', 'ava', 'self', 'info'],
      ['ops.alert.action_quality', 'quinn', 'repo', 'warning'],
      ['ops.alert.action_quality', 'ops', 'public', 'critical'],
      ['ops.alert.action_quality', 'x', 'unknown', 'critical'],
    ]);
    expect(alerts[0]!.payload.message).toMatch(/reported success: false/);
  });

  it("tells the agent's own cost sample from the one the gateway measured by wall clock", async () => {
    // The task id rides along in the payload (the cost extension adds it), beside the topic's fields.
    const samples = [
      { agent: 'ava', skill: 'sitrep', taskId: 't8', measured: 'agent' as const },
      // The agent sent no cost-v1 part: the gateway made these samples from the tasks' ends.
      { agent: 'quinn', skill: 'pr_review', taskId: 't9', measured: 'wall-clock' as const },
      { agent: 'ops', skill: 'deploy', measured: 'wall-clock' as const },
    ];
    for (const sample of samples) {
      await bus.publish('cost.sample', { ...sample, wallMs: 10, success: false });
    }
    await bus.idle();
    expect(alerts.map((a) => a.payload.message)).toEqual([
      'ava/sitrep reported success: false in its own cost sample (task t8)',
      "quinn/pr_review failed (task t9; the gateway's wall-clock sample: success false)",
      "ops/deploy failed (the gateway's wall-clock sample: success false)",
    ]);
    expect(alerts[1]!.payload.evidence).toMatchObject({
      source: 'cost.sample',
      payload: { measured: 'wall-clock' },
    });
  });

  it('raises action_quality when a task fails, once per task across both topics', async () => {
    await bus.publish('skill.dispatch.failed', {
      id: 'd1',
      agent: 'quinn',
      skill: 'pr_review',
      correlationId: 'c1',
      status: 'failed',
      taskId: 't1',
      createdAt: 1,
      updatedAt: 2,
      result: { state: 'failed', error: { code: 'FLEETGATE_TASK_FAILED', message: 'tests red' } },
    });
    const sample = {
      agent: 'quinn',
      skill: 'pr_review',
      taskId: 't1',
      wallMs: 5,
      success: false,
      measured: 'wall-clock' as const,
    };
    await bus.publish('cost.sample', sample);
    await bus.idle();
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.payload).toMatchObject({
      kind: 'action_quality',
      severity: 'warning',
      evidence: { source: 'skill.dispatch.failed', taskId: 't1' },
    });
    expect(alerts[0]!.payload.message).toBe('quinn/pr_review failed (task t1): tests red');
  });

  it("quotes the agent's final status text beside the gateway's reason", async () => {
    await bus.publish('skill.dispatch.failed', {
      id: 'd2',
      agent: 'quinn',
      skill: 'pr_review',
      correlationId: 'c2',
      status: 'failed',
      taskId: 't2',
      createdAt: 1,
      updatedAt: 2,
      result: {
        state: 'failed',
        text: 'disk full',
        error: { code: 'FLEETGATE_TASK_FAILED', message: 'The task ended failed.' },
      },
    });
    await bus.idle();
    expect(alerts.map((a) => a.payload.message)).toEqual([
      'quinn/pr_review failed (task t2): The task ended failed. The agent said: "disk full"',
    ]);
  });

  it('leaves a call whose outcome is unknown to its own alert (outcome_unknown)', async () => {
    await bus.publish('skill.dispatch.failed', {
      id: 'd3',
      agent: 'quinn',
      skill: 'pr_review',
      correlationId: 'c3',
      status: 'failed',
      taskId: null,
      createdAt: 1,
      updatedAt: 2,
      result: {
        error: {
          code: 'FLEETGATE_CALL_OUTCOME_UNKNOWN',
          message:
            'The gateway holding this call stopped after sending it: whether it ran is unknown.',
        },
      },
    });
    await bus.idle();
    expect(alerts).toEqual([]);
  });
});
