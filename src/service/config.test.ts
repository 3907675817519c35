import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, parseConfig, parseDuration, parseSize } from './config.js';

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

  it('reads the limits section: sizes with units, durations, defaults, and every bad value with its path', () => {
    expect(parseConfig({}).limits).toEqual(DEFAULT_LIMITS);
    expect(parseSize('512KiB')).toBe(524_288);
    expect(parseSize('4 MiB')).toBe(4_194_304);
    expect(parseSize('1MB')).toBe(1_000_000);
    expect(parseSize(300)).toBe(300);
    expect(parseSize('lots')).toBeUndefined();
    expect(
      parseConfig({
        limits: { eventBytes: '256KiB', domainBytes: 1 << 20, agentResponseTimeout: '30s' },
      }).limits,
    ).toMatchObject({ eventBytes: 262_144, domainBytes: 1_048_576, agentResponseTimeout: 30_000 });
    expect(() =>
      parseConfig({ limits: { eventBytes: '1KiB', pushBodyBytes: 'huge', extra: 1 } }, 'f.yaml'),
    ).toThrow(
      expect.objectContaining({
        code: 'FLEETGATE_CONFIG_INVALID',
        message: expect.stringMatching(
          /limits\.eventBytes: must be at least 71680 bytes[\s\S]*limits\.pushBodyBytes: must be a size/,
        ),
      }),
    );
  });
});
