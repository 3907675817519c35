/**
 * `fleetgate calls` and `fleetgate call ID` as a user runs them against `fleetgate start` (a child
 * process) with a real SDK agent: the list with its filters, one call's story — the gate, the
 * approval waited for, what was sent, the task's end, the deltas and the world change, who
 * canceled it — and the mistakes a user makes (an unknown status or id, no gateway named).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentPlan } from '../examples/agents/index.js';
import { opsBehaviour } from '../examples/agents/index.js';
import { cliTestTimeout, runCli } from './support/cli.js';
import { api } from './support/gateway-service.js';
import { startOpsProxy, type OpsProxy } from './support/ops-proxy.js';

interface Dispatch {
  id: string;
  status: string;
  decision?: { approvalId?: string };
}

describe('fleetgate calls and fleetgate call', () => {
  let fixture: OpsProxy;
  /** Calls whose text is `hold` keep working at the agent until the suite ends. */
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const env = (): NodeJS.ProcessEnv => ({
    FLEETGATE_URL: fixture.gw.url,
    FLEETGATE_TOKEN: fixture.token,
  });
  const dispatch = async (skill: string, text: string, wait = ''): Promise<Dispatch> =>
    (
      await api<Dispatch>(fixture.gw.url, `/api/dispatch${wait}`, {
        body: { agent: 'ops', skill, text },
        token: fixture.token,
      })
    ).body;
  let done: Dispatch;
  let gated: Dispatch;

  beforeAll(async () => {
    fixture = await startOpsProxy('cli-calls', {
      behaviour: async (call): Promise<AgentPlan> => ({
        ...(await opsBehaviour(call)),
        ...(call.text === 'hold' ? { hold: held } : {}),
        ...(call.text === 'ask' ? { state: 'input-required' } : {}),
      }),
    });
    done = await dispatch('sitrep', 'status', '?wait=10s');
    gated = await dispatch('bulk_migration', 'migrate the issues');
  }, 60_000);

  afterAll(async () => {
    release();
    await fixture?.close();
  });

  it(
    'lists the calls newest first, filtered as asked, and says when none match',
    async () => {
      expect(done.status).toBe('completed');
      expect(gated.status).toBe('awaiting-approval');
      const all = await runCli(['calls'], env());
      expect(all.stderr).toBe('');
      expect(all.code).toBe(0);
      const rows = all.stdout.split('\n').slice(2).filter(Boolean);
      expect(rows[0]).toMatch(
        new RegExp(
          `^${gated.id.slice(-8)}\\s+ops/bulk_migration\\s+awaiting-approval\\s+\\d+s ago\\s+bob\\s+waiting for approval$`,
        ),
      );
      expect(rows[1]).toMatch(
        new RegExp(`^${done.id.slice(-8)}\\s+ops/sitrep\\s+completed\\s+.+bob`),
      );

      const completed = await runCli(['calls', '--status', 'completed', '--agent', 'ops'], env());
      expect(completed.stdout).toContain(done.id.slice(-8));
      expect(completed.stdout).not.toContain(gated.id.slice(-8));
      const none = await runCli(['calls', '--skill', 'no_such_skill'], env());
      expect(none).toMatchObject({ code: 0, stdout: 'no calls match\n' });

      // A page: the command for the next one, which starts after it.
      const page = await runCli(['calls', '--limit', '1', '--agent', 'ops'], env());
      expect(page.stdout).toContain(gated.id.slice(-8));
      const more = /^more: \S*fleetgate calls --agent ops --before (\S+)$/mu.exec(page.stdout);
      expect(more?.[1], page.stdout).toBe(gated.id);
      const next = await runCli(['calls', '--limit', '1', '--before', gated.id.slice(-8)], env());
      expect(next.stdout).toContain(done.id.slice(-8));
      expect(next.stdout).not.toContain(gated.id.slice(-8));

      const json = await runCli(['calls', '--limit', '1', '--json'], env());
      const answer = JSON.parse(json.stdout) as { dispatches: Dispatch[] };
      expect(answer.dispatches.map((d) => d.id)).toEqual([gated.id]);
    },
    cliTestTimeout(4),
  );

  it(
    "tells one call's story from its short id: the gate, what was sent, the task, deltas, world, end",
    async () => {
      const story = await runCli(['call', done.id.slice(-8)], env());
      expect(story.stderr).toBe('');
      expect(story.code).toBe(0);
      const lines = story.stdout.split('\n');
      expect(lines[0]).toMatch(new RegExp(`^${done.id.slice(-8)}\\s+ops/sitrep\\s+completed$`));
      expect(lines[1]).toContain(`call ${done.id}`);
      const steps = [
        'requested by bob through the HTTP API',
        'gate: allowed at once (no approval needed)',
        'sent to ops (message ',
        'task completed',
        '1 delta reported',
        'board data.lastSitrep set "green"',
        'ended completed',
        'world changed',
        'board data.lastSitrep: ',
      ].map((text) => lines.findIndex((l) => l.includes(text)));
      expect(
        steps.every((i) => i > 1),
        story.stdout,
      ).toBe(true);
      expect(steps.slice(0, 4)).toEqual([...steps.slice(0, 4)].sort((a, b) => a - b));

      const json = JSON.parse((await runCli(['call', done.id, '--json'], env())).stdout) as {
        dispatch: Dispatch;
      };
      expect(json.dispatch.id).toBe(done.id);
    },
    cliTestTimeout(2),
  );

  it(
    'says what a held call waits for and the command that approves it',
    async () => {
      const story = await runCli(['call', gated.id], env());
      expect(story.code).toBe(0);
      expect(story.stdout).toMatch(/gate: held \(gated\) at fleet/);
      expect(story.stdout).toContain('declared-radius: ');
      const approval = gated.decision?.approvalId;
      expect(approval).toBeDefined();
      expect(story.stdout).toMatch(
        new RegExp(`waiting for approval\\n\\s+\\S*fleetgate approvals approve ${approval}`),
      );
    },
    cliTestTimeout(1),
  );

  it(
    "shows the agent's question, the command that answers it, and the answer once given",
    async () => {
      const asking = await dispatch('sitrep', 'ask', '?wait=10s');
      expect(asking.status).toBe('awaiting-input');
      const waiting = await runCli(['call', asking.id], env());
      expect(waiting.stdout).toMatch(
        /the agent asked: .+ {2}\(question \S+\)\n.+waiting for an answer\n/u,
      );
      const question = /fleetgate approvals answer (\S+) 'ANSWER'/u.exec(waiting.stdout)?.[1];
      expect(question, waiting.stdout).toBeDefined();
      const answered = await runCli(['approvals', 'answer', question!, 'main'], env());
      expect(answered.code, answered.stderr).toBe(0);
      const story = await runCli(['call', asking.id], env());
      expect(story.stdout).toContain('answered by bob: main');
      expect(story.stdout).not.toContain('waiting for an answer');
    },
    cliTestTimeout(4),
  );

  it(
    'names who canceled a call and why',
    async () => {
      const running = await dispatch('sitrep', 'hold');
      expect(running.status).toBe('running');
      const canceled = await api<Dispatch>(fixture.gw.url, `/api/dispatches/${running.id}/cancel`, {
        body: { reason: 'wrong week' },
        token: fixture.token,
      });
      expect(canceled.body.status).toBe('canceled');
      const story = await runCli(['call', running.id.slice(-8)], env());
      expect(story.stdout).toContain('cancel requested by bob: wrong week');
      expect(story.stdout).toContain('FLEETGATE_DISPATCH_CANCELED: Canceled by bob: wrong week');
      const list = await runCli(['calls', '--status', 'canceled'], env());
      expect(list.stdout).toContain('FLEETGATE_DISPATCH_CANCELED: Canceled by bob: wrong week');
    },
    cliTestTimeout(2),
  );

  it(
    'refuses an unknown status, limit or id, naming what is allowed, and a missing gateway',
    async () => {
      const status = await runCli(['calls', '--status', 'done'], env());
      expect(status.code).toBe(2);
      expect(status.stderr).toContain(
        "argument 'done' is invalid. Allowed choices are awaiting-approval, running, awaiting-input, completed, failed, rejected, canceled.",
      );
      const limit = await runCli(['calls', '--limit', '501'], env());
      expect(limit.code).toBe(2);
      expect(limit.stderr).toContain('must be a whole number from 1 to 500');
      const words = await runCli(['calls', 'ops', 'failed'], env());
      expect(words.code).toBe(2);
      expect(words.stderr).toContain(
        "FLEETGATE_USAGE: fleetgate calls filters with flags; 'ops failed' is not read: write --agent ops --status failed (or --skill for a skill)",
      );
      const unknown = await runCli(['call', 'no-such-call'], env());
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/^FLEETGATE_DISPATCH_NOT_FOUND: No dispatch no-such-call/mu);
      const nowhere = await runCli(['calls'], { FLEETGATE_URL: '', FLEETGATE_TOKEN: '' });
      expect(nowhere.code).toBe(2);
      expect(nowhere.stderr).toContain('pass --url URL or set FLEETGATE_URL');
    },
    cliTestTimeout(4),
  );

  it(
    'finds a call by its short id after hundreds of newer calls, and asks for more of an id two calls share',
    async () => {
      // More calls after it than a page of the list: the short id is looked up at the gateway.
      for (let batch = 0; batch < 21; batch += 1) {
        await Promise.all(Array.from({ length: 25 }, () => dispatch('sitrep', 'status')));
      }
      const story = await runCli(['call', done.id.slice(-8)], env());
      expect(story.stderr).toBe('');
      expect(story.stdout).toContain(done.id);
      expect(story.stdout).toContain('completed');
      // The last character of an id is shared by many calls: the choice is the user's.
      const shared = await runCli(['call', done.id.slice(-1)], env());
      expect(shared.code).toBe(2);
      expect(shared.stderr).toMatch(
        /^FLEETGATE_USAGE: (At least )?\d+ dispatches have ids that end with/mu,
      );
    },
    cliTestTimeout(8),
  );
});
