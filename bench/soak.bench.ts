/**
 * soak (opt-in: `npm run bench -- soak`): 30 minutes of mixed traffic against the demo fleet
 * through `createGateway`, its private PostgreSQL cluster restarted every 5 minutes. See
 * `support/soak.ts` for the figures (deltas_lost, deltas_doubled, rss_growth_pct, p99_ratio).
 */
import { runSoak } from './support/soak.js';

await runSoak({
  bench: 'soak',
  durationMs: 30 * 60_000,
  restartEveryMs: 5 * 60_000,
  warmupMs: 60_000,
  settleMs: 60_000,
  concurrency: 8,
});
