/**
 * "ops": an example agent that declares blast-v1, hitl-mode-v1, effect-domain-v1 and cost-v1 and
 * reports what each skill changed as worldstate-delta parts, plus a cost-v1 sample.
 */
import {
  BLAST_V1_URI,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  HITL_MODE_V1_URI,
  createCostPart,
  createWorldStateDeltaPart,
  type WorldStateDeltaEntry,
} from '../../src/protocol/index.js';
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

/** The extension declarations of the ops agent's card. */
export function opsDeclarations(): ExampleExtensionDeclaration[] {
  const blast: Record<string, unknown> = {};
  const hitl: Record<string, unknown> = {};
  const domains: Record<string, unknown> = {};
  for (const [skill, d] of Object.entries(OPS_SKILLS)) {
    blast[skill] = { radius: d.radius };
    hitl[skill] = 'vetoTtlMs' in d ? { mode: d.mode, vetoTtlMs: d.vetoTtlMs } : { mode: d.mode };
    domains[skill] = { domains: [...d.domains] };
  }
  return [
    { uri: BLAST_V1_URI, params: { skills: blast } },
    { uri: HITL_MODE_V1_URI, params: { skills: hitl } },
    { uri: EFFECT_DOMAIN_V1_URI, params: { skills: domains } },
    { uri: COST_V1_URI },
  ];
}

/** The ops agent's default behaviour: one artifact with a summary, the deltas and a cost sample. */
export const opsBehaviour: AgentBehaviour = (call) => {
  const skill = call.skill ?? 'sitrep';
  const deltas = OPS_DELTAS[skill] ?? [];
  return {
    artifacts: [
      [
        textPart(`${skill}: ${deltas.length} change(s)`),
        createWorldStateDeltaPart(deltas),
        createCostPart({ usage: { input_tokens: 120, output_tokens: 40 }, costUsd: 0.0021 }),
      ],
    ],
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
    extensions: opsDeclarations(),
    behaviour: options.behaviour ?? opsBehaviour,
    ...(options.decorateHandler === undefined ? {} : { decorateHandler: options.decorateHandler }),
  });
}
