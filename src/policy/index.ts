/**
 * The policy room: the HITL decision (blast-v1 composed with hitl-mode-v1), approvals bound to the
 * exact call, the durable approvals inbox, rejection memory and standing approvals.
 */
export { decide, findOverride } from './decide.js';
export {
  callFingerprint,
  canonicalJson,
  normaliseInput,
  policyVersion,
  sha256Hex,
  type NormalisedPart,
} from './fingerprint.js';
export {
  alreadyDecided,
  createApprovalInbox,
  type ApprovalInbox,
  type ApprovalInboxOptions,
  type ApprovalKind,
  type ApprovalListOptions,
  type ApprovalRecord,
  type ApprovalStatus,
  type ApprovalVote,
  type HeldInput,
  type NewApproval,
  type PolicyAuditEntry,
  type StandingRecord,
} from './inbox.js';
export {
  createHitlGate,
  type CheckpointCall,
  type Explanation,
  type FollowUpVerdict,
  type GateCall,
  type GateVerdict,
  type HitlGate,
  type HitlGateOptions,
  type ReleaseVerdict,
  type ResumeVerdict,
} from './hitl-gate.js';
export {
  POLICY_MIGRATIONS,
  type ApprovalTable,
  type PolicyAuditTable,
  type PolicyDatabase,
  type StandingTable,
} from './store-tables.js';
export * from './types.js';
