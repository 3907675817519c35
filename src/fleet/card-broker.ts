import { defined } from '../protocol/fields/index.js';
import type { Acknowledgements } from './acknowledgements.js';
import { createAcknowledgements } from './acknowledgements.js';
import type { CardRefresher, CardRefresherOptions } from './card-refresher.js';
import { createCardRefresher } from './card-refresher.js';
import type { DeclarationBook, FleetRegistries, FloorSource } from './declaration-book.js';
import { createDeclarationBook } from './declaration-book.js';
import type { DeclarationRatchet } from './ratchet.js';

/** Options of {@link createCardBroker}: the refresher's, plus what the book needs. */
export interface CardBrokerOptions extends Omit<CardRefresherOptions, 'book'> {
  registries: FleetRegistries;
  ratchet: DeclarationRatchet;
  /** Learned floors. */
  floors?: FloorSource;
}

/**
 * The fleet side in one object: the card refresher (what it fetched), the declaration book (what
 * is in effect) and the acknowledgements (what an operator accepted). It is the fleet client's
 * agent source — a changed card is a new object with its declarations, which makes the fleet
 * client rebuild that agent's SDK client — and the alerts' declaration lookup.
 */
export interface CardBroker
  extends CardRefresher, Omit<DeclarationBook, 'apply' | 'restore' | 'setStale' | 'clear'> {
  readonly book: DeclarationBook;
  readonly refresher: CardRefresher;
  readonly acknowledgements: Acknowledgements;
  /** {@link Acknowledgements.acknowledge}. */
  acknowledge: Acknowledgements['acknowledge'];
  /** {@link Acknowledgements.pending}. */
  pendingAcknowledgements: Acknowledgements['pending'];
}

/**
 * Creates the card broker: wires a declaration book, a card refresher feeding it, and the
 * acknowledgements, on one directory and ratchet.
 *
 * @example
 * ```ts
 * const broker = createCardBroker({ directory, source: new HttpCardSource(), registries, ratchet, bus });
 * await broker.start();
 * const fleet = createFleetClient({ registry, bus, cards: broker });
 * registerStandardExtensions(registry, { bus, declarations: broker.stamps });
 * ```
 */
export function createCardBroker(options: CardBrokerOptions): CardBroker {
  const { registries, ratchet, floors, ...rest } = options;
  const book = createDeclarationBook({
    registries,
    ratchet,
    directory: options.directory,
    ...defined({ floors }),
  });
  const refresher = createCardRefresher({ ...rest, book });
  const acknowledgements = createAcknowledgements({ ratchet, directory: options.directory });
  return {
    book,
    refresher,
    acknowledgements,
    start: () => refresher.start(),
    stop: () => refresher.stop(),
    refreshAll: (onProgress) => refresher.refreshAll(onProgress),
    refresh: (name) => refresher.refresh(name),
    whenIdle: () => refresher.whenIdle(),
    state: (name) => refresher.state(name),
    states: () => refresher.states(),
    get: (name) => refresher.get(name),
    unavailable: (name) => refresher.unavailable(name),
    floor: (agent, skill) => book.floor(agent, skill),
    effectiveRadius: (agent, skill) => book.effectiveRadius(agent, skill),
    effectiveHitlMode: (agent, skill) => book.effectiveHitlMode(agent, skill),
    declaredDomains: (agent, skill) => book.declaredDomains(agent, skill),
    stamps: book.stamps,
    acknowledge: (agent, skill, by) => acknowledgements.acknowledge(agent, skill, by),
    pendingAcknowledgements: () => acknowledgements.pending(),
  };
}
