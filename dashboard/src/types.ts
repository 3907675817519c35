/**
 * The shapes the dashboard reads from the gateway's HTTP API, taken from the zod schemas the
 * routes declare (`src/service/http/api-schemas.ts`, the same schemas `/api/openapi.json` is
 * generated from): a change of an answer's shape is a type error here, not a silent mismatch.
 * Only the live events' envelope (a bus contract, not a route) is written out here.
 */
import type { z } from 'zod';
import type {
  agentSchema,
  approvalSchema,
  auditRecordSchema,
  decisionSchema,
  dispatchSchema,
  domainSchema,
  explanationSchema,
  radiusSchema,
  roleSchema,
  searchDispatchSchema,
  searchEffectSchema,
  skillViewSchema,
  statusSchema,
  storyEventSchema,
  storySchema,
} from '../../src/service/http/api-schemas.js';

export type Radius = z.infer<typeof radiusSchema>;
export type Role = z.infer<typeof roleSchema>;
export type SkillView = z.infer<typeof skillViewSchema>;
export type AgentView = z.infer<typeof agentSchema>;
export type Approval = z.infer<typeof approvalSchema>;
export type WorldDomain = z.infer<typeof domainSchema>;
export type AuditRecord = z.infer<typeof auditRecordSchema>;
export type Decision = z.infer<typeof decisionSchema>;
/** A dispatch record; live `skill.dispatch.*` events carry the record and why it moved. */
export type DispatchRecord = z.infer<typeof dispatchSchema> & { reason?: string };
export type Explanation = z.infer<typeof explanationSchema>;
export type StoryEvent = z.infer<typeof storyEventSchema>;
export type CallStory = z.infer<typeof storySchema>;
export type SearchDispatch = z.infer<typeof searchDispatchSchema>;
export type SearchEffect = z.infer<typeof searchEffectSchema>;
export type GatewayStatus = z.infer<typeof statusSchema>;

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
