/**
 * The ids a gateway makes for a call's records rise with time: a dispatch's id and its
 * correlation id, an approval's id, and the proxy's task id. Their indexes (the dispatch's primary
 * key, the outbox by correlation, the inbox, the proxy's tasks) then take each new row at their
 * end instead of on a random page. Real SDK agent over loopback HTTP, a real SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { startOpsAgent } from '../examples/agents/index.js';
import type { Gateway } from '../src/service/index.js';
import { createGateway } from '../src/service/index.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function rising(ids: readonly string[]): boolean {
  return ids.every((id, i) => i === 0 || id > ids[i - 1]!);
}

describe('record ids', () => {
  let dir: string;
  let ops: RunningAgent;
  let gw: Gateway;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-record-ids-'));
    ops = await startOpsAgent();
    gw = await createGateway({
      store: `sqlite:${join(dir, 'gw.db')}`,
      agents: [{ name: 'ops', url: ops.url }],
      // sitrep (self) goes at once; bulk_migration (fleet) waits for one approver.
      policy: { approvalAtOrAbove: 'fleet', approvers: { fleet: 1 }, sweepInterval: '1h' },
    });
  });

  afterAll(async () => {
    await gw?.close();
    await ops?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("gives a call's dispatch and correlation time-ordered ids, in the order the calls came", async () => {
    const records = [];
    for (let i = 0; i < 12; i += 1) {
      const call = gw.dispatch({ agent: 'ops', skill: 'sitrep', text: 'status' });
      records.push(await call.result());
    }
    expect(records.every((r) => r.status === 'completed')).toBe(true);
    const ids = records.map((r) => r.id);
    const correlations = records.map((r) => r.correlationId);
    for (const id of [...ids, ...correlations]) expect(id).toMatch(V7);
    expect(rising(ids)).toBe(true);
    expect(rising(correlations)).toBe(true);
  });

  it('gives approvals time-ordered ids', async () => {
    const held = [];
    for (let i = 0; i < 4; i += 1) {
      const call = gw.dispatch({ agent: 'ops', skill: 'bulk_migration', text: `migrate ${i}` });
      const decision = await call.decision;
      expect(decision.action).toBe('hold');
      held.push(decision);
    }
    const approvalIds = held.map((d) => (d.action === 'hold' ? d.approvalId : undefined));
    for (const id of approvalIds) expect(id).toMatch(V7);
    expect(rising(approvalIds as string[])).toBe(true);
  });
});
