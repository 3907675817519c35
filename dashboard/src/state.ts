/**
 * What the page knows: snapshots from the API (fleet, approvals, world) and what the live events
 * added since (dispatch timelines, delta rows, alerts, drift). Views read it through `useStore`;
 * changes are batched to one render per animation frame so a burst of events costs one render.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.js';
import type {
  AgentView,
  Approval,
  DeltaEntry,
  DispatchRecord,
  EventEnvelope,
  GatewayStatus,
  Role,
  WorldDomain,
} from './types.js';
import type { StreamStatus } from './events.js';

export interface Session {
  token: string;
  name: string;
  role: Role;
}

/** One step of a dispatch's life, as the events told it. */
export interface TimelineStep {
  step: string;
  at: number;
  detail?: string;
}

export interface DispatchInfo {
  record: DispatchRecord;
  timeline: TimelineStep[];
  deltas: DeltaEntry[];
}

/** A row of the live effects view. */
export interface EffectRow {
  key: number;
  at: number;
  kind: 'delta' | 'rejected' | 'alert';
  agent: string;
  skill: string;
  domain: string;
  path: string;
  op: string;
  value: unknown;
  taskId: string;
  severity: string;
  message: string;
}

export const MAX_EFFECT_ROWS = 2000;

/** A payload field as text (events are JSON: anything that is not a string is shown as JSON). */
function text(value: unknown, fallback: string): string {
  if (value === undefined || value === null) return fallback;
  return typeof value === 'string' ? value : JSON.stringify(value);
}
const ROLE_ORDER: Record<Role, number> = { viewer: 0, operator: 1, approver: 2, admin: 3 };

/** Whether a request is snoozed at `now` (hidden from the default inbox, not counted as waiting). */
export function isSnoozed(a: Approval, now: number): boolean {
  return typeof a.snoozedUntil === 'number' && a.snoozedUntil > now;
}

export function roleAtLeast(role: Role, needed: Role): boolean {
  return ROLE_ORDER[role] >= ROLE_ORDER[needed];
}

/**
 * True for a request that goes unless vetoed: a veto window, or a follow-up message of a `veto`
 * skill (the gateway's rule). It offers Veto, not Approve, and its end is the call going.
 */
export function hasVetoWindow(a: Pick<Approval, 'kind' | 'mode'>): boolean {
  return a.kind === 'veto' || (a.kind === 'follow-up' && a.mode === 'veto');
}

/**
 * The answer given to an agent's question (a `checkpoint`), as typed; undefined while unanswered
 * and for any other kind. Shown as text, never as markup.
 */
export function answerOf(a: Approval): string | undefined {
  if (a.kind !== 'checkpoint') return undefined;
  const answer: unknown = a.answer;
  return typeof answer === 'string' ? answer : undefined;
}

/** What a request is, in a word or two: a question, a veto window, a follow-up, or its mode. */
export function kindLabel(a: Pick<Approval, 'kind' | 'mode'>): string {
  switch (a.kind) {
    case 'checkpoint':
      return 'question';
    case 'veto':
      return 'veto window';
    case 'follow-up':
      return `follow-up · ${hasVetoWindow(a) ? 'veto window' : a.mode}`;
    case 'dispatch':
      return a.mode;
    default:
      return assertNever(a.kind);
  }
}

function assertNever(value: never): never {
  throw new Error(`Unexpected ${JSON.stringify(value)}`);
}

/** One accepted vote, as `hitl.approval.voted` tells it (the event's time is the vote's). */
export interface Vote {
  approvalId: string;
  by: string;
  vote: 'approve' | 'reject';
  needed: number;
  have: number;
  at: number;
}

/** The vote a `hitl.approval.voted` event carries; undefined for any other event. */
export function voteOf(event: EventEnvelope): Vote | undefined {
  if (event.topic !== 'hitl.approval.voted') return undefined;
  const p = event.payload;
  if (
    typeof p.approvalId !== 'string' ||
    typeof p.by !== 'string' ||
    (p.vote !== 'approve' && p.vote !== 'reject') ||
    typeof p.needed !== 'number' ||
    typeof p.have !== 'number'
  ) {
    return undefined;
  }
  const at = Date.parse(event.time) || Date.now();
  return { approvalId: p.approvalId, by: p.by, vote: p.vote, needed: p.needed, have: p.have, at };
}

/**
 * A pending request with a vote folded in: a yes joins its approvers (once; the last one needed
 * approves it), a no rejects it. A request no longer pending, or one that already holds the vote
 * (a snapshot read after it, an event replayed on connect), is returned as it is.
 */
