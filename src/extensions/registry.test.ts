import { describe, expect, it } from 'vitest';

import { isFleetgateError } from '../protocol/index.js';
import {
  BLAST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  HITL_MODE_V1_URI,
  WORLDSTATE_DELTA_V1_URI,
} from '../protocol/index.js';
import { ExtensionRegistry } from './registry.js';
import type { Extension } from './types.js';

const ext = (uri: string): Extension => ({ uri, description: uri });

function card(...uris: string[]) {
  return {
    name: 'a',
    description: 'a',
    version: '1',
    supportedInterfaces: [{ url: 'http://x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { extensions: uris.map((uri) => ({ uri })) },
    skills: [],
  };
}

describe('ExtensionRegistry', () => {
  it('throws FLEETGATE_EXTENSION_ALREADY_REGISTERED on a second registration of one URI', () => {
    const registry = new ExtensionRegistry().register(ext(BLAST_V1_URI));
    let caught: unknown;
    try {
      registry.register(ext(BLAST_V1_URI));
    } catch (error) {
      caught = error;
    }
    expect(isFleetgateError(caught, 'FLEETGATE_EXTENSION_ALREADY_REGISTERED')).toBe(true);
    expect(registry.list()).toHaveLength(1);
  });

  it('treats an alias URI as the same extension when registering', () => {
    const registry = new ExtensionRegistry().register(ext(EFFECT_DOMAIN_V1_URI));
    expect(() => registry.register(ext(WORLDSTATE_DELTA_V1_URI))).toThrow(/already registered/);
  });

  it('selects only the extensions the card declares, in registration order', () => {
    const registry = new ExtensionRegistry()
      .register(ext(HITL_MODE_V1_URI))
      .register(ext(BLAST_V1_URI))
      .register(ext(EFFECT_DOMAIN_V1_URI));
    const selected = registry.forCard(card(EFFECT_DOMAIN_V1_URI, HITL_MODE_V1_URI));
    expect(selected.map((e) => e.extension.uri)).toEqual([HITL_MODE_V1_URI, EFFECT_DOMAIN_V1_URI]);
  });

  it('matches a card declaring the older worldstate-delta-v1 URI to effect-domain-v1', () => {
    const registry = new ExtensionRegistry().register(ext(EFFECT_DOMAIN_V1_URI));
    expect(registry.forCard(card(WORLDSTATE_DELTA_V1_URI)).map((e) => e.extension.uri)).toEqual([
      EFFECT_DOMAIN_V1_URI,
    ]);
  });

  it('selects nothing for a card without extensions or with only unknown ones', () => {
    const registry = new ExtensionRegistry().register(ext(BLAST_V1_URI));
    expect(registry.forCard(card())).toEqual([]);
    expect(registry.forCard(card('https://example.com/other'))).toEqual([]);
    expect(registry.forCard({ not: 'a card' })).toEqual([]);
  });

  it('matches custom extensions by exact URI', () => {
    const registry = new ExtensionRegistry().register(ext('https://example.com/ext/x'));
    expect(registry.forCard(card('https://example.com/ext/x'))).toHaveLength(1);
    expect(registry.forCard(card('https://example.com/ext/x/'))).toHaveLength(0);
  });

  it('records the required flag and bumps its version on every registration', () => {
    const registry = new ExtensionRegistry();
    const v0 = registry.version;
    registry.register(ext(BLAST_V1_URI), { required: true });
    expect(registry.version).toBe(v0 + 1);
    expect(registry.get(BLAST_V1_URI)?.required).toBe(true);
  });
});
