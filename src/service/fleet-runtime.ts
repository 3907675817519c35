import type { EventBus } from '../bus/index.js';
import type { CardBroker, CardSource, FleetRegistries, SecretResolver } from '../fleet/index.js';
import {
  AgentDirectory,
  BlastRegistry,
  createCardBroker,
  createStoreCardCache,
  createStoreRatchetPersistence,
  DeclarationRatchet,
  EffectDomainRegistry,
  HitlModeRegistry,
  HttpCardSource,
  LearnedFloors,
} from '../fleet/index.js';
import type { FloorWriter } from '../alerts/index.js';
import { createStoreFloorWriter, listLearnedFloors } from '../alerts/index.js';
import { defined } from '../protocol/fields/index.js';
import type { FleetgateConfig } from './config.js';
import type { Lease } from './card-lease.js';
import { createLeasedCardSource, leasedCardCache } from './card-lease.js';
import type { GatewayStore } from './migrations.js';
import { openGatewayStore } from './migrations.js';

/** The fleet side of a gateway: directory, registries, ratchet and card broker on one store. */
export interface FleetRuntime {
  store: GatewayStore;
  directory: AgentDirectory;
  registries: FleetRegistries;
  broker: CardBroker;
  /** Floors learned from observed violations; applied by the broker. */
  learnedFloors: LearnedFloors;
  /** The writer reconciliation raises floors through; a raise applies at once. */
  floorWriter: FloorWriter;
  close(): Promise<void>;
}

/** Options of {@link createFleetRuntime}. */
export interface FleetRuntimeOptions {
  secrets: SecretResolver;
  bus?: Pick<EventBus, 'publish'>;
  /** An open store to use instead of opening `config.store`. */
  store?: GatewayStore;
  /** Where cards come from (default: HTTP with `config.cards.timeout`). */
  source?: CardSource;
  /**
   * The card-refresh lease replicas share: while another replica holds it, cards are read from
   * the store (the holder's) instead of fetched, and the card cache is left to the holder.
   */
  lease?: Pick<Lease, 'held'>;
}

/** Builds the fleet side of a gateway from a validated configuration. */
export async function createFleetRuntime(
  config: FleetgateConfig,
  options: FleetRuntimeOptions,
): Promise<FleetRuntime> {
  const directory = new AgentDirectory({ secrets: options.secrets });
  directory.load(config.agents);
  const store = options.store ?? (await openGatewayStore(config.store));
  const registries: FleetRegistries = {
    blast: new BlastRegistry(),
    hitlMode: new HitlModeRegistry(),
    effectDomain: new EffectDomainRegistry(),
  };
  const learnedFloors = LearnedFloors.from(await listLearnedFloors(store.db));
  const floorWriter = createStoreFloorWriter({
    db: store.db,
    kind: store.kind,
    onRaised: (floor) => learnedFloors.raise(floor),
  });
  const fetched = options.source ?? new HttpCardSource({ timeoutMs: config.cards.timeout });
  const cache = createStoreCardCache(store.db);
  const lease = options.lease;
  const broker = createCardBroker({
    directory,
    source:
      lease === undefined
        ? fetched
        : createLeasedCardSource({
            lease,
            source: fetched,
            db: store.db,
            staleAfterMs: 2 * config.cards.refreshInterval + config.replicas.leaseTtl,
          }),
    registries,
    ratchet: await DeclarationRatchet.open(createStoreRatchetPersistence(store.db)),
    cache: lease === undefined ? cache : leasedCardCache(cache, lease),
    floors: learnedFloors,
    refreshIntervalMs: config.cards.refreshInterval,
    concurrency: config.cards.concurrency,
    staleAfterFailures: config.cards.staleAfterFailures,
    ...defined({ bus: options.bus }),
  });
  return {
    store,
    directory,
    registries,
    broker,
    learnedFloors,
    floorWriter,
    async close() {
      broker.stop();
      await broker.whenIdle();
      if (options.store === undefined) await store.close();
    },
  };
}
