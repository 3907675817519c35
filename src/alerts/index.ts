/**
 * Alerts: severity scaled by blast radius, declared-vs-observed reconciliation of world-state
 * deltas (`ops.alert.undeclared_effect`, `ops.alert.blast_violation`, learned floors), action
 * quality (`ops.alert.action_quality`), widened radii (`ops.alert.radius_widened`) and rolling cost summaries. Reads declarations only
 * through the {@link DeclarationLookup} port.
 */
export type { FloorWriter } from './ports.js';
export {
  ALERT_BASE_SEVERITY,
  ALERT_KINDS,
  ALERT_SEVERITIES,
  compareSeverity,
  scaleSeverity,
  type AlertKind,
  type Severity,
  type SeverityOptions,
} from './severity.js';
export { alertEventId, publishAlert, type AlertSink, type OpsAlert } from './alert.js';
export {
  createReconciler,
  RECONCILER_SUBSCRIPTION,
  type AlertRaiserOptions,
  type DomainPolicy,
  type ReconcileInput,
  type Reconciler,
  type ReconcilerOptions,
} from './reconciler.js';
export {
  createRadiusWidenedAlerts,
  RADIUS_WIDENED_SUBSCRIPTION,
  type RadiusWidenedAlerts,
  type RadiusWidenedAlertsOptions,
} from './radius-widened.js';
export {
  createOutcomeUnknownAlerts,
  OUTCOME_UNKNOWN_SUBSCRIPTION,
  type OutcomeUnknownAlerts,
} from './outcome-unknown.js';
export {
  createActionQualityMonitor,
  ACTION_QUALITY_SUBSCRIPTION,
  type ActionQualityMonitor,
} from './action-quality.js';
export {
  createCostSummaries,
  COST_SUMMARIES_SUBSCRIPTION,
  type CostSummaries,
  type CostSummariesOptions,
  type CostSummary,
} from './cost-summaries.js';
export {
  createStoreFloorWriter,
  listLearnedFloors,
  type LearnedFloor,
  type StoreFloorWriterOptions,
} from './floors.js';
export { ALERTS_MIGRATIONS, type AlertsDatabase, type LearnedFloorTable } from './store-tables.js';
