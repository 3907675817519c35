/** Runs the EventBus contract against the in-memory bus and against JetStream on a real server. */
import { createInMemoryEventBus } from '../src/bus/index.js';
import type { OpenTopics } from '../src/protocol/index.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { eventBusContract } from './support/event-bus-contract.js';
import { NATS_URL, deleteNatsStream, requireNats, uniqueName } from './support/services.js';

eventBusContract('InMemoryEventBus', (options) =>
  Promise.resolve({
    bus: createInMemoryEventBus<OpenTopics>(options),
    cleanup: () => Promise.resolve(),
  }),
);

eventBusContract(
  'JetStreamEventBus',
  async (options) => {
    // A unique stream and subject prefix per test: parallel files and reruns never collide.
    const name = uniqueName('fgc');
    const stream = name.toUpperCase();
    const bus = await createJetStreamEventBus<OpenTopics>({
      servers: NATS_URL,
      stream,
      subjectPrefix: name,
      storage: 'memory',
      redeliveryDelayMs: 50,
      ...options,
    });
    return { bus, cleanup: () => deleteNatsStream(stream) };
  },
  await requireNats(),
);
