/**
 * soak-short: the 2-minute soak (part of `npm run bench`): mixed traffic against the demo fleet
 * through `createGateway`, its private PostgreSQL cluster restarted every minute (once, at 60 s:
 * the 30 s before it against the 40 s from 80 s on). Same figures as `soak` (see `support/soak.ts`).
 */
import { runSoak } from './support/soak.js';

await runSoak({
  bench: 'soak-short',
  durationMs: 120_000,
  restartEveryMs: 60_000,
  warmupMs: 30_000,
  settleMs: 20_000,
  concurrency: 8,
});
