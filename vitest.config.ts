import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // The package's own subpath, as agent authors import it (docs/agent-authoring.md examples).
    alias: { 'fleetgate/agent': fileURLToPath(new URL('./src/agent/index.ts', import.meta.url)) },
  },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Integration suites share one PostgreSQL and one NATS server; files isolate by unique names.
    pool: 'forks',
  },
});
