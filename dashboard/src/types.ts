/** The shapes the dashboard reads from the gateway's HTTP API (ARCHITECTURE §4). */

export type Radius = 'self' | 'project' | 'repo' | 'fleet' | 'public';
export type Role = 'viewer' | 'operator' | 'approver' | 'admin';

export interface SkillView {
  id: string;
  name?: string;
  declaredRadius: Radius | null;
  floor: Radius | null;
  effectiveRadius: Radius | null;
  pendingRadius: Radius | null;
  hitlMode: string | null;
  vetoTtlMs: number | null;
  domains: string[] | null;
}

export interface AgentView {
  name: string;
  url: string | null;
  status: 'pending' | 'fresh' | 'failed' | 'stale';
  description: string | null;
  lastFetchedAt: number | null;
  lastChangedAt: number | null;
  nextRefreshAt: number | null;
  failures: number;
  lastError: { code: string; message: string } | null;
  skills: SkillView[];
  diagnostics: { code?: string; message?: string; severity?: string; path?: string }[];
}

export interface Approval {
  id: string;
  kind: 'dispatch' | 'veto' | 'checkpoint';
  dispatchId: string;
  agent: string;
  skill: string;
  mode: string;
  radius: Radius | null;
  status: 'pending' | 'approved' | 'rejected' | 'expired' | 'consumed' | 'void';
  requestedBy: string | null;
  requiredApprovals: number;
  approvals: { by: string; at: number }[];
  decidedBy: string | null;
  decidedAt: number | null;
  reasons: { kind: string; detail: string }[];
  createdAt: number;
  expiresAt: number;
  question: string | null;
  snoozedUntil?: number | null;
  input?: { text?: string; data?: unknown } | null;
  reason?: string | null;
  [key: string]: unknown;
}

export interface WorldDomain {
  name: string;
  version: number;
  state: Record<string, unknown>;
  updatedAt: number;
}

export interface AuditRecord {
  seq: number;
  domain: string;
  path: string;
  op: string;
  value: unknown;
  previous?: unknown;
  next?: unknown;
  status: 'applied' | 'rejected';
  reason?: string;
  version?: number;
  agent: string;
  skill: string;
  taskId: string;
  eventId: string;
  time: string;
  recordedAt: number;
}

export interface Decision {
  action: 'allow' | 'hold' | 'deny';
  mode?: string;
  effectiveRadius?: string | null;
  reason?: string;
  reasons?: { kind: string; detail: string }[];
  approvalId?: string;
  goAt?: number;
}

export interface DispatchRecord {
  id: string;
  status: string;
  agent: string;
  skill: string;
  correlationId: string;
  taskId: string | null;
  createdAt: number;
  updatedAt: number;
  result: { state?: string; text?: string; error?: { code: string; message: string } } | null;
  reason?: string;
  decision?: unknown;
  approvalId?: string;
  routing?: { agent: string; reasons: string[] };
}

export interface DeltaEntry {
  domain: string;
  path: string;
  op: string;
  value: unknown;
}

/** One bus event as `/api/events` sends it. */
export interface EventEnvelope {
  id: string;
  topic: string;
  time: string;
  correlationId?: string;
  payload: Record<string, unknown>;
}

/** `GET /api/policy/explain`: the gate's decision for a call now. */
export interface Explanation {
  agent: string;
  skill: string;
  policyVersion: string;
  decision: {
    mode: string;
    deny?: { reason: string };
    effectiveRadius: Radius | null;
    reasons: { kind: string; detail: string }[];
    vetoTtlMs?: number;
    approvers: number;
  };
}

/** An event of a call, as `GET /api/dispatches/:id/story` lists it. */
export interface StoryEvent {
  id: string;
  topic: string;
  time: string;
  at: number;
  payload: Record<string, unknown>;
}

/** `GET /api/dispatches/:id/story`. */
export interface CallStory {
  dispatch: DispatchRecord;
  send: { owner: string; messageId: string; contextId: string; sentAt: number | null } | null;
  traceparent: string | null;
  task: {
    state: string;
    createdAt: number;
    updatedAt: number;
    terminalAt: number | null;
    terminalVia: string | null;
  } | null;
  events: StoryEvent[];
  approvals: Approval[];
  effects: {
    seq: number;
    domain: string;
    path: string;
    op: string;
    value: unknown;
    previous: unknown;
    next: unknown;
    status: 'applied' | 'rejected';
    reason: string | null;
    version: number | null;
    at: number;
  }[];
  cost: Record<string, unknown> | null;
}

/** A row of `GET /api/search/dispatches`. */
export interface SearchDispatch extends DispatchRecord {
  radius: string | null;
}

/** A row of `GET /api/search/effects`. */
export interface SearchEffect {
  seq: number;
  domain: string;
  path: string;
  op: string;
  value: unknown;
  previous: unknown;
  next: unknown;
  status: 'applied' | 'rejected';
  reason: string | null;
  version: number | null;
  agent: string;
  skill: string;
  taskId: string;
  recordedAt: number;
}

/** `GET /api/status`. */
export interface GatewayStatus {
  version: string;
  instance: string;
  startedAt: number;
  uptimeMs: number;
}
