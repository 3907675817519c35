import { describe, expect, it } from 'vitest';
import { parseConfig, parseDuration } from './config.js';

describe('configuration', () => {
  it('fills the embedded defaults', () => {
    const config = parseConfig({});
    expect(config).toMatchObject({
      listen: { host: '127.0.0.1', port: 7420 },
      store: 'sqlite:./data/fleetgate.db',
      bus: 'memory',
      cards: { refreshInterval: 600_000, timeout: 5000, concurrency: 16, staleAfterFailures: 3 },
      policy: { unknownRadius: 'public', approvalAtOrAbove: 'repo' },
    });
  });

  it('parses durations and reports every problem with its path', () => {
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('soon')).toBeUndefined();
    expect(() =>
      parseConfig(
        {
          cards: { refreshInterval: 'soon', concurrency: 0 },
          bus: 'kafka://x',
          domains: { deploy: { minRadius: 'x' } },
        },
        'fleetgate.yaml',
      ),
    ).toThrow(
      expect.objectContaining({
        code: 'FLEETGATE_CONFIG_INVALID',
        message: expect.stringMatching(
          /fleetgate\.yaml:[\s\S]*bus: must be memory[\s\S]*cards\.refreshInterval: must be a duration[\s\S]*cards\.concurrency[\s\S]*domains\.deploy\.minRadius/,
        ),
      }),
    );
  });
});
