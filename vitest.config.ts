import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Integration suites share one PostgreSQL and one NATS server; files isolate by unique names.
    pool: 'forks',
  },
});
