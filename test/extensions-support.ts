/** Shared set-up of the extension-runtime suites: a recording bus, a registry and a fleet client. */
import { createInMemoryEventBus, type EventBus, type InMemoryEventBus } from '../src/bus/index.js';
import { type EventEnvelope, type OpenTopics } from '../src/protocol/index.js';
import { createFleetClient, type FleetAgent, type FleetClient } from '../src/dispatch/index.js';
import {
  ExtensionRegistry,
  registerStandardExtensions,
  type Extension,
  type ExtensionEventBus,
} from '../src/extensions/index.js';
import type { RunningAgent } from '../examples/agents/index.js';

/** A fleet client wired to a recording in-memory bus. */
export interface TestFleet {
  bus: InMemoryEventBus<OpenTopics>;
  fleet: FleetClient;
  registry: ExtensionRegistry;
  cards: Map<string, FleetAgent>;
  /** Every event published, in order. */
  events: EventEnvelope[];
  /** Events of one topic, after every queued delivery finished. */
  on(topic: string): Promise<EventEnvelope[]>;
}

/** Options of {@link createTestFleet}. */
export interface TestFleetOptions {
  /** Register these instead of the four standard extensions. */
  extensions?: { extension: Extension; required?: boolean }[];
  /** Extra agents given as raw entries (e.g. a server that answers 500). */
  extra?: Record<string, FleetAgent>;
  fetch?: typeof fetch;
}

/** Builds a fleet for the given running agents; cards are fetched once, as the broker would. */
export async function createTestFleet(
  agents: readonly RunningAgent[],
  options: TestFleetOptions = {},
): Promise<TestFleet> {
  const bus = createInMemoryEventBus<OpenTopics>();
  const events: EventEnvelope[] = [];
  await bus.subscribe(
    '>',
    (event) => {
      events.push(event);
    },
    { name: 'recorder' },
  );
  const registry = new ExtensionRegistry();
  if (options.extensions === undefined) registerStandardExtensions(registry, { bus });
  else {
    for (const { extension, required } of options.extensions) {
      registry.register(extension, { required: required ?? false });
    }
  }
  const cards = new Map<string, FleetAgent>();
  for (const agent of agents)
    cards.set(agent.name, { url: agent.url, card: await agent.fetchCard() });
  for (const [name, entry] of Object.entries(options.extra ?? {})) cards.set(name, entry);
  const fleet = createFleetClient({
    registry,
    bus,
    cards,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  return {
    bus,
    fleet,
    registry,
    cards,
    events,
    async on(topic) {
      await bus.idle();
      return events.filter((e) => e.topic === topic);
    },
  };
}

/** Compile-time check: the bus issue's typed `EventBus` satisfies the runtime's structural bus. */
export const BUS_SATISFIES_EXTENSION_BUS: EventBus extends ExtensionEventBus ? true : never = true;
