/**
 * "ops": an example agent on the agent-author kit. Its card declares blast-v1, hitl-mode-v1,
 * effect-domain-v1 and cost-v1 with the kit's helpers; each skill reports what it changed and a
 * cost sample through the kit, which sends them once, on the artifact that ends the task.
 */
import { AgentCard } from '@a2a-js/sdk';
import {
  declareBlast,
  declareCost,
  declareEffectDomain,
  declareHitlMode,
} from '../../src/agent/index.js';
import type { WorldStateDeltaEntry } from '../../src/protocol/index.js';
import {
  startAgent,
  textPart,
  type AgentBehaviour,
  type ExampleExtensionDeclaration,
  type RunningAgent,
  type StartAgentOptions,
} from './harness.js';

/** Skills of the ops agent with their declarations. */
export const OPS_SKILLS = {
  sitrep: { radius: 'self', mode: 'autonomous', domains: ['board'] },
  pr_review: { radius: 'repo', mode: 'veto', vetoTtlMs: 60_000, domains: ['ci', 'board'] },
  bulk_migration: { radius: 'fleet', mode: 'gated', domains: ['github_issues'] },
} as const;

/** The deltas each ops skill reports. */
export const OPS_DELTAS: Readonly<Record<string, WorldStateDeltaEntry[]>> = {
  sitrep: [{ domain: 'board', path: 'data.lastSitrep', op: 'set', value: 'green' }],
  pr_review: [
    { domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 },
    { domain: 'board', path: 'data.untriaged', op: 'inc', value: -1 },
  ],
  bulk_migration: [{ domain: 'github_issues', path: 'data.migrated', op: 'push', value: 'repo-a' }],
};

/**
 * Writes the ops agent's declarations on a card with the kit's helpers; `vetoTtlMs` replaces
 * pr_review's veto window (60 s).
 */
export function declareOps(card: AgentCard, options: { vetoTtlMs?: number } = {}): AgentCard {
  const skills = Object.entries(OPS_SKILLS).map(([id, d]) =>
    options.vetoTtlMs !== undefined && 'vetoTtlMs' in d
      ? ([id, { ...d, vetoTtlMs: options.vetoTtlMs }] as const)
      : ([id, d] as const),
  );
  let out = declareBlast(card, Object.fromEntries(skills.map(([id, d]) => [id, d.radius])));
  out = declareHitlMode(
    out,
    Object.fromEntries(
      skills.map(([id, d]) => [
        id,
        'vetoTtlMs' in d ? { mode: d.mode, vetoTtlMs: d.vetoTtlMs } : d.mode,
      ]),
    ),
  );
  out = declareEffectDomain(
    out,
    Object.fromEntries(skills.map(([id, d]) => [id, { domains: [...d.domains] }])),
  );
  return declareCost(out);
}

/** The extension declarations of the ops agent's card (as the kit writes them). */
export function opsDeclarations(): ExampleExtensionDeclaration[] {
  const skills = Object.keys(OPS_SKILLS).map((id) => ({ id, name: id, description: id, tags: [] }));
  const card = declareOps(AgentCard.fromJSON({ skills }));
  return (card.capabilities?.extensions ?? []).map((e) => ({
    uri: e.uri,
    description: e.description,
    ...(e.params === undefined ? {} : { params: e.params }),
  }));
}

/** The ops agent's default behaviour: a summary artifact; the deltas and a cost sample reported. */
export const opsBehaviour: AgentBehaviour = (call) => {
  const skill = call.skill ?? 'sitrep';
  const deltas = OPS_DELTAS[skill] ?? [];
  return {
    artifacts: [[textPart(`${skill}: ${deltas.length} change(s)`)]],
    deltas,
    cost: { usage: { input_tokens: 120, output_tokens: 40 }, costUsd: 0.0021 },
  };
};

/** Starts the ops agent. */
export function startOpsAgent(
  options: {
    port?: number;
    legacy?: boolean;
    streaming?: boolean;
    pushNotifications?: boolean;
    behaviour?: AgentBehaviour;
    decorateHandler?: StartAgentOptions['decorateHandler'];
    /** pr_review's veto window instead of 60 s. */
    vetoTtlMs?: number;
  } = {},
): Promise<RunningAgent> {
  return startAgent({
    name: 'ops',
    description:
      'Reviews PRs, reports sitreps and migrates repos; reports its world-state changes.',
    ...(options.port === undefined ? {} : { port: options.port }),
    legacy: options.legacy ?? false,
    streaming: options.streaming ?? false,
    pushNotifications: options.pushNotifications ?? false,
    skills: Object.keys(OPS_SKILLS).map((id) => ({ id })),
    declare: (card) =>
      declareOps(card, options.vetoTtlMs === undefined ? {} : { vetoTtlMs: options.vetoTtlMs }),
    behaviour: options.behaviour ?? opsBehaviour,
    ...(options.decorateHandler === undefined ? {} : { decorateHandler: options.decorateHandler }),
  });
}
