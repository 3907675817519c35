/**
 * One call's whole story (`#/calls/<dispatch id>`): requested → the gate's decision with its
 * reasons → held and approved (or vetoed, rejected) by whom → sent, with the ids that went out →
 * the task's states (a question the agent asked, and who answered what) → the deltas it reported
 * → the world values they changed, before and after → its cost → how it ended. Read from
 * `GET /api/dispatches/:id/story`, and read again whenever a live event about the call arrives (a
 * vote on its approval too), so the page follows a call while it runs.
 */
import { useEffect, useState } from 'preact/hooks';
import { callDoorText } from '../../../src/protocol/topics.js';
import { errorText } from '../api.js';
import { RadiusBadge } from '../radius.js';
import type { Store } from '../state.js';
import { answerOf, hasVetoWindow, roleAtLeast, shortId, useStore } from '../state.js';
import type { Approval, CallStory, DispatchRecord, Radius, StoryEvent } from '../types.js';

/** A step of the timeline. */
interface Step {
  key: string;
  kind: string;
  at: number | null;
  title: preact.ComponentChildren;
  body?: preact.ComponentChildren;
  state?: 'done' | 'waiting' | 'bad';
}

function time(at: number | null): string {
  if (at === null) return '';
  const d = new Date(at);
  return `${d.toLocaleTimeString()}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

function json(value: unknown): string {
  if (value === undefined) return '—';
  return typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value);
}

interface DecisionLike {
  mode?: string;
  effectiveRadius?: string | null;
  reasons?: { kind: string; detail: string }[];
  deny?: { reason?: string };
  goAt?: number;
}

function Reasons(props: { reasons: readonly { kind: string; detail: string }[] | undefined }) {
  if (props.reasons === undefined || props.reasons.length === 0) return null;
  return (
    <ul class="reasons">
      {props.reasons.map((r, i) => (
        <li key={i}>
          <code>{r.kind}</code> {r.detail}
        </li>
      ))}
    </ul>
  );
}

function approvalStep(a: Approval): Step[] {
  if (a.kind === 'checkpoint') return questionSteps(a);
  const veto = hasVetoWindow(a);
  const followUp = a.kind === 'follow-up';
  const approvers = `${a.requiredApprovals} approver${a.requiredApprovals === 1 ? '' : 's'} needed`;
  const vetoEnd = `runs at ${new Date(a.expiresAt).toLocaleTimeString()} unless vetoed`;
  const steps: Step[] = [
    {
      key: `approval-${a.id}`,
      kind: followUp ? 'follow-up' : veto ? 'veto-window' : 'held',
      at: a.createdAt,
      title: followUp
        ? `follow-up message held: ${veto ? `veto window, ${vetoEnd}` : approvers}`
        : veto
          ? `veto window opened: ${vetoEnd}`
          : `held for approval: ${approvers}`,
      state: a.status === 'pending' ? 'waiting' : 'done',
      body: (
        <>
          {followUp && typeof a.input?.text === 'string' && <pre class="input">{a.input.text}</pre>}
          <div class="small">
            <a href={`#/approvals/${encodeURIComponent(a.id)}`}>approval {shortId(a.id)}</a> · asked
            by {a.requestedBy ?? 'unknown'} · <RadiusBadge radius={a.radius} />{' '}
            <span class="badge mode">{a.mode}</span>
          </div>
        </>
      ),
    },
  ];
  for (const yes of a.approvals) {
    steps.push({
      key: `approval-${a.id}-${yes.by}`,
      kind: 'approved-by',
      at: yes.at,
      title: `approved by ${yes.by}`,
      state: 'done',
    });
  }
  if (a.status !== 'pending' && a.decidedAt !== null) {
    const who = a.decidedBy ?? (a.status === 'expired' ? 'expiry' : 'the gateway');
    const word =
      veto && a.status === 'rejected'
        ? `vetoed by ${who}`
        : veto && (a.status === 'approved' || a.status === 'consumed')
          ? a.decidedBy === null
            ? 'not vetoed: the window ended'
            : `let through early by ${who}`
          : a.status === 'consumed'
            ? `approved (decided by ${who}) and used`
            : `${a.status} by ${who}`;
    steps.push({
      key: `approval-${a.id}-decided`,
      kind: `decided-${a.status}`,
      at: a.decidedAt,
      title: word,
      state: a.status === 'rejected' || a.status === 'expired' ? 'bad' : 'done',
      ...(typeof a.reason === 'string' && a.reason !== ''
        ? { body: <div class="small">reason: {a.reason}</div> }
        : {}),
    });
  }
  return steps;
}

