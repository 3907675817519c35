/**
 * The stamps a Fleetgate caller puts on `SendMessageRequest.metadata`, read back typed on the
 * agent side, and the context builder that activates the declared extensions.
 */
import type { ServerCallContextBuilder } from '@a2a-js/sdk/server';
import { defaultServerCallContextBuilder } from '@a2a-js/sdk/server';
import type { BlastRadius, HitlMode } from '../protocol/index.js';
import { STAMPS, canonicalExtensionUri, parseHitlMode, parseRadius } from '../protocol/index.js';
import type { CardLike } from './card.js';

/** What the caller stamped on the request, typed. A stamp that is absent or invalid is left out. */
export interface CallerStamps {
  /** `x-effect-domain-skill`: the skill being invoked (effect-domain-v1). */
  skill?: string;
  /** `x-blast-radius`: the radius the caller gates this call as (blast-v1). */
  radius?: BlastRadius;
  /** `x-hitl-mode`: how the call was approved (hitl-mode-v1). */
  hitlMode?: HitlMode;
  /** `x-hitl-veto-ttl-ms`: the veto window, for `veto`. */
  vetoTtlMs?: number;
  /** `x-cost-skill`: the skill a cost sample belongs to (cost-v1). */
  costSkill?: string;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Reads the caller's stamps from request metadata (`requestContext.request.metadata`).
 *
 * @example
 * ```ts
 * const { skill, radius } = readCallerStamps(requestContext.request.metadata);
 * ```
 */
export function readCallerStamps(metadata: unknown): CallerStamps {
  const stamps: CallerStamps = {};
  if (typeof metadata !== 'object' || metadata === null) return stamps;
  const m = metadata as Record<string, unknown>;
  const skill = text(m[STAMPS.effectDomainSkill]);
  if (skill !== undefined) stamps.skill = skill;
  const radius = parseRadius(m[STAMPS.blastRadius]);
  if (radius !== undefined) stamps.radius = radius;
  const mode = parseHitlMode(m[STAMPS.hitlMode]);
  if (mode !== undefined) stamps.hitlMode = mode;
  const ttl = Number(m[STAMPS.hitlVetoTtlMs]);
  if (m[STAMPS.hitlVetoTtlMs] !== undefined && Number.isSafeInteger(ttl) && ttl > 0) {
    stamps.vetoTtlMs = ttl;
  }
  const costSkill = text(m[STAMPS.costSkill]);
  if (costSkill !== undefined) stamps.costSkill = costSkill;
  return stamps;
}

/** The canonical URIs a card declares, with the URI each was declared under. */
export function declaredExtensionUris(card: CardLike): Map<string, string> {
  const out = new Map<string, string>();
  const extensions = card.capabilities?.extensions;
  if (!Array.isArray(extensions)) return out;
  for (const e of extensions as readonly unknown[]) {
    if (typeof e !== 'object' || e === null) continue;
    const uri = (e as { uri?: unknown }).uri;
    if (typeof uri !== 'string' || uri === '') continue;
    out.set(uri, uri);
    const canonical = canonicalExtensionUri(uri);
    if (!out.has(canonical)) out.set(canonical, uri);
  }
  return out;
}

/**
 * A `contextBuilder` for the SDK's transport handlers that activates every extension the caller
 * asks for (`A2A-Extensions`, `X-A2A-Extensions` on v0.3) and the card declares, so the agent
 * echoes them. Activation has to happen here, before the executor runs: on JSON-RPC streaming the
 * SDK writes the response headers before the executor starts, and an activation made in the
 * executor is never echoed there.
 *
 * @param next the builder to extend (default: the SDK's default builder).
 *
 * @example
 * ```ts
 * app.use('/a2a', jsonRpcHandler({ requestHandler, userBuilder, contextBuilder: activateExtensions(card) }));
 * ```
 */
export function activateExtensions(
  card: CardLike,
  next: ServerCallContextBuilder = defaultServerCallContextBuilder,
): ServerCallContextBuilder {
  const declared = declaredExtensionUris(card);
  return (options) => {
    const context = next(options);
    for (const uri of options.extensions ?? []) {
      if (declared.has(uri)) context.addActivatedExtension(uri);
    }
    return context;
  };
}
