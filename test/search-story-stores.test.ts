/**
 * The dashboard's search and story API on each store the gateway runs on: `fleetgate start` on a
 * SQLite file and on a PostgreSQL schema of its own (skipped, loudly, when the server cannot be
 * reached) gets the same calls — sitreps whose deltas carry their text, gated migrations approved
 * or rejected by named approvers — and must answer the same searches (dispatches, world changes,
 * approval history; filters, counts, cursor pages) and the same call stories.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opsBehaviour, startOpsAgent, textPart } from '../examples/agents/index.js';
import type { RunningAgent } from '../examples/agents/index.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, startServiceProcess } from './support/gateway-service.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';

const pgUp = await requirePostgres();

const TOKENS = {
  root: 'search-root-token-0123456789',
  olive: 'search-olive-token-012345678',
  alice: 'search-alice-token-012345678',
} as const;

/** Sitrep calls made, oldest first; their deltas set `board` `data.lastSitrep` to their text. */
const SITREPS = 12;

interface Page<T> {
  items: T[];
  next: string | null;
  total: number | null;
}
interface DispatchItem {
  id: string;
  agent: string;
  skill: string;
  status: string;
  taskId: string | null;
  createdAt: number;
  radius: string | null;
}
interface EffectItem {
  seq: number;
  domain: string;
  path: string;
  op: string;
  value: unknown;
  previous: unknown;
  next: unknown;
  agent: string;
  skill: string;
  taskId: string;
}
interface ApprovalItem {
  id: string;
  dispatchId: string;
  status: string;
  requestedBy: string | null;
  decidedBy: string | null;
  reason: string | null;
  radius: string | null;
  createdAt: number;
}
interface Dispatched {
  id: string;
  status: string;
  taskId?: string;
  decision: { approvalId?: string };
}
interface Story {
  dispatch: { id: string; status: string; taskId: string | null };
  send: { messageId: string } | null;
  task: { state: string } | null;
  events: { topic: string; at: number; payload: Record<string, unknown> }[];
  approvals: { id: string; status: string; decidedBy: string | null }[];
  effects: {
    seq: number;
    domain: string;
    path: string;
    op: string;
    value: unknown;
    previous: unknown;
    next: unknown;
  }[];
  cost: Record<string, unknown> | null;
}

const STORES = [
  { kind: 'sqlite', skip: false },
  { kind: 'postgres', skip: !pgUp },
] as const;

