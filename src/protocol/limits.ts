/**
 * Limits on everything that comes from the network. Each is enforced where the input is parsed,
 * and exceeding one gives an error or diagnostic that names the limit.
 */
export const LIMITS = {
  /** Bytes of an agent card document. */
  cardBytes: 1024 * 1024,
  /** Entries in `capabilities.extensions`. */
  cardExtensions: 64,
  /** Skills declared in one extension's `params.skills` (and in `card.skills`). */
  cardSkills: 1000,
  /** Domains one skill may declare in effect-domain-v1 params. */
  skillDomains: 64,
  /** Characters of a skill id, domain name or note. */
  nameLength: 128,
  /** Characters of a declaration note. */
  noteLength: 2000,
  /** Worldstate-delta entries accepted from one task (all parts together). */
  deltasPerTask: 1000,
  /** Bytes of one delta entry's `value`, as JSON. */
  deltaValueBytes: 64 * 1024,
  /** Levels of nesting of one delta entry's `value` (the world state holds no deeper value). */
  deltaValueDepth: 64,
  /**
   * Levels of nesting of what a call hands its agent: its `data`, its `metadata`, a client's whole
   * message (whose own shape takes three: `message.parts[i].data`). Deeper input is refused before
   * the call is recorded.
   */
  inputDepth: 64,
  /** Characters of a delta path. */
  pathLength: 1024,
  /** Segments of a delta path (`data.a.b` has 3). */
  pathDepth: 32,
  /** Artifacts read from one task. */
  taskArtifacts: 1000,
  /** Parts read from one artifact or message. */
  partsPerArtifact: 1000,
  /** Characters of a task id (an agent's, or one a push names). */
  taskIdLength: 1024,
  /**
   * Bytes of a rejected delta entry kept whole in a rejection; a larger one is listed as a
   * summary (`{ $summary: 'entry', bytes, domain, path, op }`), so a rejection stays small.
   */
  rejectedEntryBytes: 4096,
  /**
   * Default largest event payload written to the outbox, as JSON bytes (the gateway's
   * `limits.eventBytes`): events that can grow with what an agent reports are split into parts
   * under it, anything else over it is parked by the relay. Below NATS's default `max_payload`
   * (1 MiB) with room for the envelope.
   */
  eventBytes: 512 * 1024,
  /**
   * Default most bytes a gateway reads of one answer from an agent (the gateway's
   * `limits.agentResponseBytes`): a larger answer fails its call with
   * `FLEETGATE_AGENT_RESPONSE_TOO_LARGE`, and the task's deltas with it.
   */
  agentResponseBytes: 16 * 1024 * 1024,
} as const;

/** Path segments that would reach an object's prototype; never allowed in a delta path. */
export const FORBIDDEN_PATH_SEGMENTS: ReadonlySet<string> = new Set([
  '__proto__',
  'constructor',
  'prototype',
]);
