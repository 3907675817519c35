/**
 * soak-short: the 2-minute soak (part of `npm run bench`): mixed traffic against the demo fleet
 * through `createGateway`, its private PostgreSQL cluster restarted every 40 seconds. Same figures
 * as `soak` (see `support/soak.ts`).
 */
import { runSoak } from './support/soak.js';

await runSoak({
  bench: 'soak-short',
  durationMs: 120_000,
  restartEveryMs: 40_000,
  warmupMs: 15_000,
  settleMs: 15_000,
  concurrency: 8,
});
