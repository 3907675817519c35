import { FleetgateError } from '../protocol/index.js';
import type { ExtensionRegistry, RegisteredExtension } from '../extensions/index.js';
import {
  createAgentClient,
  type AgentClient,
  type FleetAgentSource,
  type WireRecord,
} from './agent-clients.js';
import type { AgentFetchLimits } from './agent-fetch.js';
import { mergeExtensionHeader } from './headers.js';
import { defined } from '../protocol/fields/index.js';

/** The extensions active for an agent (card ∩ registry), and their URIs in the same order. */
export interface ActiveExtensions {
  list: RegisteredExtension[];
  uris: string[];
}

/** Options of {@link AgentClientCache}: the part of the fleet client's options it reads. */
export interface AgentClientCacheOptions {
  registry: ExtensionRegistry;
  cards: FleetAgentSource;
  fetch?: typeof fetch;
  limits?: AgentFetchLimits;
}

interface CachedClient {
  source: unknown;
  promise: Promise<AgentClient>;
  /** The built client once `promise` resolved: a call then starts without waiting a turn. */
  resolved?: AgentClient;
  extensions?: { version: number; list: RegisteredExtension[]; uris: string[] };
  headers?: { activated: readonly string[]; value: Readonly<Record<string, string>> };
}

/**
 * The SDK clients of a fleet client, one per agent, built from the card the fleet already has;
 * with each, the extensions active for it and the headers of a call without caller extras.
 */
export class AgentClientCache {
  /** Per-call facts only the HTTP layer sees, by call id: a call files its record here. */
  readonly wire = new Map<string, WireRecord>();
  readonly #options: AgentClientCacheOptions;
  readonly #registry: ExtensionRegistry;
  readonly #cards: FleetAgentSource;
  // Without a fetch of the caller's, agents are called over node:http (see src/net/exchange.ts).
  readonly #baseFetch: typeof fetch | undefined;
  readonly #clients = new Map<string, CachedClient>();

  constructor(options: AgentClientCacheOptions) {
    this.#options = options;
    this.#registry = options.registry;
    this.#cards = options.cards;
    this.#baseFetch = options.fetch;
  }

  /** The client of `name`, built on first use and again when the agent's card is replaced. */
  agentClient(name: string): Promise<AgentClient> {
    const agent = this.#cards.get(name);
    if (agent === undefined) {
      return Promise.reject(
        this.#cards.unavailable?.(name) ??
          new FleetgateError('FLEETGATE_AGENT_UNKNOWN', `No agent named ${name} is known.`, {
            details: { agent: name },
          }),
      );
    }
    const clients = this.#clients;
    const cached = clients.get(name);
    // The card broker replaces the card object on refresh; a new object means a new client.
    if (cached !== undefined && cached.source === agent.card) return cached.promise;
    const promise = createAgentClient({
      name,
      agent,
      wire: this.wire,
      ...defined({ fetch: this.#baseFetch, limits: this.#options.limits }),
    });
    const entry: CachedClient = { source: agent.card, promise };
    clients.set(name, entry);
    promise.then(
      (built) => {
        entry.resolved = built;
      },
      () => {
        if (clients.get(name) === entry) clients.delete(name);
      },
    );
    return promise;
  }

  /** The cached client of `name` when it is built and still matches the agent's card. */
  builtClient(name: string): AgentClient | undefined {
    const cached = this.#clients.get(name);
    if (cached?.resolved === undefined) return undefined;
    const agent = this.#cards.get(name);
    return agent !== undefined && agent.card === cached.source ? cached.resolved : undefined;
  }

  /** The extensions active for `name`: selected again only when the registry changed. */
  activeExtensions(name: string, built: AgentClient): ActiveExtensions {
    const registry = this.#registry;
    const cached = this.#clients.get(name);
    if (cached?.extensions?.version === registry.version) return cached.extensions;
    const list = registry.forDeclarations(built.declarations);
    const active = { version: registry.version, list, uris: list.map((e) => e.extension.uri) };
    if (cached !== undefined) cached.extensions = active;
    return active;
  }

  /** The merged headers of a call without caller extras: computed once per client and chain. */
  defaultHeaders(
    name: string,
    built: AgentClient,
    activated: readonly string[],
  ): Readonly<Record<string, string>> {
    const cached = this.#clients.get(name);
    if (cached?.headers !== undefined && cached.headers.activated === activated) {
      return cached.headers.value;
    }
    const value = mergeExtensionHeader(built.headers, undefined, activated);
    if (cached !== undefined) cached.headers = { activated, value };
    return value;
  }

  /** Drops the cached client of `name` (card refreshed or agent removed). */
  forget(name: string): void {
    this.#clients.delete(name);
  }
}