export function withVote(a: Approval, vote: Vote): Approval {
  if (a.id !== vote.approvalId || a.status !== 'pending') return a;
  if (vote.vote === 'reject') {
    return { ...a, status: 'rejected', decidedBy: vote.by, decidedAt: vote.at };
  }
  if (a.approvals.some((v) => v.by === vote.by)) return a;
  const approvals = [...a.approvals, { by: vote.by, at: vote.at }];
  return approvals.length >= a.requiredApprovals
    ? { ...a, approvals, status: 'approved', decidedAt: vote.at }
    : { ...a, approvals };
}

/** Resolves when the browser is idle (at most a second later). */
function idle(): Promise<void> {
  return new Promise((resolve) => {
    if (typeof requestIdleCallback === 'function')
      requestIdleCallback(() => resolve(), { timeout: 1000 });
    else setTimeout(resolve, 0);
  });
}

export class Store {
  session: Session | undefined;
  agents: AgentView[] = [];
  pending: Approval[] = [];
  history: Approval[] = [];
  world: Record<string, WorldDomain> = {};
  dispatches = new Map<string, DispatchInfo>();
  effects: EffectRow[] = [];
  /** `agent/skill` → the last declaration change seen. */
  drift = new Map<string, string>();
  /** Bumped when `drift` changes. */
  driftVersion = 0;
  /**
   * Delta entries received, counted per second of their event time (oldest first): a live stream
   * of thousands a second is counted in at most a few hundred buckets, not one number each.
   */
  #deltaSeconds: { second: number; count: number }[] = [];
  rejectedDeltas = 0;
  stream: StreamStatus = 'offline';
  /**
   * When the live connection was last lost (undefined while live): the status strip stops
   * counting the gateway's uptime there.
   */
  streamLostAt: number | undefined;
  /** When the page opened: events from before it (replayed on connect) are history, not news. */
  readonly openedAt = Date.now();
  streamDetail = '';
  error = '';
  /** Bumped on every change; views compare it. */
  version = 0;
  #listeners = new Set<() => void>();
  #frame: number | undefined;
  #effectKey = 0;
  api: Api | undefined;

  #eventListeners = new Set<(event: EventEnvelope) => void>();
  /** Toasts: notable live events (a call held, ended, an approval asked), newest last. */
  toasts: { key: number; at: number; text: string; dispatchId: string; kind: string }[] = [];
  #toastKey = 0;

  /** Calls `listener` with every live event (after the store folded it in). */
  listen(listener: (event: EventEnvelope) => void): () => void {
    this.#eventListeners.add(listener);
    return () => this.#eventListeners.delete(listener);
  }

  dismissToast(key: number): void {
    this.toasts = this.toasts.filter((t) => t.key !== key);
    this.changed();
  }

  #toast(kind: string, text: string, dispatchId: string, at: number): void {
    this.#toastKey += 1;
    const key = this.#toastKey;
    this.toasts = [...this.toasts, { key, at, text, dispatchId, kind }].slice(-4);
    setTimeout(() => this.dismissToast(key), 10_000);
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  changed(): void {
    this.version += 1;
    if (this.#frame !== undefined) return;
    this.#frame = requestAnimationFrame(() => {
      this.#frame = undefined;
      for (const l of this.#listeners) l();
    });
  }

  /** The gateway as `GET /api/status` last said (the status strip; a restart check). */
  status: GatewayStatus | undefined;
  /** When the status was read, by this page's clock (uptime counts on from it). */
  statusReadAt = 0;

  /**
   * Reads the gateway's status; resolves false when it is another process than the one the page
   * knew (the gateway restarted: what the page holds may be stale).
   */
  async loadStatus(): Promise<boolean> {
    if (this.api === undefined) return true;
    const status = await this.api.get<GatewayStatus>('/api/status');
    const same = this.status === undefined || this.status.instance === status.instance;
    this.status = status;
    this.statusReadAt = Date.now();
    this.changed();
    return same;
  }

  async loadFleet(): Promise<void> {
    if (this.api === undefined) return;
    const { agents } = await this.api.get<{ agents: AgentView[] }>('/api/agents');
    performance.mark('fleetgate:agents');
    // An agent whose view did not change keeps its object: its row (2,000 skill cells in a big
    // fleet) is not rendered again for a reload that changed one agent, or none.
    const before = new Map(this.agents.map((a) => [a.name, a]));
    this.agents = agents.map((a) => {
      const old = before.get(a.name);
      return old !== undefined && JSON.stringify(old) === JSON.stringify(a) ? old : a;
    });
    this.changed();
  }

