/**
 * The README says which Node.js versions Fleetgate runs on (package.json `engines`). That is only
 * true when no locked dependency asks for more: otherwise `npm install` warns (EBADENGINE) and
 * the dependency may use what the oldest supported Node lacks.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// semver has no types of its own; only these two functions are used.
const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

interface Lock {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
}

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
};
const lock = JSON.parse(
  readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8'),
) as Lock;

describe('supported Node.js versions', () => {
  it('every locked dependency runs on the oldest Node.js package.json supports', () => {
    const oldest = semver.minVersion(pkg.engines.node)?.version;
    expect(oldest).toBe('20.19.0');
    const refusing = Object.entries(lock.packages).flatMap(([path, entry]) => {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      return range === undefined || semver.satisfies(oldest!, range)
        ? []
        : [`${path.replace(/^node_modules\//u, '')}@${entry.version ?? '?'} wants node ${range}`];
    });
    expect(refusing).toEqual([]);
  });

  it('the README states the same range', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    expect(readme).toContain('Requires Node.js 20.19 or newer');
  });
});
