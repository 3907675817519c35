/**
 * The card the proxy serves for an agent: the agent's last good card with every interface moved to
 * the gateway (JSON-RPC at `/a2a/<agent>`, HTTP+JSON at `/a2a/<agent>/rest`, each in v1.0 and v0.3),
 * its extensions kept, the gateway's bearer auth in place of the agent's, no signature (the agent's
 * would not match), and one more extension entry telling clients how to name a skill.
 */
import { AgentCard } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { toSdkAgentCard } from '../../dispatch/index.js';
import { FLEETGATE_GATEWAY_V1_URI, SKILL_HINT_KEYS } from '../../protocol/index.js';

/** Where the proxy serves an agent: `<publicUrl>/a2a/<agent>`. */
export function proxyBaseUrl(publicUrl: string, agent: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/a2a/${encodeURIComponent(agent)}`;
}

/**
 * The proxy's card of an agent, built from the card the fleet last fetched.
 *
 * @throws FleetgateError `FLEETGATE_CARD_INVALID` when the fetched card does not decode.
 */
export async function proxyCard(options: {
  agent: string;
  card: unknown;
  publicUrl: string;
}): Promise<AgentCard> {
  const base = proxyBaseUrl(options.publicUrl, options.agent);
  const source = await toSdkAgentCard(options.card, options.agent);
  const json = AgentCard.toJSON(source) as Record<string, unknown>;
  const capabilities = (json['capabilities'] ?? {}) as Record<string, unknown>;
  const extensions = Array.isArray(capabilities['extensions'])
    ? (capabilities['extensions'] as Record<string, unknown>[]).filter(
        (e) => e['uri'] !== FLEETGATE_GATEWAY_V1_URI,
      )
    : [];
  const skills = source.skills.map((s) => s.id);
  extensions.push({
    uri: FLEETGATE_GATEWAY_V1_URI,
    description:
      `Calls go through the Fleetgate gateway's policy gate. Name the skill you call in the ` +
      `message or request metadata under ${SKILL_HINT_KEYS.map((k) => `"${k}"`).join(' or ')}; ` +
      (skills.length === 1
        ? `this agent has one skill, ${skills[0]}, used when none is named.`
        : `without one, the call is gated as the agent's widest-radius skill.`) +
      ' A call that needs approval answers in input-required with the approval id; it goes on once approved.',
    required: false,
    params: {
      skillHintKeys: [...SKILL_HINT_KEYS],
      skills,
      ...(skills.length === 1 ? { defaultSkill: skills[0] } : {}),
    },
  });
  const interfaces = duplicateInterfacesForLegacy(
    [
      { url: base, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url: `${base}/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
    ],
    ['JSONRPC', 'HTTP+JSON'],
  );
  const { signatures: _signatures, ...rest } = json;
  return AgentCard.fromJSON({
    ...rest,
    supportedInterfaces: interfaces,
    capabilities: {
      ...capabilities,
      streaming: true,
      pushNotifications: true,
      extensions,
    },
    securitySchemes: {
      fleetgate: {
        httpAuthSecurityScheme: {
          scheme: 'Bearer',
          description: 'A Fleetgate gateway API token (auth.tokens in the gateway configuration).',
        },
      },
    },
    securityRequirements: [{ schemes: { fleetgate: { list: [] } } }],
  });
}
