/**
 * What an agent card declares for the extensions (blast-v1, hitl-mode-v1, effect-domain-v1), per
 * skill, and the diagnostics of reading it.
 */
import type { ErrorCode } from './errors.js';
import type { HitlMode } from './hitl.js';
import type { BlastRadius } from './radius.js';

/** How serious a card problem is: an error drops the entry, a warning keeps it. */
export type DiagnosticSeverity = 'error' | 'warning';

/** One problem found in an agent card, with the JSON path where it is. */
export interface Diagnostic {
  /** JSON path into the card, e.g. `capabilities.extensions[2].params.skills.deploy.radius`. */
  path: string;
  severity: DiagnosticSeverity;
  message: string;
  /**
   * The error code of a problem that has one: `FLEETGATE_LIMIT_EXCEEDED` when a size or count
   * limit cut the card short (the message names the limit and what was read).
   */
  code?: ErrorCode;
}

/** Adds one diagnostic (the card readers report through it, never throw). */
export type Report = (
  path: string,
  severity: DiagnosticSeverity,
  message: string,
  code?: ErrorCode,
) => void;

/** A skill's blast-v1 declaration. */
export interface BlastDeclaration {
  radius: BlastRadius;
  note?: string;
}

/** A skill's hitl-mode-v1 declaration. */
export interface HitlModeDeclaration {
  mode: HitlMode;
  vetoTtlMs?: number;
  reviewer?: 'operator';
  note?: string;
}

/** A skill's effect-domain-v1 declaration: the domains it may change. */
export interface EffectDomainDeclaration {
  domains: string[];
}

/** One entry of the card's `capabilities.extensions`. */
export interface DeclaredExtension {
  /** The URI as the card spells it. */
  uri: string;
  /** The canonical URI (aliases resolved). */
  canonicalUri: string;
  required: boolean;
  /** True when Fleetgate implements this extension. */
  known: boolean;
  /** Where it is in the card. */
  path: string;
}

/** What a card declares for the extensions, per skill, plus every problem found. */
export interface Declarations {
  /** Every declared extension, first declaration of each URI only. */
  declared: DeclaredExtension[];
  /** Canonical URIs of every declared extension, in card order, without repeats. */
  extensions: string[];
  blast: Record<string, BlastDeclaration>;
  hitlMode: Record<string, HitlModeDeclaration>;
  effectDomain: Record<string, EffectDomainDeclaration>;
  /** The skill ids of `card.skills`. */
  skills: string[];
  diagnostics: Diagnostic[];
}
