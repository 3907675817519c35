/** Publishing what a unit of work emitted, once it committed, on the materialiser's bus. */
import { assertNever } from '../protocol/index.js';
import type { FleetgateTopics } from '../protocol/index.js';
import type { WorldBus, WorldPublishedTopic } from './bus-port.js';
import type { WorldEmission } from './types.js';

/**
 * Publishes one emission: through `publishNow` when the bus has it (nothing to await, undefined
 * comes back), else through `publish` (its promise comes back).
 */
export function publishEmission(
  bus: WorldBus,
  emission: WorldEmission,
): Promise<unknown> | undefined {
  const options = { id: emission.id, correlationId: emission.correlationId };
  switch (emission.topic) {
    case 'world.state.updated':
      return send(bus, emission.topic, emission.payload, options);
    case 'world.state.delta.rejected':
      return send(bus, emission.topic, emission.payload, options);
    case 'ops.alert.world_domain_full':
      return send(bus, emission.topic, emission.payload, options);
    default:
      return assertNever(emission, 'world emission');
  }
}

/** Publishes one event on `bus`: with `publishNow` when it has it (undefined comes back). */
function send<T extends WorldPublishedTopic>(
  bus: WorldBus,
  topic: T,
  payload: FleetgateTopics[T],
  options: { id: string; correlationId: string },
): Promise<unknown> | undefined {
  if (bus.publishNow === undefined) return bus.publish(topic, payload, options);
  bus.publishNow(topic, payload, options);
  return undefined;
}
