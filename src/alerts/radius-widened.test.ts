import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InMemoryEventBus } from '../bus/index.js';
import type { EventEnvelope, OpsAlertEvent } from '../protocol/index.js';
import { createInMemoryEventBus } from '../bus/index.js';
import { BLAST_V1_URI, HITL_MODE_V1_URI } from '../protocol/index.js';
import { createRadiusWidenedAlerts } from './radius-widened.js';

describe('radius widened alerts', () => {
  let bus: InMemoryEventBus;
  let alerts: EventEnvelope<string, OpsAlertEvent>[];

  beforeEach(async () => {
    bus = createInMemoryEventBus();
    alerts = [];
    await bus.subscribe('ops.alert.>', (e) => void alerts.push(e), { name: 'alerts' });
    await createRadiusWidenedAlerts({ bus }).start();
  });

  afterEach(() => bus.close());

  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i += 1) await new Promise((r) => setImmediate(r));
  };

  it('alerts once per widened blast radius, scaled by the new radius, and ignores the rest', async () => {
    const change = {
      agent: 'q',
      skill: 's',
      extension: BLAST_V1_URI,
      before: 'repo',
      after: 'public',
      widened: true,
      narrowed: false,
    };
    await bus.publish('fleet.declaration.changed', change, { id: 'change-1' });
    // A redelivery of the same declaration event gives the same alert id: the bus drops it.
    await bus.publish('fleet.declaration.changed', change, { id: 'change-1' });
    await bus.publish(
      'fleet.declaration.changed',
      { ...change, after: 'fleet' },
      { id: 'change-2' },
    );
    await bus.publish(
      'fleet.declaration.changed',
      { ...change, after: 'self', widened: false, narrowed: true },
      { id: 'change-3' },
    );
    await bus.publish(
      'fleet.declaration.changed',
      { ...change, extension: HITL_MODE_V1_URI, before: 'veto', after: 'gated' },
      { id: 'change-4' },
    );
    await settle();
    expect(alerts.map((a) => a.topic)).toEqual([
      'ops.alert.radius_widened',
      'ops.alert.radius_widened',
    ]);
    expect(alerts.map((a) => a.payload)).toEqual([
      expect.objectContaining({ agent: 'q', skill: 's', radius: 'public', severity: 'critical' }),
      expect.objectContaining({ radius: 'fleet', severity: 'error' }),
    ]);
    expect(alerts[0]!.payload.evidence).toMatchObject({ before: 'repo', after: 'public' });
    // What happened, that it is in force, and what to do.
    expect(alerts[0]!.payload.message).toBe(
      'q/s widened its blast radius from repo to public on its card; in effect now: its calls ' +
        "are gated as public. Confirm the change with the agent's owner",
    );
  });
});
