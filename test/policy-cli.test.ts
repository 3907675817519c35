/**
 * `fleetgate approvals` against a running gateway's store: the CLI writes the decision, the
 * gateway's sweep sends the held call. (`policy explain` asks the gateway itself: service-cli.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { startOpsAgent } from '../examples/agents/index.js';
import type { CliIo } from '../src/cli/index.js';
import { main } from '../src/cli/index.js';
import type { ApprovalRecord } from '../src/policy/index.js';
import type { Gateway } from '../src/service/index.js';
import { createGateway } from '../src/service/index.js';

function capture(): CliIo & { stdout: string; stderr: string } {
  const io = {
    stdout: '',
    stderr: '',
    color: false,
    version: '0.0.0-test',
    out(text: string) {
      io.stdout += text;
    },
    err(text: string) {
      io.stderr += text;
    },
  };
  return io;
}

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const io = capture();
  const code = await main(['node', 'fleetgate', ...args], io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

describe('fleetgate approvals on the store', () => {
  let dir: string;
  let url: string;
  let configFile: string;
  let ops: RunningAgent;
  let gw: Gateway;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-policy-cli-'));
    url = `sqlite:${join(dir, 'gw.db')}`;
    ops = await startOpsAgent();
    configFile = join(dir, 'fleetgate.yaml');
    writeFileSync(
      configFile,
      `store: ${url}\nagents:\n  - name: ops\n    url: ${ops.url}\npolicy:\n  sweepInterval: 1h\n`,
    );
    gw = await createGateway({
      store: url,
      agents: [{ name: 'ops', url: ops.url }],
      policy: { sweepInterval: '1h' },
    });
  });

  afterAll(async () => {
    await gw?.close();
    await ops?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists pending approvals, approves one; the gateway then sends the call once', async () => {
    const record = await gw
      .dispatch({
        agent: 'ops',
        skill: 'bulk_migration',
        text: 'cli-1',
        requestedBy: 'bob',
      })
      .answered();
    const table = await cli('approvals', '--store', url);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/ops\/bulk_migration\s+fleet\s+gated\s+1h\s+0\/1\s+github_issues/);

    const json = await cli('approvals', '--store', url, '--json');
    const [approval] = (JSON.parse(json.stdout) as ApprovalRecord[]).filter(
      (a) => a.dispatchId === record.id,
    );
    expect(approval).toBeDefined();

    const self = await cli('approvals', 'approve', approval!.id, '--by', 'bob', '--store', url);
    expect(self.code).toBe(2);
    expect(self.stderr).toContain('FLEETGATE_APPROVAL_SELF');

    const ok = await cli(
      'approvals',
      'approve',
      approval!.id,
      '--by',
      'alice',
      '--reason',
      'fine',
      '--store',
      url,
    );
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('approved');
    expect(ops.received.filter((c) => c.text === 'cli-1')).toHaveLength(0);

    await gw.approvals.sweep();
    expect(await gw.dispatchRecord(record.id)).toMatchObject({ status: 'completed' });
    expect(ops.received.filter((c) => c.text === 'cli-1')).toHaveLength(1);

    const again = await cli('approvals', 'reject', approval!.id, '--store', url);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('FLEETGATE_APPROVAL_ALREADY_DECIDED'); // The same decision again is nothing to do: a note, exit 0.
    const same = await cli('approvals', 'approve', approval!.id, '--by', 'alice', '--store', url);
    expect(same).toMatchObject({ code: 0, stderr: '' });
    expect(same.stdout).toMatch(new RegExp(`${approval!.id}: already consumed by \\S+`));
  });

  it('snoozes without rejecting', async () => {
    const record = await gw
      .dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'cli-2' })
      .answered();
    const approval = (await gw.approvals.list()).find((a) => a.dispatchId === record.id)!;
    const snoozed = await cli('approvals', 'snooze', approval.id, '--for', '10m', '--store', url);
    expect(snoozed.code).toBe(0);
    expect((await cli('approvals', '--store', url)).stdout).not.toContain(approval.id);
    expect((await cli('approvals', '--all', '--store', url)).stdout).toContain(approval.id);
    expect((await gw.approvals.get(approval.id))?.status).toBe('pending');
    // A snooze never outlasts the request, however long it was asked for.
    const long = await cli(
      'approvals',
      'snooze',
      approval.id,
      '--for',
      '99999999999h',
      '--store',
      url,
    );
    expect(long.code).toBe(0);
    const held = (await gw.approvals.get(approval.id))!;
    expect(held.snoozedUntil).toBe(held.expiresAt);
    expect((await gw.approvals.snooze(approval.id, 'alice', 10 ** 20)).snoozedUntil).toBe(
      held.expiresAt,
    );
    // Only a task's question takes an answer.
    const answer = await cli('approvals', 'answer', approval.id, 'yes', '--store', url);
    expect(answer.code).toBe(2);
    expect(answer.stderr).toContain('FLEETGATE_USAGE');
    await gw.approvals.reject(approval.id, 'alice');
  });
});
