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

  it('alerts again when the same card widens the radius again later, never twice for one event', async () => {
    const ids: string[] = [];
    const raiser = createRadiusWidenedAlerts({
      bus,
      sink: (_alert, options) => {
        ids.push(options.id);
        return Promise.resolve();
      },
    });
    const change = {
      agent: 'q',
      skill: 's',
      extension: BLAST_V1_URI,
      before: 'repo',
      after: 'public',
      widened: true,
      narrowed: false,
    };
    // The declaration event's id is the card's: widened, narrowed, widened again gives it twice.
    const first = {
      id: 'card-b',
      correlationId: 'c-1',
      topic: 'fleet.declaration.changed' as const,
      time: '2026-12-07T10:00:00.000Z',
      payload: change,
    };
    const again = { ...first, time: '2026-12-07T10:05:00.000Z' };
    await raiser.handle(first);
    await raiser.handle(first); // redelivered
    await raiser.handle(again);
    expect(ids[0]).toBe(ids[1]);
    expect(ids[2]).not.toBe(ids[0]);
  });
});
