/**
 * Serves an executor written on the agent-author kit as a real `@a2a-js/sdk` agent on 127.0.0.1,
 * wired the way the kit's documentation says: `withEffects` around the executor, the card's
 * declarations from the kit's helpers, `activateExtensions` as every transport's context builder.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentCard } from '@a2a-js/sdk';
import type { ServerCallContextBuilder } from '@a2a-js/sdk/server';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import {
  UserBuilder,
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
} from '@a2a-js/sdk/server/express';
import express from 'express';
import type { EffectsAgentExecutor, EffectsWarning } from '../../src/agent/index.js';
import { activateExtensions, withEffects } from '../../src/agent/index.js';

export interface KitAgent {
  url: string;
  card: AgentCard;
  warnings: EffectsWarning[];
  close(): Promise<void>;
}

export interface KitAgentOptions {
  name: string;
  skills: readonly string[];
  declare: (card: AgentCard) => AgentCard;
  executor: EffectsAgentExecutor;
  streaming?: boolean;
  /** `1.0` (default), `0.3` only, or both (v1.0 interfaces first, then v0.3 ones). */
  versions?: '1.0' | '0.3' | 'both';
  /** The transports' context builder (default: the kit's `activateExtensions(card)`). */
  contextBuilder?: (card: AgentCard) => ServerCallContextBuilder | undefined;
}

export async function startKitAgent(options: KitAgentOptions): Promise<KitAgent> {
  const app = express();
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const versions = options.versions ?? '1.0';
  const listed = versions === 'both' ? ['1.0', '0.3'] : [versions];
  const card = options.declare(
    AgentCard.fromJSON({
      name: options.name,
      description: `${options.name}, built on fleetgate/agent`,
      version: '1.0.0',
      supportedInterfaces: listed.flatMap((protocolVersion) => [
        { url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion },
        { url: `${url}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion },
      ]),
      capabilities: { streaming: options.streaming ?? false },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain', 'application/json'],
      skills: options.skills.map((id) => ({ id, name: id, description: id, tags: [] })),
    }),
  );
  const warnings: EffectsWarning[] = [];
  const requestHandler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    withEffects(options.executor, { card, onWarning: (w) => void warnings.push(w) }),
  );
  const contextBuilder = options.contextBuilder?.(card) ?? activateExtensions(card);
  const legacyCompat = { enabled: versions !== '1.0' };
  const common = { requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat };
  app.use(
    '/.well-known/agent-card.json',
    agentCardHandler({ agentCardProvider: requestHandler, legacyCompat }),
  );
  app.use('/a2a/jsonrpc', jsonRpcHandler({ ...common, contextBuilder }));
  app.use('/a2a/rest', restHandler({ ...common, contextBuilder }));
  return {
    url,
    card,
    warnings,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
