/**
 * What the service asks of the host it runs on: the door for the CLI and the service's own rooms.
 * Not exported by the package (`fleetgate/gateway` is `service/index.ts`).
 */
export { processRuns } from './process-runs.js';