  async loadApprovals(): Promise<void> {
    if (this.api === undefined) return;
    const { approvals } = await this.api.get<{ approvals: Approval[] }>(
      '/api/approvals?status=pending&snoozed=true',
    );
    this.pending = approvals;
    this.#wakeAtSnoozeEnd();
    this.changed();
  }

  /**
   * The pending requests the inbox shows by default (not snoozed now): the Approvals count, the
   * tab's title and the metrics strip count these, so they agree with the inbox.
   */
  get awaitingDecision(): Approval[] {
    const now = Date.now();
    return this.pending.filter((a) => !isSnoozed(a, now));
  }

  #snoozeTimer: ReturnType<typeof setTimeout> | undefined;
  /** A snooze that ends changes the counts without any event: render again then. */
  #wakeAtSnoozeEnd(): void {
    if (this.#snoozeTimer !== undefined) clearTimeout(this.#snoozeTimer);
    this.#snoozeTimer = undefined;
    const now = Date.now();
    const next = Math.min(
      ...this.pending.map((a) => (isSnoozed(a, now) ? a.snoozedUntil! : Infinity)),
    );
    if (next === Infinity) return;
    this.#snoozeTimer = setTimeout(
      () => {
        this.#snoozeTimer = undefined;
        this.#wakeAtSnoozeEnd();
        this.changed();
      },
      // (A timer's delay is at most 2^31 - 1 ms; a longer one fires at once.)
      Math.min(next - now + 50, 2 ** 31 - 1),
    );
  }

  /** The decided requests the time-to-decision figures are made of. */
  async loadDecided(): Promise<void> {
    if (this.api === undefined) return;
    const decided = await Promise.all(
      (['approved', 'rejected', 'expired', 'consumed'] as const).map((s) =>
        this.api!.get<{ approvals: Approval[] }>(`/api/approvals?status=${s}`),
      ),
    );
    this.history = decided
      .flatMap((d) => d.approvals)
      .sort((a, b) => (b.decidedAt ?? b.createdAt) - (a.decidedAt ?? a.createdAt));
    this.changed();
  }

  /**
   * Before the first world snapshot and while one loads: the newest version of each domain that
   * a `world.state.updated` named. An event that comes before its snapshot cannot be compared
   * with it; once the snapshot is in, a domain it is behind on is read again (once).
   */
  #worldSeen: Map<string, number> | undefined = new Map();

  async loadWorld(): Promise<void> {
    if (this.api === undefined) return;
    const seen = (this.#worldSeen ??= new Map<string, number>());
    let domains: Record<string, WorldDomain>;
    try {
      ({ domains } = await this.api.get<{ domains: Record<string, WorldDomain> }>('/api/world'));
    } finally {
      this.#worldSeen = undefined;
    }
    this.world = domains;
    this.changed();
    for (const [domain, version] of seen) {
      if (version > (domains[domain]?.version ?? -1)) {
        this.reloadSoon('world');
        break;
      }
    }
  }

  async loadAll(): Promise<void> {
    try {
      await Promise.all([this.loadFleet(), this.loadApprovals(), this.loadWorld()]);
      // Decided requests feed only the time-to-decision figures: read once the views have theirs
      // and the page painted them (the first screen does not wait on a thousand decisions).
      await idle();
      await this.loadDecided();
      this.error = '';
    } catch (error) {
      this.error = error instanceof Error ? error.message : String(error);
    }
    this.changed();
  }

  #reloads = new Map<string, ReturnType<typeof setTimeout>>();
  /** Reloads one snapshot soon, once for a burst of events about it. */
  reloadSoon(what: 'fleet' | 'approvals' | 'world'): void {
    if (this.#reloads.has(what)) return;
    this.#reloads.set(
      what,
      setTimeout(() => {
        this.#reloads.delete(what);
        const load =
          what === 'fleet'
            ? this.loadFleet()
            : what === 'approvals'
              ? this.loadApprovals().then(() => this.loadDecided())
              : this.loadWorld();
        load.catch((error: unknown) => {
          this.error = error instanceof Error ? error.message : String(error);
          this.changed();
        });
      }, 150),
    );
  }

  /** Folds one live event into the views. */
  onEvent(event: EventEnvelope): void {
    const p = event.payload;
    const at = Date.parse(event.time) || Date.now();
    const topic = event.topic;
    if (topic.startsWith('skill.dispatch.')) {
      const record = p as unknown as DispatchRecord;
      const info = this.dispatches.get(record.id) ?? { record, timeline: [], deltas: [] };
      info.record = { ...info.record, ...record };
      const step = topic.slice('skill.dispatch.'.length);
      info.timeline.push({
        step,
        at,
        ...(record.reason === undefined ? {} : { detail: record.reason }),
      });
      this.dispatches.set(record.id, info);
      if (step === 'gated' || step === 'rejected' || step === 'completed' || step === 'failed') {
        this.reloadSoon('approvals');
        // A held call is announced by its approval request (`hitl.approval.requested`).
        // Events replayed on connect are history, not news.
        if (at >= this.openedAt && step !== 'gated')
          this.#toast(step, `${record.agent} / ${record.skill} ${step}`, record.id, at);
      }
    } else if (topic === 'hitl.approval.voted') {
      // Open views show the vote at once; the snapshot read after it agrees.
      const vote = voteOf(event);
      if (vote !== undefined) this.pending = this.pending.map((a) => withVote(a, vote));
      this.reloadSoon('approvals');
    } else if (topic.startsWith('hitl.approval.')) {
      const dispatchId = typeof p.dispatchId === 'string' ? p.dispatchId : undefined;
      const info = dispatchId === undefined ? undefined : this.dispatches.get(dispatchId);
      if (info !== undefined && topic !== 'hitl.approval.requested') {
        // The gate says `outcome` (approved, not-vetoed, rejected…); older events `decision`.
        const said = [p.outcome, p.decision, p.status].find((v) => typeof v === 'string');
        const decision = typeof said === 'string' ? said : topic.slice('hitl.approval.'.length);
        const by = typeof p.decidedBy === 'string' ? ` by ${p.decidedBy}` : '';
        info.timeline.push({ step: decision, at, detail: `${decision}${by}` });
      }
      this.reloadSoon('approvals');
    } else if (topic === 'world.state.delta') {
      const deltas = Array.isArray(p.deltas) ? (p.deltas as DeltaEntry[]) : [];
      const taskId = text(p.taskId, '');
      for (const d of deltas) {
        this.#pushEffect({
          at,
          kind: 'delta',
          agent: text(p.source, ''),
          skill: text(p.skill, ''),
          domain: d.domain,
          path: d.path,
          op: d.op,
          value: d.value,
          taskId,
          severity: '',
          message: '',
        });
      }
      this.#countDeltas(at, deltas.length);
      for (const info of this.dispatches.values()) {
        if (
          info.record.correlationId === event.correlationId ||
          (taskId !== '' && info.record.taskId === taskId)
        ) {
          info.deltas.push(...deltas);
          info.timeline.push({ step: 'deltas', at, detail: `${deltas.length} delta(s)` });
        }
      }
    } else if (topic === 'world.state.delta.rejected') {
      const rejected = Array.isArray(p.rejected)
        ? (p.rejected as { entry?: Partial<DeltaEntry>; reason?: string }[])
        : [];
      for (const r of rejected) {
        this.rejectedDeltas += 1;
        this.#pushEffect({
          at,
          kind: 'rejected',
          agent: text(p.source, ''),
          skill: text(p.skill, ''),
          domain: text(r.entry?.domain, ''),
          path: text(r.entry?.path, ''),
          op: text(r.entry?.op, ''),
          value: r.entry?.value,
          taskId: text(p.taskId, ''),
          severity: 'error',
          message: r.reason ?? 'rejected',
        });
      }
    } else if (topic === 'world.state.updated') {
      // Events replayed on connect that the snapshot already holds change nothing.
      const domain = text(p.domain, '');
      const version = typeof p.version === 'number' ? p.version : Number.POSITIVE_INFINITY;
      const known = this.world[domain];
      if (this.#worldSeen !== undefined) {
        // The snapshot is not in yet: it is compared with this once it is.
        this.#worldSeen.set(domain, Math.max(version, this.#worldSeen.get(domain) ?? -1));
      } else if (known === undefined || version > known.version) this.reloadSoon('world');
    } else if (topic.startsWith('ops.alert.')) {
      this.#pushEffect({
        at,
        kind: 'alert',
        agent: text(p.agent, ''),
        skill: text(p.skill, ''),
        domain: topic.slice('ops.alert.'.length),
        path: '',
        op: '',
        value: p.evidence,
        taskId: '',
        severity: text(p.severity, 'info'),
        message: text(p.message, ''),
      });
    } else if (topic === 'fleet.declaration.changed') {
      const key = `${text(p.agent, '')}/${text(p.skill, '')}`;
      const how = p.widened === true ? 'widened' : p.narrowed === true ? 'narrowed' : 'changed';
      this.drift.set(key, `${how} ${new Date(at).toLocaleTimeString()}`);
      this.driftVersion += 1;
      // A change the fleet snapshot already holds (replayed on connect) needs no reload.
      const known = this.agents.find((a) => a.name === text(p.agent, ''));
      if (known === undefined || (known.lastChangedAt ?? 0) < at) this.reloadSoon('fleet');
    } else if (topic === 'fleet.card.refreshed') {
      // An unchanged card of a fresh agent only moves its fetch time: no need to reload the
      // fleet (a changed declaration comes as fleet.declaration.changed).
      // Events replayed before the first snapshot arrived are older than it: nothing to do.
      const name = text(p.agent, '');
      const known = this.agents.find((a) => a.name === name);
      if (known !== undefined && known.status === 'fresh') {
        // In place: the fleet table shows it at its next tick instead of re-rendering now.
        known.lastFetchedAt = Math.max(known.lastFetchedAt ?? 0, at);
      } else if (this.agents.length > 0) {
        this.reloadSoon('fleet');
      }
    } else if (topic.startsWith('fleet.')) {
      this.reloadSoon('fleet');
    }
    if (
      topic === 'hitl.approval.requested' &&
      at >= this.openedAt &&
      typeof p.dispatchId === 'string'
    ) {
      const waitsFor =
        p.kind === 'checkpoint'
          ? 'asks a question'
          : p.kind === 'veto' || (p.kind === 'follow-up' && p.mode === 'veto')
            ? 'waits for a veto window'
            : p.kind === 'follow-up'
              ? 'has a follow-up waiting for approval'
              : 'waits for approval';
      this.#toast(
        'approval',
        `${text(p.agent, '')} / ${text(p.skill, '')} ${waitsFor}`,
        p.dispatchId,
        at,
      );
    }
    if (this.effects.length > MAX_EFFECT_ROWS)
      this.effects.splice(0, this.effects.length - MAX_EFFECT_ROWS);
    for (const l of this.#eventListeners) l(event);
    this.changed();
  }

  /** Effect rows received since the page opened (older ones leave the buffer, not this count). */
  get effectCount(): number {
    return this.#effectKey;
  }

  /** Delta entries whose events are from `since` (ms) on; counts older than 2 minutes are gone. */
  deltasSince(since: number): number {
    const buckets = this.#deltaSeconds;
    let old = 0;
    while (old < buckets.length && (buckets[old]!.second + 1) * 1000 <= since - 60_000) old += 1;
    if (old > 0) buckets.splice(0, old);
    let n = 0;
    for (const b of buckets) if (b.second * 1000 >= since) n += b.count;
    return n;
  }

  #countDeltas(at: number, count: number): void {
    if (count === 0) return;
    const second = Math.floor(at / 1000);
    const last = this.#deltaSeconds.at(-1);
    if (last?.second === second) last.count += count;
    else this.#deltaSeconds.push({ second, count });
  }

  /**
   * Adds a row; the buffer is cut back to {@link MAX_EFFECT_ROWS} once per event by
   * {@link Store.onEvent} (cutting per row moves the whole buffer for every row of a stream).
   */
  #pushEffect(row: Omit<EffectRow, 'key'>): void {
    this.#effectKey += 1;
    this.effects.push({ key: this.#effectKey, ...row });
  }
}

/** Re-renders the calling component whenever the store changes. */
export function useStore(store: Store): Store {
  const [, setVersion] = useState(store.version);
  useEffect(() => store.subscribe(() => setVersion(store.version)), [store]);
  return store;
}

/** A clock for countdowns and ages (renders only; it fetches nothing). */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

/**
 * How a call or an approval is named in a table: its id's last 8 characters (a time-ordered id's
 * first 8 are the same for every record of a minute).
 */
export function shortId(id: string): string {
  return id.slice(-8);
}

export function ago(ms: number | null | undefined, now: number): string {
  if (ms === null || ms === undefined) return '—';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

/** Seconds as `24 s`, `2m 05s` or `1h 10m`. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  if (h > 0) return `${h}h ${m % 60}m`;
  return `${m}m ${String(s % 60).padStart(2, '0')}s`;
}

export function countdown(until: number, now: number): string {
  const s = Math.round((until - now) / 1000);
  if (s <= 0) return 'expired';
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  if (h > 0) return `${h}h ${m % 60}m`;
  return `${m}m ${String(s % 60).padStart(2, '0')}s`;
}
