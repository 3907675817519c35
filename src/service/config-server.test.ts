import { describe, expect, it } from 'vitest';
import { isFleetgateError } from '../protocol/index.js';
import { parseConfig } from './config.js';

/** The problems `parseConfig` reports for `input`, one line each. */
function problemsOf(input: unknown): string[] {
  try {
    parseConfig(input, 'fleetgate.yaml');
    return [];
  } catch (error) {
    if (!isFleetgateError(error, 'FLEETGATE_CONFIG_INVALID')) throw error;
    return error.details?.problems as string[];
  }
}

describe('the service keys of the configuration', () => {
  it('defaults the exposure, timeouts and byte budgets', () => {
    const config = parseConfig({});
    expect(config.listen).toMatchObject({
      trustProxy: [],
      allowedHosts: [],
      timeouts: { headers: 15_000, body: 30_000, request: 60_000 },
    });
    expect(config.events).toMatchObject({
      retainBytes: 32 * 1024 * 1024,
      clientBufferBytes: 8 * 1024 * 1024,
      bufferBytes: 48 * 1024 * 1024,
    });
    expect(config.proxy.pushUrls).toBeUndefined();
  });

  it('reads sizes, durations, proxies, hosts and push URL entries', () => {
    const config = parseConfig({
      listen: {
        trustProxy: ['10.0.0.0/8', '::1', 'loopback'],
        allowedHosts: ['Gateway.Example.com', '.fleet.test'],
        timeouts: { body: '5s' },
      },
      events: { retainBytes: '1MiB', clientBufferBytes: '256KiB', bufferBytes: '2MiB' },
      proxy: { pushUrls: ['https://hooks.example.com/a2a/', '10.1.0.0/16', 'public'] },
    });
    expect(config.listen.allowedHosts).toEqual(['gateway.example.com', '.fleet.test']);
    expect(config.listen.timeouts).toEqual({ headers: 15_000, body: 5000, request: 60_000 });
    expect(config.events).toMatchObject({
      retainBytes: 1024 * 1024,
      clientBufferBytes: 256 * 1024,
      bufferBytes: 2 * 1024 * 1024,
    });
    expect(config.proxy.pushUrls).toHaveLength(3);
  });

  it('names each bad value with its path', () => {
    const problems = problemsOf({
      listen: {
        trustProxy: ['10.0.0.0/40', 'proxy.example'],
        allowedHosts: ['http://gateway.example.com'],
        timeouts: { headers: '2m', request: '1m' },
      },
      events: { retainBytes: 'lots', clientBufferBytes: '1KiB', bufferBytes: '1MiB' },
      proxy: { pushUrls: ['ftp://x', '10.0.0.0/99'] },
    }).join('\n');
    for (const path of [
      'listen.trustProxy[0]',
      'listen.trustProxy[1]',
      'listen.allowedHosts[0]',
      'listen.timeouts.headers',
      'events.retainBytes',
      'proxy.pushUrls[0]',
      'proxy.pushUrls[1]',
    ]) {
      expect(problems, path).toContain(path);
    }
  });
});