/**
 * An agent's question (a `checkpoint`): "asked: …", then "answered by alice: …" (the answer as
 * sent back to the agent), or rejected, expired. The texts are the agent's and a person's words:
 * rendered as text, never as markup.
 */
function questionSteps(a: Approval): Step[] {
  const steps: Step[] = [
    {
      key: `approval-${a.id}`,
      kind: 'question',
      at: a.createdAt,
      title: (
        <>
          asked: <span class="question">{a.question ?? ''}</span>
        </>
      ),
      state: a.status === 'pending' ? 'waiting' : 'done',
      body: (
        <div class="small">
          <a href={`#/approvals/${encodeURIComponent(a.id)}`}>question {shortId(a.id)}</a>
          {a.status === 'pending' ? ' · waiting for an answer' : ''} ·{' '}
          <RadiusBadge radius={a.radius} /> <span class="badge mode">{a.mode}</span>
        </div>
      ),
    },
  ];
  if (a.status === 'pending' || a.decidedAt === null) return steps;
  const answer = answerOf(a);
  const who = a.decidedBy ?? (a.status === 'expired' ? 'expiry' : 'the gateway');
  const reason = typeof a.reason === 'string' && a.reason !== '' ? a.reason : undefined;
  steps.push({
    key: `approval-${a.id}-decided`,
    kind: a.status === 'approved' || a.status === 'consumed' ? 'answered' : `decided-${a.status}`,
    at: a.decidedAt,
    title:
      a.status === 'approved' || a.status === 'consumed' ? (
        <>
          answered by {who}: <span class="value">{answer ?? ''}</span>
        </>
      ) : a.status === 'expired' ? (
        'expired: nobody answered'
      ) : a.status === 'rejected' ? (
        `rejected by ${who}`
      ) : (
        a.status
      ),
    state: a.status === 'rejected' || a.status === 'expired' ? 'bad' : 'done',
    ...(reason === undefined ? {} : { body: <div class="small">reason: {reason}</div> }),
  });
  return steps;
}

/**
 * Who asked for the call: its record says so; a call recorded before the gateway kept that names
 * its asker on its approval only, if it was held for one.
 */
function askerOf(story: CallStory): string | undefined {
  return (
    story.dispatch.requestedBy ??
    story.approvals.find((a) => a.requestedBy !== null)?.requestedBy ??
    undefined
  );
}

