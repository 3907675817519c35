/**
 * A large store for `dashboard-load`: the gateway's SQLite file migrated by the gateway's own
 * migrations, then filled in bulk with the history of a busy fleet — dispatches that ended,
 * world changes (audit records) and decided approval requests — before the gateway starts on it.
 * Every row is as the gateway writes it; nothing in it is left for the gateway to finish (no
 * dispatch in flight, no approval unsettled), so the start does no recovery work.
 */
import Database from 'better-sqlite3';
import { openGatewayStore } from '../src/service/index.js';

export interface LargeStore {
  dispatches: number;
  effects: number;
  approvals: number;
}

const STATUSES = ['completed', 'completed', 'completed', 'failed', 'rejected'] as const;

/** Fills `file` (a new SQLite store) with `size` rows over agents `agent-0…` × `skill_0…`. */
export async function seedLargeStore(
  file: string,
  size: LargeStore,
  fleet: { agents: number; skills: number },
): Promise<void> {
  const store = await openGatewayStore(`sqlite:${file}`);
  await store.close();
  const db = new Database(file);
  const now = Date.now();
  const span = 3 * 86_400_000;
  const at = (i: number, n: number): number => now - span + Math.floor((i / n) * span);
  const who = (i: number) => ({
    agent: `agent-${i % fleet.agents}`,
    skill: `skill_${Math.floor(i / fleet.agents) % fleet.skills}`,
  });
  const dispatch = db.prepare(
    `insert into fleetgate_dispatch (id, agent, skill, correlation_id, status, task_id, created_at,
      updated_at, result) values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const audit = db.prepare(
    `insert into fleetgate_world_audit (domain, path, op, value, previous, next, status, reason,
      version, agent, skill, task_id, event_id, entry_index, time, recorded_at)
      values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const approval = db.prepare(
    `insert into fleetgate_policy_approval (id, kind, dispatch_id, agent, skill, correlation_id,
      fingerprint, policy_version, mode, radius, requested_by, required_approvals, approvals,
      status, decided_by, decided_at, reason, input, domains, reasons, created_at, expires_at,
      settled_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const perDispatch = Math.max(1, Math.floor(size.effects / size.dispatches));
  db.transaction(() => {
    for (let i = 0; i < size.dispatches; i += 1) {
      const { agent, skill } = who(i);
      const status = STATUSES[i % STATUSES.length]!;
      const t = at(i, size.dispatches);
      const task = status === 'rejected' ? null : `task-${i}`;
      const result =
        status === 'completed'
          ? { state: 'completed', text: `report ${i}: done` }
          : status === 'failed'
            ? {
                state: 'failed',
                error: { code: 'FLEETGATE_TASK_FAILED', message: `run ${i} failed` },
              }
            : { error: { code: 'FLEETGATE_DISPATCH_REJECTED', message: 'rejected' } };
      dispatch.run(
        `d-${String(i).padStart(6, '0')}`,
        agent,
        skill,
        `c-${i}`,
        status,
        task,
        t,
        t + 900,
        JSON.stringify(result),
      );
    }
    for (let i = 0; i < size.effects; i += 1) {
      const d = Math.floor(i / perDispatch) % size.dispatches;
      const { agent, skill } = who(d);
      const t = at(i, size.effects);
      audit.run(
        `domain${d % 8}`,
        `data.counter${i % 20}`,
        'set',
        JSON.stringify(i),
        JSON.stringify(i - 1),
        JSON.stringify(i),
        'applied',
        null,
        i + 1,
        agent,
        skill,
        `task-${d}`,
        `e-${d}`,
        i % perDispatch,
        new Date(t).toISOString(),
        t,
      );
    }
    for (let i = 0; i < size.approvals; i += 1) {
      const d = i * Math.floor(size.dispatches / size.approvals);
      const { agent, skill } = who(d);
      const t = at(d, size.dispatches);
      const status = ['consumed', 'rejected', 'expired', 'approved'][i % 4]!;
      const decidedBy = status === 'expired' ? null : `approver-${i % 5}`;
      approval.run(
        `a-${String(i).padStart(5, '0')}`,
        i % 3 === 0 ? 'veto' : 'dispatch',
        `d-${String(d).padStart(6, '0')}`,
        agent,
        skill,
        `c-${d}`,
        'f'.repeat(64),
        'p1',
        i % 3 === 0 ? 'veto' : 'gated',
        ['fleet', 'public', 'repo'][i % 3],
        'operator',
        1,
        JSON.stringify(decidedBy === null ? [] : [{ by: decidedBy, at: t + 5000 }]),
        status,
        decidedBy,
        t + 5000,
        status === 'rejected' ? 'not now' : null,
        JSON.stringify({ text: `ship ${i}` }),
        JSON.stringify([`domain${d % 8}`]),
        JSON.stringify([{ kind: 'threshold', detail: 'public ≥ approvalAtOrAbove public: gated' }]),
        t,
        t + 3_600_000,
        t + 5000,
      );
    }
  })();
  db.close();
}
