/**
 * The deployment a stream belongs to. Two deployments (two stores) on one stream would share its
 * durable consumers, each getting part of the other's events, so the stream records the deployment
 * that owns it and the bus of any other is refused before it changes or consumes anything.
 *
 * The record is the stream's description, `Fleetgate deployment <id>`: the one stream field every
 * supported server keeps (stream metadata needs nats-server 2.10, and the client refuses it on
 * 2.9), that `nats stream info` shows, and that an update keeps (the client merges an update into
 * the stream's configuration, so replicas of an earlier release keep it too). A description an
 * operator wrote is kept, the record appended to it.
 */
import { FleetgateError } from '../../protocol/index.js';

/** What a deployment id may hold: it is written into the stream's description and read back. */
const DEPLOYMENT_ID = /^[A-Za-z0-9_-]{1,64}$/u;

/** The record in a description; the first one counts. */
const RECORD = /\bFleetgate deployment ([A-Za-z0-9_-]{1,64})\b/u;

/**
 * Checks a deployment id before anything connects.
 *
 * @throws FleetgateError `FLEETGATE_BUS_CONNECT_FAILED` for an empty id or one with other
 * characters than letters, digits, `_` and `-` (at most 64).
 */
export function checkDeploymentId(deployment: string): void {
  if (DEPLOYMENT_ID.test(deployment)) return;
  throw new FleetgateError(
    'FLEETGATE_BUS_CONNECT_FAILED',
    `Invalid deployment id ${JSON.stringify(deployment)}: 1 to 64 letters, digits, _ and -`,
    { details: { deployment } },
  );
}

/** The deployment a stream's description records, if any. */
export function streamOwner(description: string | undefined): string | undefined {
  return description === undefined ? undefined : RECORD.exec(description)?.[1];
}

/** The description of a stream owned by `deployment`: the record, after what was there. */
export function ownedDescription(description: string | undefined, deployment: string): string {
  const record = `Fleetgate deployment ${deployment}`;
  const kept = description?.trim() ?? '';
  return kept === '' ? record : `${kept} (${record})`;
}

/**
 * The refusal of a bus whose deployment is not the stream's: before the stream was changed and
 * before any consumer was made or read.
 */
export function otherDeployment(stream: string, owner: string, deployment: string): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_BUS_DEPLOYMENT_MISMATCH',
    `JetStream stream ${stream} belongs to deployment ${owner}, not to deployment ${deployment}; ` +
      `it was left unchanged and nothing was consumed. Two deployments on one stream would share ` +
      `its durable consumers, each getting part of the other's events. Give each deployment its ` +
      `own stream and subject prefix, or use the store of deployment ${owner}.`,
    { details: { stream, streamDeployment: owner, deployment } },
  );
}