/** The steps of a story, in time order (steps of one moment in the order of the call's life). */
export function storySteps(story: CallStory): Step[] {
  const d = story.dispatch;
  const steps: Step[] = [];
  const requested = story.events.find((e) => e.topic === 'skill.dispatch.requested');
  const requestedBy = askerOf(story);
  steps.push({
    key: 'requested',
    kind: 'requested',
    at: requested?.at ?? d.createdAt,
    title: `requested: ${d.agent} / ${d.skill}${requestedBy === undefined ? '' : ` by ${requestedBy}`}`,
    state: 'done',
    body: (
      <div class="small muted">
        dispatch {d.id} · correlation {d.correlationId}
      </div>
    ),
  });
  const gated = story.events.find((e) => e.topic === 'skill.dispatch.gated');
  const refused = story.events.find(
    (e) => e.topic === 'skill.dispatch.rejected' && e.payload.decision !== undefined,
  );
  const decisionEvent = gated ?? refused;
  if (decisionEvent !== undefined) {
    const decision = (decisionEvent.payload.decision ?? {}) as DecisionLike;
    const held = decisionEvent === gated;
    // The gate decided before it opened the approval it announces with the decision.
    const opened = story.approvals.map((a) => a.createdAt);
    steps.push({
      key: 'gate',
      kind: 'gate',
      at: Math.min(decisionEvent.at, ...opened),
      title: held
        ? `gate: held (${decision.mode ?? 'gated'})`
        : `gate: denied${decision.deny?.reason === undefined ? '' : ` — ${decision.deny.reason}`}`,
      state: held ? 'waiting' : 'bad',
      body: (
        <>
          {decision.effectiveRadius !== undefined && (
            <div class="small">
              effective radius{' '}
              <RadiusBadge radius={(decision.effectiveRadius ?? null) as Radius | null} />
            </div>
          )}
          <Reasons reasons={decision.reasons} />
        </>
      ),
    });
  } else if (story.events.some((e) => e.topic === 'skill.dispatch.started')) {
    steps.push({
      key: 'gate',
      kind: 'gate',
      at: requested?.at ?? d.createdAt,
      title: 'gate: allowed at once (no approval needed)',
      state: 'done',
    });
  }
  for (const a of story.approvals) steps.push(...approvalStep(a));
  const started = story.events.filter((e) => e.topic === 'skill.dispatch.started').at(-1);
  if (story.send !== null && story.send.sentAt !== null) {
    steps.push({
      key: 'sent',
      kind: 'sent',
      at: story.send.sentAt,
      title: `sent to ${d.agent}`,
      state: 'done',
      body: (
        <dl class="stamps small">
          <dt>messageId</dt>
          <dd>
            <code>{story.send.messageId}</code>
          </dd>
          <dt>contextId</dt>
          <dd>
            <code>{story.send.contextId}</code>
          </dd>
          <dt>by gateway</dt>
          <dd>
            <code>{story.send.owner}</code>
          </dd>
          {story.traceparent !== null && (
            <>
              <dt>traceparent</dt>
              <dd>
                <code>{story.traceparent}</code>
              </dd>
            </>
          )}
          {gated !== undefined && (
            <>
              <dt>x-blast-radius</dt>
              <dd>
                <code>
                  {String((gated.payload.decision as DecisionLike | undefined)?.effectiveRadius)}
                </code>
              </dd>
            </>
          )}
        </dl>
      ),
    });
  } else if (started !== undefined) {
    steps.push({ key: 'sent', kind: 'sent', at: started.at, title: 'sending', state: 'waiting' });
  }
  if (story.task !== null) {
    steps.push({
      key: 'task',
      kind: 'task',
      at: story.task.createdAt,
      title: `task ${d.taskId ?? ''} opened at the agent`,
      state: 'done',
    });
  }
  for (const e of story.events) {
    if (e.topic === 'skill.dispatch.cancel-requested') steps.push(cancelStep(e));
    if (e.topic === 'skill.dispatch.awaiting-input' || e.topic === 'skill.dispatch.resumed') {
      steps.push({
        key: e.id,
        kind: 'task-state',
        at: e.at,
        title: `task ${typeof e.payload.state === 'string' ? e.payload.state : e.topic.slice(15)}`,
        state: e.topic.endsWith('awaiting-input') ? 'waiting' : 'done',
      });
    }
  }
  if (story.task !== null && story.task.terminalAt !== null) {
    steps.push({
      key: 'task-end',
      kind: 'task-state',
      at: story.task.terminalAt,
      title: `task ${story.task.state}${story.task.terminalVia === null ? '' : ` (seen by ${story.task.terminalVia})`}`,
      state: story.task.state === 'completed' ? 'done' : 'bad',
    });
  } else if (story.task !== null) {
    steps.push({
      key: 'task-now',
      kind: 'task-state',
      at: story.task.updatedAt,
      title: `task ${story.task.state}`,
      state: 'waiting',
    });
  }
  for (const e of story.events) {
    if (e.topic === 'world.state.delta') steps.push(deltaStep(e));
    if (e.topic === 'world.state.delta.rejected') {
      const rejected = Array.isArray(e.payload.rejected)
        ? (e.payload.rejected as { reason?: string; entry?: { path?: string } }[])
        : [];
      steps.push({
        key: e.id,
        kind: 'deltas-rejected',
        at: e.at,
        title: `${rejected.length} delta entr${rejected.length === 1 ? 'y' : 'ies'} rejected`,
        state: 'bad',
        body: (
          <ul class="small">
            {rejected.map((r, i) => (
              <li key={i}>
                <code>{r.entry?.path ?? ''}</code> {r.reason ?? ''}
              </li>
            ))}
          </ul>
        ),
      });
    }
  }
  if (story.effects.length > 0) {
    steps.push({
      key: 'world',
      kind: 'world',
      at: Math.max(...story.effects.map((e) => e.at)),
      title: 'world values changed',
      state: 'done',
      body: <WorldChanges story={story} />,
    });
  }
  if (story.cost !== null) {
    const c = story.cost;
    const parts = [
      typeof c.wallMs === 'number' ? `${Math.round(c.wallMs)} ms wall` : undefined,
      typeof c.tokensIn === 'number' ? `${c.tokensIn} tokens in` : undefined,
      typeof c.tokensOut === 'number' ? `${c.tokensOut} out` : undefined,
      typeof c.costUsd === 'number' ? `$${c.costUsd.toFixed(4)}` : undefined,
    ].filter((p) => p !== undefined);
    const costEvent = story.events.find((e) => e.topic === 'cost.sample');
    steps.push({
      key: 'cost',
      kind: 'cost',
      at: costEvent?.at ?? null,
      title: `cost: ${parts.join(' · ') || 'reported'}`,
      state: 'done',
    });
  }
  const endStatuses = ['completed', 'failed', 'rejected', 'canceled'];
  const ended = story.events.find((e) =>
    endStatuses.some((s) => e.topic === `skill.dispatch.${s}`),
  );
  if (ended !== undefined) {
    // A call that ended canceled is announced on `skill.dispatch.failed`: its record says which.
    const status = endStatuses.includes(d.status)
      ? d.status
      : ended.topic.slice('skill.dispatch.'.length);
    const result = d.result;
    steps.push({
      key: 'ended',
      kind: `ended-${status}`,
      at: ended.at,
      title: status,
      state: status === 'completed' ? 'done' : 'bad',
      body: (
        <>
          {typeof ended.payload.reason === 'string' && (
            <div class="small">{ended.payload.reason}</div>
          )}
          {result?.text !== undefined && <pre class="input">{result.text}</pre>}
          {result?.error !== undefined && status !== 'completed' && (
            <div class="small">
              <code>{result.error.code}</code> {result.error.message}
            </div>
          )}
        </>
      ),
    });
  }
  // Stable sort by time: a step without a time stays where the call's life put it.
  const order = new Map(steps.map((s, i) => [s, i]));
  return steps.sort(
    (a, b) => (a.at !== null && b.at !== null ? a.at - b.at : 0) || order.get(a)! - order.get(b)!,
  );
}

