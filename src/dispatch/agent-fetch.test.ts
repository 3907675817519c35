/**
 * Agents are called over `src/net` only: a request the exchange cannot send (a scheme other than
 * http(s), named by a card or a redirect) is refused, never handed to the global `fetch`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HttpCardSource } from '../fleet/index.js';
import { createAgentFetch } from './agent-fetch.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('one agent transport', () => {
  it('refuses a request to an agent over another scheme, and fetch never sees it', async () => {
    const spy = vi.spyOn(globalThis, 'fetch');
    const agentFetch = createAgentFetch(undefined, 'ops');
    await expect(
      agentFetch('ftp://127.0.0.1:21/a2a/jsonrpc', { method: 'POST', body: '{}' }),
    ).rejects.toMatchObject({
      code: 'FLEETGATE_CALL_FAILED',
      message: expect.stringContaining('over http:// or https://') as unknown,
    });
    expect(spy).not.toHaveBeenCalled();
  });

  it('refuses a card URL over another scheme, and fetch never sees it', async () => {
    const spy = vi.spyOn(globalThis, 'fetch');
    await expect(
      new HttpCardSource().fetch({ name: 'ops', url: 'ftp://127.0.0.1:21/card.json' }),
    ).rejects.toMatchObject({ code: 'FLEETGATE_CARD_FETCH_FAILED' });
    expect(spy).not.toHaveBeenCalled();
  });
});
