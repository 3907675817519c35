/**
 * A slow durable handler is not a failing one: while it runs past the consumer's ack wait (the
 * materialiser waiting out a database outage), neither the event in hand nor the events pulled
 * behind it are redelivered, counted toward maxDeliver or dead-lettered.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { OpenTopics } from '../src/protocol/index.js';
import type { JetStreamEventBus } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { NATS_URL, deleteNatsStream, requireNats, uniqueName } from './support/services.js';

const natsUp = await requireNats();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!natsUp)('JetStream durable subscription with a slow handler', () => {
  const buses: JetStreamEventBus<OpenTopics>[] = [];
  const streams: string[] = [];
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
    await Promise.all(streams.splice(0).map((s) => deleteNatsStream(s)));
  });

  it('handles each event once, in order, with nothing dead-lettered, and nothing redelivered, when one handler call outlasts ackWait three times', async () => {
    const name = uniqueName('fgslow');
    const stream = name.toUpperCase();
    streams.push(stream);
    const bus = await createJetStreamEventBus<OpenTopics>({
      servers: NATS_URL,
      stream,
      subjectPrefix: name,
      ackWaitMs: 1_000,
      maxDeliver: 2,
      redeliveryDelayMs: 50,
    });
    buses.push(bus);
    const dead: string[] = [];
    await bus.subscribeDeadLetters('>', (d) => void dead.push(d.event.id), { name: 'dlq' });
    const calls: string[] = [];
    await bus.subscribe(
      'work.item',
      async (event) => {
        calls.push(event.id);
        if (calls.length === 1) await sleep(3_500);
      },
      { name: 'slow', durable: true },
    );
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      ids.push((await bus.publish('work.item', { i }, { id: `${name}-${i}` })).id);
    }
    const deadline = Date.now() + 15_000;
    while (calls.length < 5 && Date.now() < deadline) await sleep(50);
    await sleep(1_500);
    expect(calls).toEqual(ids);
    expect(dead).toEqual([]);
    // The server was told the events were in progress: it redelivered none of them (each
    // redelivery would have counted toward maxDeliver).
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const info = await (await jetstreamManager(bus.connection)).consumers.info(stream, 'slow');
    // Every delivery gets a consumer sequence number: five events, five deliveries.
    expect(info.delivered.consumer_seq).toBe(5);
  });
});
