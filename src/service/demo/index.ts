/**
 * The demo fleet of `fleetgate start` without a configuration (used by the CLI; not part of the
 * package's public API).
 */
export {
  DEMO_APPROVER,
  DEMO_APPROVER_CHOICE_ENV,
  DEMO_APPROVER_TOKEN_ENV,
  DEMO_TOKEN_ENV,
  demoConfig,
  demoToken,
  seedDemoCalls,
  startDemoFleet,
  startDemoTraffic,
  type DemoFleet,
} from './demo-fleet.js';