/** Someone asked to cancel the call while it was at the agent: who, and why. */
function cancelStep(e: StoryEvent): Step {
  const by = typeof e.payload.canceledBy === 'string' ? ` by ${e.payload.canceledBy}` : '';
  return {
    key: e.id,
    kind: 'cancel-requested',
    at: e.at,
    title: `cancel requested${by}`,
    state: 'waiting',
    ...(typeof e.payload.reason === 'string'
      ? { body: <div class="small">{e.payload.reason}</div> }
      : {}),
  };
}

function deltaStep(e: StoryEvent): Step {
  const deltas = Array.isArray(e.payload.deltas)
    ? (e.payload.deltas as { domain: string; path: string; op: string; value: unknown }[])
    : [];
  return {
    key: e.id,
    kind: 'deltas',
    at: e.at,
    title: `${deltas.length} delta${deltas.length === 1 ? '' : 's'} reported`,
    state: 'done',
    body: (
      <ul class="small deltas">
        {deltas.map((x, i) => (
          <li key={i}>
            <code>
              {x.domain} {x.path} {x.op} {json(x.value)}
            </code>
          </li>
        ))}
      </ul>
    ),
  };
}

function WorldChanges(props: { story: CallStory }) {
  return (
    <div class="table-wrap">
      <table class="world-changes">
        <thead>
          <tr>
            <th scope="col">domain</th>
            <th scope="col">path</th>
            <th scope="col">op</th>
            <th scope="col">before</th>
            <th scope="col">after</th>
            <th scope="col">version</th>
          </tr>
        </thead>
        <tbody>
          {props.story.effects.map((x) => (
            <tr key={x.seq} data-path={x.path} class={x.status === 'rejected' ? 'rejected' : ''}>
              <td>
                <a href={`#/world?domain=${encodeURIComponent(x.domain)}`}>{x.domain}</a>
              </td>
              <td>
                <a
                  href={`#/world?domain=${encodeURIComponent(x.domain)}&path=${encodeURIComponent(x.path)}`}
                >
                  <code>{x.path}</code>
                </a>
              </td>
              <td>{x.op}</td>
              <td data-before>
                <code>{json(x.previous)}</code>
              </td>
              <td data-after>
                {x.status === 'rejected' ? (
                  <span class="error">rejected: {x.reason}</span>
                ) : (
                  <code>{json(x.next)}</code>
                )}
              </td>
              <td>{x.version ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Whether a live event concerns the call. */
function about(
  story: CallStory | undefined,
  id: string,
  payload: Record<string, unknown>,
): boolean {
  if (payload.id === id || payload.dispatchId === id) return true;
  if (story === undefined) return false;
  // A vote names its approval only (`hitl.approval.voted`).
  if (story.approvals.some((a) => a.id === payload.approvalId)) return true;
  const d = story.dispatch;
  if (d.taskId !== null && payload.taskId === d.taskId) return true;
  return false;
}

export function CallView(props: { store: Store; id: string }) {
  const store = useStore(props.store);
  const { id } = props;
  const [story, setStory] = useState<CallStory | undefined>();
  const [error, setError] = useState('');
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    store
      .api!.get<CallStory>(`/api/dispatches/${encodeURIComponent(id)}/story`)
      .then((s) => {
        if (!live) return;
        setStory(s);
        setError('');
      })
      .catch((e: unknown) => {
        if (live) setError(errorText(e));
      });
    return () => {
      live = false;
    };
  }, [store, id, tick]);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = store.listen((event) => {
      if (!about(story, id, event.payload)) return;
      // One read for a burst of events about the call.
      timer ??= setTimeout(() => {
        timer = undefined;
        setTick((t) => t + 1);
      }, 60);
    });
    return () => {
      off();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [store, id, story]);
  if (error !== '') {
    return (
      <section class="call">
        <h2>Call {shortId(id)}</h2>
        <p class="error" role="alert">
          {error}
        </p>
      </section>
    );
  }
  if (story === undefined) return <p class="muted">…</p>;
  const d = story.dispatch;
  const steps = storySteps(story);
  const asker = askerOf(story);
  return (
    <section class="call" aria-labelledby="call-title" data-call={d.id} data-status={d.status}>
      <div class="toolbar">
        <h2 id="call-title">
          {d.agent} / {d.skill}
        </h2>
        <span class={`badge status status-${d.status}`} data-call-status>
          {d.status}
        </span>
        {asker !== undefined && (
          <span class="small" data-asked-by>
            asked by {asker}
          </span>
        )}
        {d.door !== null && d.door !== undefined && (
          <span class="small muted" data-door={d.door}>
            {callDoorText(d.door)}
          </span>
        )}
        <span class="muted small">
          {new Date(d.createdAt).toLocaleString()} · {d.id}
        </span>
        <a class="small" href="#/dispatches">
          all dispatches
        </a>
      </div>
      {LIVE.has(d.status) && roleAtLeast(store.session?.role ?? 'viewer', 'operator') && (
        <CancelCall store={store} id={d.id} held={d.status === 'awaiting-approval'} />
      )}
      <ol class="story">
        {steps.map((s) => (
          <li key={s.key} data-step={s.kind} class={`step-${s.state ?? 'done'}`}>
            <span class="when small muted">{time(s.at)}</span>
            <div>
              <strong>{s.title}</strong>
              {s.body}
            </div>
          </li>
        ))}
      </ol>
    </section>
  );
}

/** The statuses a call can still be canceled in. */
const LIVE = new Set(['running', 'awaiting-approval', 'awaiting-input']);

/**
 * Cancels the call (`POST /api/dispatches/:id/cancel`), after a second click with an optional
 * reason: a held call is rejected, a running task is canceled at the agent. The page follows
 * the end from the call's events.
 */
function CancelCall(props: { store: Store; id: string; held: boolean }) {
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState('');
  const cancel = async (): Promise<void> => {
    setBusy(true);
    setMessage('');
    try {
      const body = reason.trim() === '' ? {} : { reason: reason.trim() };
      await props.store.api!.post(`/api/dispatches/${encodeURIComponent(props.id)}/cancel`, body);
      setOpen(false);
    } catch (error) {
      setMessage(errorText(error));
    } finally {
      setBusy(false);
    }
  };
  if (!open) {
    return (
      <div class="toolbar" data-cancel>
        <button type="button" class="small-button" onClick={() => setOpen(true)}>
          Cancel call…
        </button>
      </div>
    );
  }
  return (
    <div class="toolbar" data-cancel>
      <span class="small">
        {props.held
          ? 'Cancel: its approval is rejected and nothing reaches the agent.'
          : 'Cancel: the agent is asked to stop the task.'}
      </span>
      <input
        type="text"
        aria-label="reason for cancelling"
        placeholder="why (optional)"
        value={reason}
        onInput={(e) => setReason((e.target as HTMLInputElement).value)}
      />
      <button type="button" class="reject" disabled={busy} onClick={() => void cancel()}>
        Cancel it
      </button>
      <button type="button" disabled={busy} onClick={() => setOpen(false)}>
        Keep it
      </button>
      {message !== '' && (
        <p class="error" role="alert">
          {message}
        </p>
      )}
    </div>
  );
}

/** `#/calls?agent=A&task=T`: finds the dispatch that made the task and goes to its page. */
export function CallByTask(props: { store: Store; agent: string; task: string }) {
  const [error, setError] = useState('');
  useEffect(() => {
    props.store
      .api!.get<DispatchRecord>(
        `/api/agents/${encodeURIComponent(props.agent)}/tasks/${encodeURIComponent(props.task)}/dispatch`,
      )
      .then((d) => location.replace(`#/calls/${encodeURIComponent(d.id)}`))
      .catch((e: unknown) => setError(errorText(e)));
  }, [props.agent, props.task]);
  return error === '' ? (
    <p class="muted">…</p>
  ) : (
    <p class="error" role="alert">
      {error}
    </p>
  );
}
