/**
 * The wire identifiers of the extensions: URIs, part MIME types and request-metadata stamp keys.
 * This module is the only place in Fleetgate that spells them.
 */

/** effect-domain-v1: the agent reports the world-state mutations a skill call made. */
export const EFFECT_DOMAIN_V1_URI = 'https://proto-labs.ai/a2a/ext/effect-domain-v1';
/** blast-v1: per-skill declaration of how wide a skill's effect can be. */
export const BLAST_V1_URI = 'https://proto-labs.ai/a2a/ext/blast-v1';
/** hitl-mode-v1: per-skill human-in-the-loop approval mode. */
export const HITL_MODE_V1_URI = 'https://proto-labs.ai/a2a/ext/hitl-mode-v1';
/** cost-v1: per-call usage and cost samples. */
export const COST_V1_URI = 'https://proto-labs.ai/a2a/ext/cost-v1';
/**
 * The older URI of effect-domain-v1. Agents that declare it are treated as declaring
 * {@link EFFECT_DOMAIN_V1_URI}; Fleetgate never declares or sends it itself.
 */
export const WORLDSTATE_DELTA_V1_URI = 'https://proto-labs.ai/a2a/ext/worldstate-delta-v1';

/** Every extension URI Fleetgate implements, in canonical form. */
export const EXTENSION_URIS = [
  EFFECT_DOMAIN_V1_URI,
  BLAST_V1_URI,
  HITL_MODE_V1_URI,
  COST_V1_URI,
] as const;

/** One of {@link EXTENSION_URIS}. */
export type ExtensionUri = (typeof EXTENSION_URIS)[number];

/** Older URIs and the canonical URI each stands for. */
export const EXTENSION_URI_ALIASES: Readonly<Record<string, ExtensionUri>> = {
  [WORLDSTATE_DELTA_V1_URI]: EFFECT_DOMAIN_V1_URI,
};

/** The canonical form of an extension URI: aliases map to their canonical URI, others unchanged. */
export function canonicalExtensionUri(uri: string): string {
  return EXTENSION_URI_ALIASES[uri] ?? uri;
}

/** MIME type of a worldstate-delta data part, carried in the part's `metadata.mimeType`. */
export const WORLDSTATE_DELTA_MIME = 'application/vnd.protolabs.worldstate-delta-v1+json';
/** MIME type of a cost-v1 data part, carried in the part's `metadata.mimeType`. */
export const COST_MIME = 'application/vnd.protolabs.cost-v1+json';
/** The part-metadata key that carries a data part's MIME type (the extensions' convention). */
export const PART_MIME_METADATA_KEY = 'mimeType';

/** Request-metadata keys the caller-side extensions stamp on `SendMessageRequest.metadata`. */
export const STAMPS = {
  /** effect-domain-v1: the skill being invoked. */
  effectDomainSkill: 'x-effect-domain-skill',
  /** blast-v1: the radius the agent declared for the skill. */
  blastRadius: 'x-blast-radius',
  /** hitl-mode-v1: the approval mode declared for the skill. */
  hitlMode: 'x-hitl-mode',
  /** hitl-mode-v1: the veto window in milliseconds, only for `veto`. */
  hitlVetoTtlMs: 'x-hitl-veto-ttl-ms',
  /** cost-v1: the skill the cost sample belongs to. */
  costSkill: 'x-cost-skill',
} as const;

/** Well-known paths of an agent card, current first. */
export const AGENT_CARD_PATHS = [
  '/.well-known/agent-card.json',
  '/.well-known/agent.json',
] as const;

/**
 * The header v0.3 peers read and write the activated extensions under (v1.0: `A2A-Extensions`).
 * Spelled here so the caller never loads the SDK's v0.3 layer just for a header name.
 */
export const LEGACY_EXTENSIONS_HEADER = 'X-A2A-Extensions';

/**
 * The Fleetgate gateway's own card entry, on every card its A2A proxy serves: calls go through the
 * gateway's policy gate; the entry tells clients how to name the skill they call.
 */
export const FLEETGATE_GATEWAY_V1_URI = 'https://proto-labs.ai/a2a/ext/fleetgate-gateway-v1';

/**
 * Metadata keys a client of the A2A proxy names its skill with (message or request metadata), in
 * the order they are read: effect-domain-v1's own stamp, then Fleetgate's.
 */
export const SKILL_HINT_KEYS = ['x-effect-domain-skill', 'fleetgate.skill'] as const;
