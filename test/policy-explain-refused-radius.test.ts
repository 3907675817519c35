/**
 * The gate's reasons for a skill whose card declares a radius the card reader refused
 * (`radius: "galaxy"`): a radius was declared, an invalid one, and the reason says so, naming the
 * reader's diagnostic (the one `agents --json` shows). A real card server and a real gateway.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../src/service/index.js';
import { createGateway } from '../src/service/index.js';
import type { CardServer } from './support/card-server.js';
import { cardWith, startCardServer } from './support/card-server.js';

describe('policy explain: a refused blast-v1 radius', () => {
  let server: CardServer;
  let dir: string;
  let gw: Gateway;

  beforeAll(async () => {
    server = await startCardServer();
    const card = cardWith('lab', { declared: 'repo', galaxy: 'galaxy' }) as { skills: unknown[] };
    card.skills.push({ id: 'bare', name: 'bare', description: 'bare', tags: [] });
    server.set('lab', { type: 'card', card });
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-refused-radius-'));
    gw = await createGateway({
      store: `sqlite:${join(dir, 'gw.db')}`,
      agents: [{ name: 'lab', url: server.urlOf('lab') }],
    });
  });

  afterAll(async () => {
    await gw?.close();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('says the declared radius was refused, and why; a skill without one says none was declared', async () => {
    const path = 'capabilities.extensions[0].params.skills.galaxy.radius';
    expect(gw.agents.state('lab')!.diagnostics).toContainEqual(
      expect.objectContaining({ path, severity: 'error' }),
    );
    const galaxy = await gw.approvals.explain('lab', 'galaxy');
    expect(galaxy.decision.effectiveRadius).toBe('public');
    expect(galaxy.decision.reasons[0]).toEqual({
      kind: 'radius-unknown',
      detail: `blast-v1 radius declared but refused (${path}: unknown radius "galaxy"; expected one of self, project, repo, fleet, public)`,
    });
    const bare = await gw.approvals.explain('lab', 'bare');
    expect(bare.decision.reasons[0]).toEqual({
      kind: 'radius-unknown',
      detail: 'no blast-v1 radius declared',
    });
  });
});