for (const variant of STORES) {
  describe.skipIf(variant.skip)(`search and call stories on ${variant.kind}`, () => {
    const schema = uniqueName('fgsearch');
    let dir: string;
    let agent: RunningAgent;
    let gw: ServiceProcess;
    /** Sitrep dispatch ids, oldest first. */
    const sitreps: string[] = [];
    /** The gated migrations: approved by alice, approved by root, rejected by alice. */
    const gated: { byAlice: string; byRoot: string; rejected: string } = {
      byAlice: '',
      byRoot: '',
      rejected: '',
    };

    const get = async <T>(path: string, token: string = TOKENS.olive): Promise<T> => {
      const answer = await api<T>(gw.url, path, { token });
      if (answer.status !== 200) {
        throw new Error(`GET ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
      }
      return answer.body;
    };
    /** Every page of a search, `limit` at a time, following `next`. */
    const allPages = async <T>(path: string, limit: number): Promise<Page<T>[]> => {
      const pages: Page<T>[] = [];
      let cursor: string | null = null;
      do {
        const more: string =
          cursor === null ? '' : `&count=false&cursor=${encodeURIComponent(cursor)}`;
        const page: Page<T> = await get<Page<T>>(`${path}&limit=${limit}${more}`);
        pages.push(page);
        cursor = page.next;
      } while (cursor !== null && pages.length < 50);
      return pages;
    };
    const dispatch = async (skill: string, text: string): Promise<Dispatched> => {
      const answer = await api<Dispatched>(gw.url, '/api/dispatch?wait=10s', {
        token: TOKENS.olive,
        body: { agent: 'ops', skill, text },
      });
      if (answer.status >= 300 && answer.status !== 202) {
        throw new Error(`dispatch ${skill}: ${answer.status} ${JSON.stringify(answer.body)}`);
      }
      return answer.body;
    };
    const decide = async (
      approvalId: string,
      verb: 'approve' | 'reject',
      token: string,
      reason: string,
    ): Promise<void> => {
      const answer = await api(gw.url, `/api/approvals/${approvalId}/${verb}`, {
        token,
        body: { reason },
      });
      if (answer.status !== 200) {
        throw new Error(`${verb} ${approvalId}: ${answer.status} ${JSON.stringify(answer.body)}`);
      }
    };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'fleetgate-search-'));
      agent = await startOpsAgent({
        behaviour: async (call) => {
          const plan = await opsBehaviour(call);
          if (call.skill !== 'sitrep') return plan;
          return {
            ...plan,
            artifacts: [[textPart(`sitrep for ${call.text}`)]],
            deltas: [{ domain: 'board', path: 'data.lastSitrep', op: 'set', value: call.text }],
          };
        },
      });
      const config = join(dir, 'fleetgate.yaml');
      writeFileSync(
        config,
        [
          'listen: { host: 127.0.0.1, port: 0 }',
          variant.kind === 'postgres'
            ? `store: ${PG_URL}?schema=${schema}`
            : `store: sqlite:${join(dir, 'fleetgate.db')}`,
          'bus: memory',
          `agents: [{ name: ops, url: ${agent.url} }]`,
          'policy: { sweepInterval: 200ms }',
          'auth:',
          '  tokens:',
          '    - { name: root, tokenEnv: S_ROOT, roles: [admin] }',
          '    - { name: olive, tokenEnv: S_OLIVE, roles: [operator] }',
          '    - { name: alice, tokenEnv: S_ALICE, roles: [approver] }',
        ].join('\n'),
      );
      gw = await startServiceProcess({
        cwd: dir,
        args: ['--config', config],
        env: { S_ROOT: TOKENS.root, S_OLIVE: TOKENS.olive, S_ALICE: TOKENS.alice },
      });
      // One after the other, so their order is their creation order.
      for (let i = 0; i < SITREPS; i += 1) {
        const done = await dispatch('sitrep', `report ${i}`);
        expect(done.status).toBe('completed');
        sitreps.push(done.id);
      }
      const held = [];
      for (const text of ['org A', 'org B', 'org C']) {
        const answer = await dispatch('bulk_migration', `migrate ${text}`);
        expect(answer.status).toBe('awaiting-approval');
        held.push(answer);
      }
      await decide(held[0]!.decision.approvalId!, 'approve', TOKENS.alice, 'planned');
      await decide(held[1]!.decision.approvalId!, 'approve', TOKENS.root, 'planned too');
      await decide(held[2]!.decision.approvalId!, 'reject', TOKENS.alice, 'not now 100%');
      gated.byAlice = held[0]!.id;
      gated.byRoot = held[1]!.id;
      gated.rejected = held[2]!.id;
      // The world changes are recorded once the materialiser applied the relayed deltas.
      const until = Date.now() + 20_000;
      const recorded = async () =>
        (await get<Page<EffectItem>>('/api/search/effects?agent=ops&limit=1')).total ?? 0;
      while ((await recorded()) < SITREPS + 2 && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }, 120_000);

    afterAll(async () => {
      await gw?.stop('SIGTERM');
      await agent?.close();
      if (variant.kind === 'postgres' && !variant.skip) {
        const client = new pg.Client({ connectionString: PG_URL });
        await client.connect();
        await client.query(`drop schema if exists ${schema} cascade`);
        await client.end();
      }
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('pages dispatches newest first with a cursor, without a gap or a repeat, and counts them', async () => {
      const pages = await allPages<DispatchItem>(
        '/api/search/dispatches?agent=ops&skill=sitrep',
        5,
      );
      expect(pages.map((p) => p.items.length)).toEqual([5, 5, 2]);
      expect(pages.map((p) => p.total)).toEqual([SITREPS, null, null]);
      expect(pages.flatMap((p) => p.items.map((d) => d.id))).toEqual([...sitreps].reverse());
      const first = pages[0]!.items[0]!;
      expect(first).toMatchObject({ agent: 'ops', skill: 'sitrep', status: 'completed' });
      const radius = first.radius!;
      expect(radius).not.toBeNull();
      expect(pages.flatMap((p) => p.items).every((d) => d.radius === radius)).toBe(true);
      expect(first.taskId).not.toBeNull();
    });

    it('filters dispatches by status, radius, domain and text (case-insensitive, wildcards literal)', async () => {
      const ids = (page: Page<DispatchItem>) => page.items.map((d) => d.id).sort();
      const rejected = await get<Page<DispatchItem>>('/api/search/dispatches?status=rejected');
      expect(ids(rejected)).toEqual([gated.rejected]);
      expect(rejected.total).toBe(1);
      const fleet = await get<Page<DispatchItem>>('/api/search/dispatches?radius=fleet');
      expect(ids(fleet)).toEqual([gated.byAlice, gated.byRoot, gated.rejected].sort());
      expect(fleet.items.every((d) => d.radius === 'fleet')).toBe(true);
      const issues = await get<Page<DispatchItem>>(
        '/api/search/dispatches?domain=github_issues&status=completed',
      );
      expect(ids(issues)).toEqual([gated.byAlice, gated.byRoot].sort());
      // The text is looked for in the result too: the agent's artifact names the sitrep's text.
      const seven = await get<Page<DispatchItem>>('/api/search/dispatches?text=REPORT%207');
      expect(ids(seven)).toEqual([sitreps[7]]);
      expect(seven.total).toBe(1);
      // `%` and `_` are themselves, not LIKE's wildcards.
      // (Only the rejected call's result holds a `%`: its reason, "not now 100%".)
      const percent = await get<Page<DispatchItem>>('/api/search/dispatches?text=%25');
      expect(ids(percent)).toEqual([gated.rejected]);
      const bulk = await get<Page<DispatchItem>>('/api/search/dispatches?text=k_m');
      expect(bulk.total).toBe(3);
      const none = await get<Page<DispatchItem>>('/api/search/dispatches?agent=nobody');
      expect(none).toEqual({ items: [], next: null, total: 0 });
    });

    it('pages world changes newest first and filters them by domain, path, agent, skill and text', async () => {
      const pages = await allPages<EffectItem>(
        '/api/search/effects?domain=board&path=data.lastSitrep',
        5,
      );
      expect(pages.map((p) => p.items.length)).toEqual([5, 5, 2]);
      expect(pages[0]!.total).toBe(SITREPS);
      const changes = pages.flatMap((p) => p.items);
      const seqs = changes.map((c) => c.seq);
      expect([...seqs].sort((a, b) => b - a)).toEqual(seqs);
      expect(new Set(seqs).size).toBe(SITREPS);
      // Newest first: each change's value, and the value it replaced.
      expect(changes.map((c) => c.next)).toEqual(
        Array.from({ length: SITREPS }, (_, i) => `report ${SITREPS - 1 - i}`),
      );
      expect(changes.map((c) => c.previous)).toEqual(
        Array.from({ length: SITREPS }, (_, i) =>
          i === SITREPS - 1 ? null : `report ${SITREPS - 2 - i}`,
        ),
      );
      // A path selects itself and what lies below it, not a sibling that shares its start.
      const below = await get<Page<EffectItem>>('/api/search/effects?domain=board&path=data');
      expect(below.total).toBe(SITREPS);
      const sibling = await get<Page<EffectItem>>(
        '/api/search/effects?domain=board&path=data.lastSit',
      );
      expect(sibling.total).toBe(0);
      const migrations = await get<Page<EffectItem>>(
        '/api/search/effects?agent=ops&skill=bulk_migration',
      );
      expect(migrations.items.map((c) => [c.domain, c.path, c.op, c.value])).toEqual([
        ['github_issues', 'data.migrated', 'push', 'repo-a'],
        ['github_issues', 'data.migrated', 'push', 'repo-a'],
      ]);
      const three = await get<Page<EffectItem>>('/api/search/effects?text=Report%203');
      expect(three.items.map((c) => c.next)).toEqual(['report 3']);
      // A radius selects the changes of the skills that have it now (sitrep's is not fleet's).
      const { items } = await get<Page<DispatchItem>>(
        '/api/search/dispatches?skill=sitrep&limit=1',
      );
      const sitrepRadius = await get<Page<EffectItem>>(
        `/api/search/effects?radius=${items[0]!.radius!}`,
      );
      expect(sitrepRadius.total).toBe(SITREPS);
      const fleet = await get<Page<EffectItem>>('/api/search/effects?radius=fleet');
      expect(fleet.items.map((c) => c.skill)).toEqual(['bulk_migration', 'bulk_migration']);
    });

    it('searches approval history by status, approver, requester, radius, domain and text, in pages', async () => {
      const byDispatch = (page: Page<ApprovalItem>) => page.items.map((a) => a.dispatchId).sort();
      const decided = await allPages<ApprovalItem>('/api/search/approvals?status=decided', 2);
      expect(decided.map((p) => p.items.length)).toEqual([2, 1]);
      expect(decided[0]!.total).toBe(3);
      const all = decided.flatMap((p) => p.items);
      expect(all.map((a) => a.dispatchId)).toEqual([gated.rejected, gated.byRoot, gated.byAlice]);
      const times = all.map((a) => a.createdAt);
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      // Approved requests are used by the call they are bound to: `consumed` once it was sent.
      const consumed = await get<Page<ApprovalItem>>('/api/search/approvals?status=consumed');
      expect(byDispatch(consumed)).toEqual([gated.byAlice, gated.byRoot].sort());
      const rejected = await get<Page<ApprovalItem>>('/api/search/approvals?status=rejected');
      expect(rejected.items).toMatchObject([
        { dispatchId: gated.rejected, decidedBy: 'alice', reason: 'not now 100%' },
      ]);
      const alice = await get<Page<ApprovalItem>>('/api/search/approvals?by=alice');
      expect(byDispatch(alice)).toEqual([gated.byAlice, gated.rejected].sort());
      const olive = await get<Page<ApprovalItem>>('/api/search/approvals?by=olive');
      expect(olive.total).toBe(3);
      expect(olive.items.every((a) => a.requestedBy === 'olive')).toBe(true);
      const wide = await get<Page<ApprovalItem>>(
        '/api/search/approvals?radius=fleet&domain=github_issues&kind=dispatch',
      );
      expect(wide.total).toBe(3);
      const text = await get<Page<ApprovalItem>>('/api/search/approvals?text=NOT%20NOW%20100%25');
      expect(byDispatch(text)).toEqual([gated.rejected]);
      const pending = await get<Page<ApprovalItem>>('/api/search/approvals?status=pending');
      expect(pending.total).toBe(0);
    });

    it('refuses search text holding a control character, naming it (a NUL matched every row)', async () => {
      for (const path of [
        '/api/search/dispatches',
        '/api/search/effects',
        '/api/search/approvals',
      ]) {
        const bad = await api<{ error: { code: string; details: { issues: unknown[] } } }>(
          gw.url,
          `${path}?text=a%00b`,
          { token: TOKENS.olive },
        );
        expect(bad.status).toBe(400);
        expect(bad.body.error.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');
        expect(bad.body.error.details.issues).toEqual([
          { path: 'query.text', message: 'must not hold control characters (got U+0000)' },
        ]);
      }
    });

    it('refuses a cursor that is not one of the list', async () => {
      const bad = await api<{ error: { code: string } }>(
        gw.url,
        '/api/search/effects?cursor=nonsense',
        { token: TOKENS.olive },
      );
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');
    });

    it('tells an approved call’s story: approval, events in order, task, world change, cost', async () => {
      const story = await get<Story>(`/api/dispatches/${gated.byAlice}/story`);
      expect(story.dispatch).toMatchObject({ id: gated.byAlice, status: 'completed' });
      expect(story.approvals).toMatchObject([{ status: 'consumed', decidedBy: 'alice' }]);
      expect(story.send).not.toBeNull();
      expect(story.task).not.toBeNull();
      const topics = story.events.map((e) => e.topic);
      // The call's own events, in the order they were committed, its approval's among them.
      expect(topics.filter((t) => t.startsWith('hitl.approval.'))).toEqual([
        'hitl.approval.requested',
        'hitl.approval.decided',
      ]);
      const lifecycle = topics.filter((t) => t.startsWith('skill.dispatch.'));
      expect(lifecycle).toEqual([
        'skill.dispatch.requested',
        'skill.dispatch.gated',
        'skill.dispatch.started',
        'skill.dispatch.completed',
      ]);
      expect(topics).toContain('world.state.delta');
      expect(topics).toContain('cost.sample');
      const times = story.events.map((e) => e.at);
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      // Only this call's events, though its agent made other calls.
      for (const e of story.events) {
        if (e.topic.startsWith('skill.dispatch.')) expect(e.payload.id).toBe(gated.byAlice);
      }
      expect(story.effects).toMatchObject([
        { domain: 'github_issues', path: 'data.migrated', op: 'push', value: 'repo-a' },
      ]);
      expect(story.cost).not.toBeNull();
    });

    it('tells a sitrep’s story with the value its change replaced, and finds it by its task', async () => {
      const id = sitreps[5]!;
      const story = await get<Story>(`/api/dispatches/${id}/story`);
      expect(story.approvals).toEqual([]);
      expect(story.effects).toMatchObject([
        {
          domain: 'board',
          path: 'data.lastSitrep',
          op: 'set',
          previous: 'report 4',
          next: 'report 5',
        },
      ]);
      expect(story.events.filter((e) => e.topic === 'world.state.delta')).toHaveLength(1);
      const byTask = await get<{ id: string }>(
        `/api/agents/ops/tasks/${encodeURIComponent(story.dispatch.taskId!)}/dispatch`,
      );
      expect(byTask.id).toBe(id);
    });

    it('tells a rejected call’s story: no task, no world change, who rejected it', async () => {
      const story = await get<Story>(`/api/dispatches/${gated.rejected}/story`);
      expect(story.dispatch.status).toBe('rejected');
      expect(story.task).toBeNull();
      expect(story.effects).toEqual([]);
      expect(story.approvals).toMatchObject([{ status: 'rejected', decidedBy: 'alice' }]);
      expect(story.events.map((e) => e.topic)).not.toContain('world.state.delta');
      expect(story.events.map((e) => e.topic)).toContain('hitl.approval.decided');
    });
  });
}
