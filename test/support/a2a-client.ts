/**
 * The unmodified `@a2a-js/sdk` client as any A2A caller builds it, pointed at an agent's URL (the
 * gateway's proxy or the agent itself): the card fetched with `ClientFactory.createFromUrl`, the
 * gateway token added by the `fetch` it is given, and the SDK's v0.3 layer when asked for.
 */
import { Role, type Message, type Part } from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { randomUUID } from 'node:crypto';

/** A `fetch` that adds `Authorization: Bearer <token>` to every request. */
export function bearerFetch(token: string | undefined): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    if (token !== undefined) headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

/** The SDK client of the agent at `url` (its card at `<url>/.well-known/agent-card.json`). */
export function sdkClient(
  url: string,
  options: { token?: string; transport?: 'JSONRPC' | 'HTTP+JSON'; legacy?: boolean } = {},
): Promise<Client> {
  const fetchImpl = bearerFetch(options.token);
  const legacyCompat = { enabled: options.legacy === true };
  const factory = new ClientFactory({
    transports: [
      new JsonRpcTransportFactory({ fetchImpl, legacyCompat }),
      new RestTransportFactory({ fetchImpl, legacyCompat }),
    ],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat }),
    ...(options.transport === undefined ? {} : { preferredTransports: [options.transport] }),
  });
  return factory.createFromUrl(`${url}/.well-known/agent-card.json`, '');
}

/** A user message with one text part and metadata. */
export function userMessage(
  text: string,
  metadata?: Record<string, unknown>,
  messageId: string = randomUUID(),
): Message {
  const part: Part = {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: '',
  };
  return {
    messageId,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [part],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

/**
 * One call of the ops agent's `sitrep` through `client`: `SendMessage`, or `SendStreamingMessage`
 * with its events read to the stream's end. Settles when the call does.
 */
export async function callSitrep(client: Client, streaming: boolean): Promise<void> {
  const request = {
    tenant: '',
    message: userMessage('status please', { 'x-effect-domain-skill': 'sitrep' }),
    configuration: undefined,
    metadata: undefined,
  };
  if (!streaming) {
    await client.sendMessage(request);
    return;
  }
  for await (const event of client.sendMessageStream(request)) void event;
}
