import { AgentCard, HTTP_EXTENSION_HEADER } from '@a2a-js/sdk';
import {
  ClientFactory,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';

import { FleetgateError, LEGACY_EXTENSIONS_HEADER } from '../protocol/index.js';
import { readDeclarations, type Declarations } from '../protocol/index.js';
import { createEchoedExtensionsReader } from './headers.js';
import { createAgentFetch, type AgentFetchLimits } from './agent-fetch.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Transport bindings a fleet client speaks. */
export type TransportBinding = 'JSONRPC' | 'HTTP+JSON';

/** An agent as the fleet knows it: where it is configured to live and the card it last served. */
export interface FleetAgent {
  /** The configured base URL; every request goes to this origin, whatever the card advertises. */
  url: string;
  /** The card as fetched (v1.0 or v0.3 JSON, or an SDK `AgentCard`). */
  card: unknown;
  /** Headers sent with every request to this agent (e.g. `Authorization`). */
  headers?: Readonly<Record<string, string>>;
  /** Preferred transport binding when the card offers several (default: the card's order). */
  transport?: TransportBinding;
  /**
   * `false`: a call that may be streamed when the card allows (`CallOptions.streamWhenAble`) goes
   * as `SendMessage` all the same (an agent whose streams misbehave). Default true.
   */
  preferStreaming?: boolean;
  /**
   * The declarations read from `card` by whoever loaded it (the fleet's card refresher), so the
   * card is parsed once. Without them the client reads them from the card once, when it is built.
   */
  declarations?: Declarations;
}

/** Where the fleet client finds agents by name; a `Map<string, FleetAgent>` is one. */
export interface FleetAgentSource {
  get(name: string): FleetAgent | undefined;
  /**
   * Why `get` has nothing for a name it knows (e.g. `FLEETGATE_AGENT_UNAVAILABLE`: configured,
   * card not loaded); undefined when the name is simply unknown.
   */
  unavailable?(name: string): Error | undefined;
}

/** The private header that ties a request to its call; stripped before the request leaves. */
export const CALL_ID_HEADER = 'x-fleetgate-call-id';

/** Per-call facts only the HTTP layer sees. */
export interface WireRecord {
  /** Extensions the agent echoed on its response, when it did. */
  echoed?: string[];
  /** HTTP status of the (last) response. */
  status?: number;
}

/** One cached SDK client with what it was built from. */
export interface AgentClient {
  readonly name: string;
  /** The `FleetAgent.card` this client was built from (identity decides when to rebuild). */
  readonly source: unknown;
  readonly client: Client;
  readonly card: AgentCard;
  readonly declarations: Declarations;
  readonly binding: string;
  readonly protocolVersion: string;
  readonly endpoint: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Whether a call that may be streamed is, when the card declares streaming. */
  readonly preferStreaming: boolean;
}

/**
 * Turns a fetched card into an SDK `AgentCard`: v0.3 JSON through the SDK's compat parser (its
 * interfaces are stamped `0.3` so the legacy transport is picked), anything else through the SDK
 * codec. Never a cast.
 *
 * @throws FleetgateError `FLEETGATE_CARD_INVALID` when the card is not an object or offers no
 * interface.
 */
export async function toSdkAgentCard(raw: unknown, agent: string): Promise<AgentCard> {
  if (!isRecord(raw)) {
    throw new FleetgateError(
      'FLEETGATE_CARD_INVALID',
      `The card of agent ${agent} is not an object.`,
      {
        details: { agent },
      },
    );
  }
  let card: AgentCard;
  try {
    if (Array.isArray(raw.supportedInterfaces)) {
      card = AgentCard.fromJSON(raw);
    } else {
      // A v1.0 card always lists its interfaces: only a card without them may be v0.3, and only
      // then is the SDK's v0.3 layer loaded.
      const legacy = await import('@a2a-js/sdk/compat/v0_3/client');
      card = legacy.isLegacyAgentCard(raw)
        ? legacy.parseLegacyAgentCard(raw)
        : AgentCard.fromJSON(raw);
    }
  } catch (cause) {
    throw new FleetgateError('FLEETGATE_CARD_INVALID', `The card of agent ${agent} is invalid.`, {
      cause,
      details: { agent },
    });
  }
  if (card.supportedInterfaces.length === 0) {
    throw new FleetgateError(
      'FLEETGATE_CARD_INVALID',
      `The card of agent ${agent} declares no supported interface.`,
      { details: { agent, path: 'supportedInterfaces' } },
    );
  }
  return card;
}

/**
 * The card with every interface URL moved to the configured agent's origin (scheme, host, port);
 * the path stays the card's. A card cannot redirect calls to another host.
 */
export function pinCard(card: AgentCard, agentUrl: string): AgentCard {
  const base = new URL(agentUrl);
  return {
    ...card,
    supportedInterfaces: card.supportedInterfaces.map((iface) => {
      let pinned: URL;
      try {
        pinned = new URL(iface.url, base);
      } catch {
        pinned = new URL(base);
      }
      pinned.protocol = base.protocol;
      pinned.host = base.host;
      return { ...iface, url: pinned.toString().replace(/\/$/, '') };
    }),
  };
}

/** Options of {@link createAgentClient}. */
export interface CreateAgentClientOptions {
  name: string;
  agent: FleetAgent;
  /** The fetch under every request; without it, `node:http` (see `src/net/exchange.ts`). */
  fetch?: typeof fetch;
  /** Size, time and redirect limits of every exchange with the agent (see {@link AgentFetchLimits}). */
  limits?: AgentFetchLimits;
  /** Where the fetch wrapper leaves what it saw for each in-flight call. */
  wire: Map<string, WireRecord>;
}

/**
 * Builds the one SDK client of an agent from the card the fleet already has — no card fetch. The
 * fetch it uses strips {@link CALL_ID_HEADER} and records the echoed `A2A-Extensions` header and
 * the HTTP status for that call; under it, every exchange is limited in size and time and follows
 * redirects only within the agent's origin (`agent-fetch.ts`).
 */
export async function createAgentClient(options: CreateAgentClientOptions): Promise<AgentClient> {
  const { name, agent, wire } = options;
  // Every request to the agent: bounded in size and time, never sent to another origin.
  const baseFetch = createAgentFetch(options.fetch, name, options.limits);
  const sdkCard = pinCard(await toSdkAgentCard(agent.card, name), agent.url);
  const declarations = agent.declarations ?? readDeclarations(agent.card);

  // Set once the client is built: the agent echoes under the header name of its protocol version.
  let readEchoedExtensions = createEchoedExtensionsReader();
  // The agent's configured headers (its credential) go on every request the client makes —
  // send, stream, get, resubscribe, cancel, push config — not only on the calls that pass them.
  const own = agent.headers ?? {};
  const ownNames = Object.keys(own);
  const withOwn = (headers: Record<string, string>): Record<string, string> => {
    if (ownNames.length === 0) return headers;
    // Configured names are lower-case (`agent-config.ts`); a header the request set wins.
    const merged: Record<string, string> = { ...headers };
    for (const name of ownNames) if (!(name in merged)) merged[name] = own[name]!;
    return merged;
  };
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = init?.headers;
    if (headers === undefined || headers instanceof Headers || Array.isArray(headers)) {
      if (ownNames.length === 0) return baseFetch(input, init);
      const merged = new Headers(headers);
      for (const name of ownNames) if (!merged.has(name)) merged.set(name, own[name]!);
      return baseFetch(input, { ...init, headers: merged });
    }
    const callId = headers[CALL_ID_HEADER];
    if (callId === undefined) return baseFetch(input, { ...init, headers: withOwn(headers) });
    // The SDK transports build a fresh init and header object for every request: the private
    // header stays off the wire by handing fetch a copy without it. (Deleting it in place turned
    // the header object into a slow dictionary for every later read.)
    const clean: Record<string, string> = {};
    for (const key in headers) if (key !== CALL_ID_HEADER) clean[key] = headers[key]!;
    // A call's headers already carry the agent's (the fleet client merges them in).
    init!.headers = clean;
    return baseFetch(input, init).then((response) => {
      const record = wire.get(callId);
      if (record !== undefined) {
        record.status = response.status;
        const echoed = readEchoedExtensions(response.headers);
        if (echoed !== undefined) record.echoed = echoed;
      }
      return response;
    });
  };

  // The v0.3 compat layer costs every request a little; only a card that offers a v0.3
  // interface needs it.
  const legacyCompat = {
    enabled: sdkCard.supportedInterfaces.some((i) => i.protocolVersion.startsWith('0.')),
  };
  const factory = new ClientFactory({
    transports: [
      new JsonRpcTransportFactory({ fetchImpl, legacyCompat }),
      new RestTransportFactory({ fetchImpl, legacyCompat }),
    ],
    ...(agent.transport === undefined ? {} : { preferredTransports: [agent.transport] }),
  });
  let client: Client;
  try {
    client = await factory.createFromAgentCard(sdkCard);
  } catch (cause) {
    throw new FleetgateError(
      'FLEETGATE_CARD_INVALID',
      `No usable transport on the card of agent ${name}.`,
      { cause, details: { agent: name } },
    );
  }
  readEchoedExtensions = createEchoedExtensionsReader(
    client.protocolVersion.startsWith('0.') ? LEGACY_EXTENSIONS_HEADER : HTTP_EXTENSION_HEADER,
  );
  const binding = client.transport.protocolName;
  const endpoint =
    sdkCard.supportedInterfaces.find(
      (i) => i.protocolBinding.toUpperCase() === binding.toUpperCase(),
    )?.url ?? agent.url;
  return {
    name,
    source: agent.card,
    client,
    card: sdkCard,
    declarations,
    binding,
    protocolVersion: client.protocolVersion,
    endpoint,
    headers: { ...(agent.headers ?? {}) },
    preferStreaming: agent.preferStreaming !== false,
  };
}
