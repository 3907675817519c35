/**
 * The dispatcher's side of the policy-gate seam (the types are the protocol's): the gate that lets
 * every call through.
 */
import type { PolicyGate } from '../protocol/index.js';

export type {
  CheckpointCall,
  FollowUpVerdict,
  GateCall,
  GateVerdict,
  PolicyGate,
  ReleaseVerdict,
  ResumeVerdict,
} from '../protocol/index.js';

/** A gate that allows every call. */
export const ALLOW_ALL: PolicyGate = {
  decide: () => Promise.resolve({ action: 'allow' }),
  decideAtOnce: () => ({ action: 'allow' }),
};
