/**
 * bus-jetstream: acknowledged publishes per second through `JetStreamEventBus` against a raw
 * `@nats-io/jetstream` publish loop on the same connection settings, same stream, same payload,
 * same `Nats-Msg-Id` dedupe and the same number of publishes in flight. Rounds alternate after a
 * warm-up; `throughput_ratio` is the median of per-round-pair ratios.
 *
 * Needs the NATS server (FLEETGATE_NATS_URL, default nats://127.0.0.1:4222); uses a stream of its
 * own and deletes it afterwards.
 */
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { OpenTopics, WorldStateDeltaEvent } from '../src/protocol/index.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { note, report } from './report.js';

const BENCH = 'bus-jetstream';
const URL = process.env.FLEETGATE_NATS_URL ?? 'nats://127.0.0.1:4222';
const PER_ROUND = 5_000;
const ROUNDS = 8;
const IN_FLIGHT = 32;
const TOPIC = 'world.state.delta';
const PAYLOAD: WorldStateDeltaEvent = {
  source: 'quinn',
  skill: 'triage',
  deltas: [{ domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 }],
  taskId: 'task-1',
  correlationId: 'call-1',
};

const name = `fgbench_${process.pid}_${Date.now().toString(36)}`;
const stream = name.toUpperCase();

/** Runs `count` publishes with at most IN_FLIGHT outstanding; returns acknowledged publishes/s. */
async function measure(count: number, publish: () => Promise<unknown>): Promise<number> {
  let started = 0;
  const t0 = process.hrtime.bigint();
  const worker = async (): Promise<void> => {
    while (started < count) {
      started += 1;
      await publish();
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return count / (Number(process.hrtime.bigint() - t0) / 1e9);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const bus = await createJetStreamEventBus<OpenTopics>({
  servers: URL,
  stream,
  subjectPrefix: name,
  name: 'bench-bus',
});
const rawConnection = await connect({ servers: URL, name: 'bench-raw' });
const js = jetstream(rawConnection);
const subject = bus.subjectOf(TOPIC);

const viaBus = (): Promise<unknown> => bus.publish(TOPIC, PAYLOAD);
const viaRaw = (): Promise<unknown> =>
  js.publish(subject, JSON.stringify({ id: randomUUID(), payload: PAYLOAD }), {
    msgID: randomUUID(),
  });

try {
  note('warming up');
  await measure(PER_ROUND, viaBus);
  await measure(PER_ROUND, viaRaw);
  const busRates: number[] = [];
  const rawRates: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < ROUNDS; i += 1) {
    // Alternate which goes first so drift in the server (file store growth) hits both equally.
    const [b, r] =
      i % 2 === 0
        ? [await measure(PER_ROUND, viaBus), await measure(PER_ROUND, viaRaw)]
        : await measure(PER_ROUND, viaRaw).then(async (raw) => [
            await measure(PER_ROUND, viaBus),
            raw,
          ]);
    busRates.push(b!);
    rawRates.push(r!);
    ratios.push(b! / r!);
    note(`round ${i + 1}: bus ${Math.round(b!)}/s raw ${Math.round(r!)}/s`);
  }
  const ratio = median(ratios);
  report({
    bench: BENCH,
    metric: 'throughput_ratio',
    value: ratio,
    unit: 'ratio',
    target: '>=0.9',
  });
  report({
    bench: BENCH,
    metric: 'bus_publishes_per_s',
    value: Math.round(median(busRates)),
    unit: '1/s',
  });
  report({
    bench: BENCH,
    metric: 'raw_publishes_per_s',
    value: Math.round(median(rawRates)),
    unit: '1/s',
  });
  if (ratio < 0.9) note(`throughput_ratio misses the 0.9 target by ${(0.9 - ratio).toFixed(3)}`);
} finally {
  await bus.close();
  await (await jetstreamManager(rawConnection)).streams.delete(stream).catch(() => false);
  await rawConnection.close();
}
