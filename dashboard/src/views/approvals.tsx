/**
 * The approvals inbox: every pending request of the fleet, widest radius first then oldest, with
 * a countdown to expiry; approve, reject with a reason, snooze (hidden for a while, not a
 * rejection); a history tab. A request someone else decided answers 409: said inline. A vote
 * cast elsewhere (`hitl.approval.voted`) shows at once: the count, who voted, and no Approve for
 * the approver who already said yes, in every tab. An agent's question (a `checkpoint`) reads as
 * a question, never as an approval: its text, an answer box, and once answered who answered and
 * what (as text, never markup), or that it was rejected or expired.
 * `#/approvals?id=<id>` (the link the A2A proxy used to give) opens the inbox on one request.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, errorText, isUnreachable } from '../api.js';
import { RadiusBadge, radiusRank } from '../radius.js';
import { FilterSelect, SearchText, useSearch, VirtualTable, Count } from '../search.js';
import { fleetOptions } from './dispatches.js';
import type { Store } from '../state.js';
import {
  ago,
  answerOf,
  countdown,
  duration,
  hasVetoWindow,
  isSnoozed,
  kindLabel,
  roleAtLeast,
  shortId,
  useNow,
  useStore,
  voteOf,
  withVote,
} from '../state.js';
import type { Approval, DispatchRecord } from '../types.js';

/** Pending requests in inbox order: widest radius first, then the oldest. */
export function inboxOrder(approvals: readonly Approval[]): Approval[] {
  return [...approvals].sort(
    (a, b) => radiusRank(b.radius) - radiusRank(a.radius) || a.createdAt - b.createdAt,
  );
}

/** The longest snooze the inbox offers. */
const SNOOZE_MS = 15 * 60_000;

/**
 * How a request ended, in words: a veto that was not used reads as such, and an agent's question
 * as answered (or rejected, expired), never as approved.
 */
export function outcomeWord(a: Approval): string {
  const who = a.decidedBy ?? undefined;
  if (a.kind === 'checkpoint') return questionOutcome(a, who);
  if (hasVetoWindow(a)) {
    if (a.status === 'rejected') return who === undefined ? 'vetoed' : `vetoed by ${who}`;
    if (a.status === 'approved' || a.status === 'consumed') {
      return who === undefined ? 'not vetoed: ran when the window ended' : `let through by ${who}`;
    }
  }
  if (a.status === 'expired') return 'expired: nobody decided';
  if (a.status === 'consumed')
    return who === undefined ? 'approved and sent' : `approved by ${who}, sent`;
  return who === undefined ? a.status : `${a.status} by ${who}`;
}

/** How an agent's question ended: answered (then sent to the agent), rejected, expired. */
function questionOutcome(a: Approval, who: string | undefined): string {
  switch (a.status) {
    case 'pending':
      return 'waiting for an answer';
    case 'approved':
    case 'consumed':
      return who === undefined ? 'answered' : `answered by ${who}`;
    case 'rejected':
      return who === undefined ? 'rejected' : `rejected by ${who}`;
    case 'expired':
      return 'expired: nobody answered';
    case 'void':
      return 'void';
    default:
      return assertNever(a.status);
  }
}

/** What a refused or failed decision means, worded by the gateway's error code. */
function describeError(error: unknown): string {
  if (isUnreachable(error)) {
    return 'The gateway cannot be reached: nothing confirms this was recorded. The page keeps trying to reconnect; try again once the strip says live.';
  }
  if (!(error instanceof ApiError)) return String(error);
  const details = error.details ?? {};
  switch (error.code) {
    case 'FLEETGATE_APPROVAL_ALREADY_DECIDED':
      // The same code answers a second yes from one approver while the request still waits.
      if (details.status === 'pending')
        return `You already approved this request. ${error.message}`;
      return typeof details.decidedBy === 'string'
        ? `Already decided by ${details.decidedBy}.`
        : `Already decided: ${error.message}`;
    case 'FLEETGATE_APPROVAL_EXPIRED':
      return 'Expired: nobody decided in time, so the call was not sent.';
    case 'FLEETGATE_APPROVAL_VOID':
      return `Void: ${error.message}`;
    case 'FLEETGATE_APPROVAL_SELF':
      return 'You asked for this call: another approver must decide it.';
    case 'FLEETGATE_APPROVAL_NOT_FOUND':
      return `No such request on this gateway: ${error.message}`;
    default:
      return errorText(error);
  }
}

/**
 * Brings the request a link points at into view, focuses it (keyboard and screen readers start
 * there) and returns the ref for its element; once per request, not on every render.
 */
function useLandOn(focused: boolean): preact.RefObject<HTMLLIElement | null> {
  const ref = useRef<HTMLLIElement>(null);
  useEffect(() => {
    if (!focused || ref.current === null) return;
    ref.current.scrollIntoView({ block: 'center' });
    ref.current.focus({ preventScroll: true });
  }, [focused]);
  return ref;
}

function Request(props: {
  store: Store;
  approval: Approval;
  now: number;
  canDecide: boolean;
  canAnswer: boolean;
  /** On the approval's own page (no link to itself). */
  detail?: boolean;
  /** A link points at it: scrolled into view, focused and highlighted. */
  focused?: boolean;
}) {
  const { store, approval: a, now } = props;
  const ref = useLandOn(props.focused === true);
  const [reason, setReason] = useState('');
  const [answer, setAnswer] = useState('');
  const [rejecting, setRejecting] = useState(false);
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const act = async (verb: 'approve' | 'reject' | 'snooze' | 'answer'): Promise<void> => {
    setBusy(true);
    setMessage('');
    try {
      const body =
        verb === 'answer'
          ? { text: answer }
          : verb === 'snooze'
            ? { for: '15m' }
            : reason.trim() === ''
              ? {}
              : { reason: reason.trim() };
      await store.api!.post(`/api/approvals/${encodeURIComponent(a.id)}/${verb}`, body);
      await store.loadApprovals();
    } catch (error) {
      setMessage(describeError(error));
    } finally {
      setBusy(false);
    }
  };
  const snoozed = isSnoozed(a, now);
  const veto = hasVetoWindow(a);
  const question = a.kind === 'checkpoint';
  const answered = answerOf(a);
  const me = store.session?.name;
  // The gateway refuses both (a second yes from one approver, the requester's own yes): the
  // page does not offer them.
  const voted = me !== undefined && a.approvals.some((v) => v.by === me);
  const asked = me !== undefined && a.requestedBy !== null && a.requestedBy === me;
  const more = a.requiredApprovals - a.approvals.length;
  const left = (a.expiresAt - now) / 1000;
  const open = a.status === 'pending' && left > 0;
  // A snooze never hides a request past its own end, and never hides a veto window at all.
  const canSnooze = !veto && !question && a.expiresAt - now > SNOOZE_MS;
  // The requester answers a question of their own call, unless its skill is `compound`.
  const ownQuestion = question && asked && a.mode === 'compound';
  const rejectControls = rejecting ? (
    <>
      <label>
        Reason{' '}
        <input class="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      </label>
      <button
        type="button"
        class={veto ? 'reject veto-button' : 'reject'}
        disabled={busy}
        onClick={() => void act('reject')}
      >
        {veto ? 'Confirm veto' : 'Confirm reject'}
      </button>
    </>
  ) : (
    <button
      type="button"
      class={veto ? 'reject veto-button' : 'reject'}
      disabled={busy}
      onClick={() => setRejecting(true)}
    >
      {veto ? 'Veto…' : 'Reject…'}
    </button>
  );
  return (
    <li
      ref={ref}
      class={`request${snoozed ? ' snoozed' : ''}${veto ? ' veto' : ''}${props.focused === true ? ' focused' : ''}`}
      data-approval={a.id}
      data-dispatch={a.dispatchId}
      data-kind={a.kind}
      {...(props.focused === true
        ? { tabIndex: -1, 'data-focused': '', 'aria-current': 'true' as const }
        : {})}
    >
      <div class="request-head">
        <RadiusBadge radius={a.radius} />
        <strong>
          {a.agent} / {a.skill}
        </strong>
        <span class="badge mode">{kindLabel(a)}</span>
        {question ? (
          // The agent asks; who asked for the call is said when known.
          a.requestedBy !== null && <span class="muted small">call from {a.requestedBy}</span>
        ) : (
          <span class="muted small">from {a.requestedBy ?? 'unknown'}</span>
        )}
        <span class="muted small">asked {ago(a.createdAt, now)}</span>
        {a.status !== 'pending' ? (
          <span class={`badge outcome-${a.status}`}>{outcomeWord(a)}</span>
        ) : veto ? (
          <span
            class="countdown veto-countdown"
            title={new Date(a.expiresAt).toISOString()}
            data-countdown
          >
            {left > 0 ? `runs in ${duration(left)} unless vetoed` : 'window over: running'}
          </span>
        ) : (
          <span class="countdown" title={new Date(a.expiresAt).toISOString()} data-countdown>
            {left > 0
              ? `expires in ${countdown(a.expiresAt, now)}`
              : question
                ? 'expired: no longer answerable'
                : 'expired: no longer approvable'}
          </span>
        )}
        {snoozed && (
          <span class="badge">snoozed until {new Date(a.snoozedUntil!).toLocaleTimeString()}</span>
        )}
        {a.requiredApprovals > 1 && (
          <span class="badge">
            {a.approvals.length}/{a.requiredApprovals} approvals
          </span>
        )}
        <a class="small" href={`#/calls/${encodeURIComponent(a.dispatchId)}`} data-call-link>
          the call
        </a>
        {!props.detail && (
          <a class="small" href={`#/approvals/${encodeURIComponent(a.id)}`} data-approval-link>
            details
          </a>
        )}
      </div>
      {question && (
        <p class="question" data-question>
          <span class="muted small">{a.agent} asks: </span>
          {a.question ?? ''}
        </p>
      )}
      {answered !== undefined && (
        <div data-answer>
          <span class="small">answered by {a.decidedBy ?? 'someone'}:</span>
          <pre class="input answer">{answered}</pre>
        </div>
      )}
      <ul class="reasons">
        {a.reasons.map((r, i) => (
          <li key={i}>
            <code>{r.kind}</code> {r.detail}
          </li>
        ))}
      </ul>
      <div class="muted small">
        domains: {Array.isArray(a.domains) ? a.domains.join(', ') || 'none' : 'not declared'}
      </div>
      {a.input !== undefined &&
        a.input !== null &&
        (a.input.text !== undefined || a.input.data !== undefined) && (
          <pre class="input">
            {a.input.text ?? ''}
            {a.input.data === undefined ? '' : `\n${JSON.stringify(a.input.data, null, 2)}`}
          </pre>
        )}
      {question
        ? open &&
          (props.canAnswer || props.canDecide) && (
            <div class="actions" data-answer-form>
              {props.canAnswer &&
                (ownQuestion ? (
                  <span class="muted small" data-own-call>
                    You asked for this call: someone else answers its question.
                  </span>
                ) : (
                  <>
                    <label>
                      Your answer{' '}
                      <textarea
                        class="answer-text"
                        rows={2}
                        value={answer}
                        onInput={(e) => setAnswer(e.currentTarget.value)}
                      />
                    </label>
                    <button
                      type="button"
                      class="answer"
                      disabled={busy || answer.trim() === ''}
                      onClick={() => void act('answer')}
                    >
                      Answer
                    </button>
                  </>
                ))}
              {props.canDecide && rejectControls}
            </div>
          )
        : props.canDecide &&
          open && (
            <div class="actions">
              {!veto &&
                (voted ? (
                  <span class="muted small" data-voted>
                    You approved; it waits for {more} more approver{more === 1 ? '' : 's'}.
                  </span>
                ) : asked ? (
                  <span class="muted small" data-own-call>
                    You asked for this call: another approver approves it.
                  </span>
                ) : (
                  <button
                    type="button"
                    class="approve"
                    disabled={busy}
                    onClick={() => void act('approve')}
                  >
                    Approve
                  </button>
                ))}
              {rejectControls}
              {canSnooze && (
                <button type="button" disabled={busy} onClick={() => void act('snooze')}>
                  Snooze 15m
                </button>
              )}
            </div>
          )}
      {message !== '' && (
        <p class="error" role="alert">
          {message}
        </p>
      )}
    </li>
  );
}

/** What the page knows of the request a link points at (`#/approvals?id=<id>`). */
type Target =
  | { kind: 'none' }
  | { kind: 'looking' }
  | { kind: 'pending'; approval: Approval }
  | { kind: 'decided'; approval: Approval }
  | { kind: 'missing' }
  | { kind: 'failed'; message: string };

/**
 * The request `id` names: pending ones come from the inbox the store holds; one the inbox does
 * not hold (decided, unknown, or not loaded yet) is asked of the gateway, and asked again when
 * the inbox changes (it may have just been decided).
 */
function useTarget(store: Store, id: string): Target {
  const inInbox = id === '' ? undefined : store.pending.find((a) => a.id === id);
  const [asked, setAsked] = useState<{ id: string; target: Target }>({
    id: '',
    target: { kind: 'none' },
  });
  useEffect(() => {
    if (id === '' || inInbox !== undefined) return undefined;
    let live = true;
    store
      .api!.get<Approval>(`/api/approvals/${encodeURIComponent(id)}`)
      .then((a) => {
        if (!live) return;
        setAsked({
          id,
          target: { kind: a.status === 'pending' ? 'pending' : 'decided', approval: a },
        });
      })
      .catch((e: unknown) => {
        if (!live) return;
        setAsked({
          id,
          target:
            e instanceof ApiError && e.status === 404
              ? { kind: 'missing' }
              : { kind: 'failed', message: describeError(e) },
        });
      });
    return () => {
      live = false;
    };
  }, [store, id, store.pending]);
  if (id === '') return { kind: 'none' };
  if (inInbox !== undefined) return { kind: 'pending', approval: inInbox };
  return asked.id === id ? asked.target : { kind: 'looking' };
}

/** Says what became of the request a link points at, when it is not in the inbox. */
function TargetNotice(props: { id: string; target: Target }) {
  const { id, target } = props;
  const details = (
    <a href={`#/approvals/${encodeURIComponent(id)}`} data-approval-link>
      its page
    </a>
  );
  switch (target.kind) {
    case 'none':
    case 'pending':
      return null;
    case 'looking':
      return (
        <p class="notice muted" data-target="looking">
          Looking for request {shortId(id)}…
        </p>
      );
    case 'missing':
      return (
        <p class="notice error" role="alert" data-target="missing">
          No approval request <code>{id}</code> on this gateway: the link may be mistyped, or come
          from another gateway.
        </p>
      );
    case 'decided': {
      const a = target.approval;
      return (
        <p class="notice" role="status" data-target="decided">
          Request {shortId(a.id)} ({a.agent} / {a.skill}) is already decided:{' '}
          <span class={`badge outcome-${a.status}`}>{outcomeWord(a)}</span>
          {a.decidedAt !== null && <> at {new Date(a.decidedAt).toLocaleString()}</>}. Nothing is
          left to decide; see {details}.
        </p>
      );
    }
    case 'failed':
      return (
        <p class="notice error" role="alert" data-target="failed">
          Request {shortId(id)} could not be read: {target.message}
        </p>
      );
    default:
      return assertNever(target);
  }
}

function assertNever(value: never): never {
  throw new Error(`Unexpected ${JSON.stringify(value)}`);
}

export function ApprovalsView(props: { store: Store; focus?: string }) {
  const store = useStore(props.store);
  // The clock ticks every second; a render between ticks (a request that just arrived) reads
  // the time itself, so a fresh 30 s window never shows as 31 s.
  useNow(1000);
  const now = Date.now();
  const focus = props.focus ?? '';
  const [tab, setTab] = useState<'pending' | 'history'>('pending');
  // A link to a request opens the inbox on it, whichever tab was open.
  useEffect(() => {
    if (focus !== '') setTab('pending');
  }, [focus]);
  const role = store.session?.role ?? 'viewer';
  const [showSnoozed, setShowSnoozed] = useState(false);
  const target = useTarget(store, focus);
  const all = inboxOrder(
    // A pending request the inbox has not heard of yet (the link came first) is shown all the same.
    target.kind === 'pending' && !store.pending.some((a) => a.id === focus)
      ? [...store.pending, target.approval]
      : store.pending,
  );
  const snoozed = all.filter((a) => isSnoozed(a, now)).length;
  const awake = all.length - snoozed;
  // The request a link points at is shown even while snoozed.
  const pending = showSnoozed ? all : all.filter((a) => !isSnoozed(a, now) || a.id === focus);
  return (
    <section aria-labelledby="approvals-title">
      <div class="toolbar">
        <h2 id="approvals-title">Approvals</h2>
        <div role="tablist" class="tabs">
          <button
            type="button"
            role="tab"
            aria-selected={tab === 'pending'}
            onClick={() => setTab('pending')}
          >
            Pending ({showSnoozed ? all.length : awake})
          </button>
          <button
            type="button"
            role="tab"
            aria-selected={tab === 'history'}
            onClick={() => setTab('history')}
          >
            History
          </button>
        </div>
        {tab === 'pending' && snoozed > 0 && (
          <label>
            <input
              type="checkbox"
              checked={showSnoozed}
              onChange={(e) => setShowSnoozed(e.currentTarget.checked)}
            />{' '}
            show snoozed ({snoozed})
          </label>
        )}
      </div>
      {tab === 'pending' && <TargetNotice id={focus} target={target} />}
      {tab === 'pending' ? (
        pending.length === 0 ? (
          <p class="muted">Nothing waits for a decision.</p>
        ) : (
          <ul class="inbox">
            {pending.map((a) => (
              <Request
                key={a.id}
                store={store}
                approval={a}
                now={now}
                focused={a.id === focus}
                canDecide={roleAtLeast(role, 'approver')}
                canAnswer={roleAtLeast(role, 'operator')}
              />
            ))}
          </ul>
        )
      ) : (
        <ApprovalHistory store={store} />
      )}
    </section>
  );
}

/** Who said what and when, for every decision of a request (the answer's text is on its card). */
function Decisions(props: { a: Approval }) {
  const { a } = props;
  return (
    <ul class="decisions small">
      {a.approvals.map((v) => (
        <li key={`${v.by}-${v.at}`} data-vote={v.by}>
          {a.kind === 'checkpoint' ? 'answered' : hasVetoWindow(a) ? 'let through' : 'approved'} by{' '}
          <strong>{v.by}</strong> at{' '}
          <time dateTime={new Date(v.at).toISOString()}>{new Date(v.at).toLocaleString()}</time>
        </li>
      ))}
      {/* An answer's own line already says who answered and when. */}
      {a.status !== 'pending' && !(a.kind === 'checkpoint' && a.approvals.length > 0) && (
        <li data-decided={a.status}>
          {outcomeWord(a)}
          {a.decidedAt !== null && (
            <>
              {' '}
              at{' '}
              <time dateTime={new Date(a.decidedAt).toISOString()}>
                {new Date(a.decidedAt).toLocaleString()}
              </time>
            </>
          )}
          {typeof a.reason === 'string' && a.reason !== '' && <> — {a.reason}</>}
        </li>
      )}
    </ul>
  );
}

const HISTORY_ROW = 40;

/** Decided requests, searched and paged by the gateway. */
function ApprovalHistory(props: { store: Store }) {
  const { store } = props;
  const [filters, setFilters] = useState<Record<string, string>>({
    status: 'decided',
    kind: '',
    agent: '',
    skill: '',
    radius: '',
    by: '',
    text: '',
  });
  const search = useSearch<Approval>(store, '/api/search/approvals', filters);
  const set = (k: string) => (v: string) => setFilters((f) => ({ ...f, [k]: v }));
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = store.listen((e) => {
      if (!e.topic.startsWith('hitl.approval.') || search.items.length > 100) return;
      timer ??= setTimeout(() => {
        timer = undefined;
        search.reload();
      }, 300);
    });
    return () => {
      off();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [store, search.items.length]);
  const o = fleetOptions(store);
  return (
    <div class="search" data-search="approvals">
      <div class="filters">
        <label>
          outcome{' '}
          <select
            name="status"
            value={filters.status}
            onChange={(e) => set('status')(e.currentTarget.value)}
          >
            <option value="decided">any decided</option>
            {['approved', 'consumed', 'rejected', 'expired', 'void', 'pending'].map((x) => (
              <option key={x}>{x}</option>
            ))}
            <option value="">all</option>
          </select>
        </label>
        <FilterSelect
          name="kind"
          label="kind"
          value={filters.kind!}
          options={['dispatch', 'veto', 'checkpoint', 'follow-up']}
          onChange={set('kind')}
        />
        <FilterSelect
          name="agent"
          label="agent"
          value={filters.agent!}
          options={o.agents}
          onChange={set('agent')}
        />
        <FilterSelect
          name="skill"
          label="skill"
          value={filters.skill!}
          options={o.skills}
          onChange={set('skill')}
        />
        <FilterSelect
          name="radius"
          label="radius"
          value={filters.radius!}
          options={['self', 'project', 'repo', 'fleet', 'public']}
          onChange={set('radius')}
        />
        <SearchText label="who" value={filters.by!} onChange={set('by')} />
        <SearchText value={filters.text!} onChange={set('text')} />
        <Count shown={search.items.length} total={search.total} noun="requests" />
      </div>
      {search.error !== '' && (
        <p class="error" role="alert">
          {search.error}
        </p>
      )}
      <HistoryTable approvals={search.items} onEnd={search.more} />
    </div>
  );
}

export function HistoryTable(props: { approvals: readonly Approval[]; onEnd?: () => void }) {
  return (
    <VirtualTable
      class="history"
      rows={props.approvals}
      rowHeight={HISTORY_ROW}
      height={520}
      columns={8}
      {...(props.onEnd === undefined ? {} : { onEnd: props.onEnd })}
      head={
        <tr>
          <th scope="col">call</th>
          <th scope="col">radius</th>
          <th scope="col">kind</th>
          <th scope="col">outcome</th>
          <th scope="col">asked by</th>
          <th scope="col">decided by</th>
          <th scope="col">when</th>
          <th scope="col">reason</th>
        </tr>
      }
      row={(a) => (
        <tr
          key={a.id}
          class="row"
          data-approval={a.id}
          data-status={a.status}
          style={{ height: `${HISTORY_ROW}px` }}
        >
          <td>
            <a href={`#/calls/${encodeURIComponent(a.dispatchId)}`} data-call-link>
              {a.agent} / {a.skill}
            </a>
          </td>
          <td>
            <RadiusBadge radius={a.radius} />
          </td>
          <td data-kind>
            {a.kind === 'checkpoint' ? 'question' : a.kind === 'veto' ? 'veto window' : a.kind}
          </td>
          <td>
            <a href={`#/approvals/${encodeURIComponent(a.id)}`}>
              <span class={`badge outcome-${a.status}`}>{outcomeWord(a)}</span>
            </a>
          </td>
          <td>{a.requestedBy ?? '—'}</td>
          <td data-decided-by>
            {[
              ...new Set([
                ...a.approvals.map((v) => v.by),
                ...(a.decidedBy === null ? [] : [a.decidedBy]),
              ]),
            ].join(', ') ||
              (a.status === 'expired'
                ? 'nobody (expired)'
                : hasVetoWindow(a)
                  ? 'nobody (window ended)'
                  : '—')}
          </td>
          <td data-decided-at>
            {a.decidedAt === null ? '—' : new Date(a.decidedAt).toLocaleString()}
          </td>
          <td class="clip">{typeof a.reason === 'string' ? a.reason : ''}</td>
        </tr>
      )}
    />
  );
}

interface AuditRow {
  seq: number;
  path: string;
  op: string;
  value: unknown;
  previous?: unknown;
  next?: unknown;
  status: string;
  agent: string;
  skill: string;
  taskId: string;
  recordedAt: number;
}

/** What the skill's recent calls changed, from the audit log of each domain it declared. */
function RecentChanges(props: { store: Store; approval: Approval }) {
  const { store, approval: a } = props;
  const [rows, setRows] = useState<(AuditRow & { domain: string })[] | undefined>();
  const [calls, setCalls] = useState<DispatchRecord[]>([]);
  const domains = Array.isArray(a.domains) ? a.domains : [];
  useEffect(() => {
    let live = true;
    const query = `agent=${encodeURIComponent(a.agent)}&skill=${encodeURIComponent(a.skill)}&limit=6`;
    void store
      .api!.get<{ dispatches: DispatchRecord[] }>(`/api/dispatches?${query}`)
      .then((d) => live && setCalls(d.dispatches.filter((x) => x.id !== a.dispatchId).slice(0, 5)))
      .catch(() => undefined);
    void Promise.all(
      domains.map((d) =>
        store
          .api!.get<{ records: AuditRow[] }>(
            `/api/world/${encodeURIComponent(d)}/history?order=desc&limit=500`,
          )
          .then((h) => h.records.map((r) => ({ ...r, domain: d })))
          .catch(() => []),
      ),
    ).then((all) => {
      if (!live) return;
      setRows(
        all
          .flat()
          .filter((r) => r.agent === a.agent && r.skill === a.skill)
          .sort((x, y) => y.recordedAt - x.recordedAt)
          .slice(0, 10),
      );
    });
    return () => {
      live = false;
    };
  }, [store, a.id]);
  return (
    <>
      <h3>Its last calls</h3>
      {calls.length === 0 ? (
        <p class="muted small">No earlier call of this skill.</p>
      ) : (
        <ul class="small last-calls">
          {calls.map((c) => (
            <li key={c.id}>
              <a href={`#/calls/${encodeURIComponent(c.id)}`}>{shortId(c.id)}</a>{' '}
              <span class={`badge status status-${c.status}`}>{c.status}</span>{' '}
              {new Date(c.createdAt).toLocaleString()}
            </li>
          ))}
        </ul>
      )}
      <h3>What its last calls changed</h3>
      {rows === undefined ? (
        <p class="muted">…</p>
      ) : rows.length === 0 ? (
        <p class="muted small" data-last-changes="0">
          Nothing yet in {domains.join(', ') || 'any domain'}.
        </p>
      ) : (
        <div class="table-wrap">
          <table class="last-changes" data-last-changes={rows.length}>
            <thead>
              <tr>
                <th scope="col">when</th>
                <th scope="col">domain</th>
                <th scope="col">path</th>
                <th scope="col">op</th>
                <th scope="col">before</th>
                <th scope="col">after</th>
                <th scope="col">call</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={`${r.domain}-${r.seq}`} data-path={r.path}>
                  <td class="small">{new Date(r.recordedAt).toLocaleString()}</td>
                  <td>{r.domain}</td>
                  <td>
                    <code>{r.path}</code>
                  </td>
                  <td>{r.op}</td>
                  <td>
                    <code>{JSON.stringify(r.previous ?? null)}</code>
                  </td>
                  <td>
                    {r.status === 'rejected' ? (
                      <span class="error">rejected</span>
                    ) : (
                      <code>{JSON.stringify(r.next ?? null)}</code>
                    )}
                  </td>
                  <td>
                    <a
                      href={`#/calls?agent=${encodeURIComponent(r.agent)}&task=${encodeURIComponent(r.taskId)}`}
                    >
                      {r.taskId.slice(0, 8)}
                    </a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

/**
 * One approval request on its own page (`#/approvals/<id>`): the request with its countdown and
 * buttons, the exact call it is bound to (input and fingerprint), the domains the skill declared
 * and what its last calls changed there, and every decision with who and when.
 */
export function ApprovalPage(props: { store: Store; id: string }) {
  const store = useStore(props.store);
  // The clock ticks every second; a render between ticks (a request that just arrived) reads
  // the time itself, so a fresh 30 s window never shows as 31 s.
  useNow(1000);
  const now = Date.now();
  const role = store.session?.role ?? 'viewer';
  const [approval, setApproval] = useState<Approval | undefined>();
  const [error, setError] = useState<{ missing: boolean; message: string } | undefined>();
  useEffect(() => {
    store
      .api!.get<Approval>(`/api/approvals/${encodeURIComponent(props.id)}`)
      .then((a) => {
        setApproval(a);
        setError(undefined);
      })
      .catch((e: unknown) =>
        setError({
          missing: e instanceof ApiError && e.status === 404,
          message: describeError(e),
        }),
      );
  }, [store, props.id, store.pending, store.history]);
  // A vote cast elsewhere (another approver, this approver's other tab) shows at once: the
  // count, who voted, and no Approve for one who already did.
  useEffect(
    () =>
      store.listen((event) => {
        const vote = voteOf(event);
        if (vote?.approvalId !== props.id) return;
        setApproval((a) => (a === undefined ? a : withVote(a, vote)));
      }),
    [store, props.id],
  );
  if (error !== undefined && (error.missing || approval === undefined)) {
    return (
      <section class="approval-detail">
        <div class="toolbar">
          <h2 id="approval-title">Approval {shortId(props.id)}</h2>
          <a class="small" href="#/approvals">
            inbox
          </a>
        </div>
        <p class="error" role="alert" data-target={error.missing ? 'missing' : 'failed'}>
          {error.missing ? (
            <>
              No approval request <code>{props.id}</code> on this gateway: the link may be mistyped,
              or come from another gateway.
            </>
          ) : (
            error.message
          )}
        </p>
      </section>
    );
  }
  if (approval === undefined) return <p class="muted">…</p>;
  const a = approval;
  return (
    <section aria-labelledby="approval-title" class="approval-detail" data-approval={a.id}>
      <div class="toolbar">
        <h2 id="approval-title">
          {a.kind === 'veto' ? 'Veto window' : a.kind === 'checkpoint' ? 'Question' : 'Approval'}:{' '}
          {a.agent} / {a.skill}
        </h2>
        <a class="small" href="#/approvals">
          inbox
        </a>
      </div>
      {a.status !== 'pending' && (
        <p class="notice" role="status" data-target="decided">
          Already decided: <span class={`badge outcome-${a.status}`}>{outcomeWord(a)}</span>
          {a.decidedAt !== null && <> at {new Date(a.decidedAt).toLocaleString()}</>}. Nothing is
          left to decide.
        </p>
      )}
      {error !== undefined && (
        <p class="error" role="alert">
          {error.message}
        </p>
      )}
      <ul class="inbox">
        <Request
          store={store}
          approval={a}
          now={now}
          detail
          canDecide={roleAtLeast(role, 'approver')}
          canAnswer={a.status === 'pending' && roleAtLeast(role, 'operator')}
        />
      </ul>
      <h3>The call it is bound to</h3>
      <dl class="stamps bound-call">
        <dt>agent / skill</dt>
        <dd>
          {a.agent} / {a.skill}
        </dd>
        <dt>radius</dt>
        <dd>
          <RadiusBadge radius={a.radius} /> <span class="badge mode">{a.mode}</span>
        </dd>
        <dt>dispatch</dt>
        <dd>
          <a href={`#/calls/${encodeURIComponent(a.dispatchId)}`}>{a.dispatchId}</a>
        </dd>
        <dt>fingerprint</dt>
        <dd>
          <code data-fingerprint>{typeof a.fingerprint === 'string' ? a.fingerprint : '—'}</code>
        </dd>
        <dt>policy version</dt>
        <dd>
          <code>{typeof a.policyVersion === 'string' ? a.policyVersion : '—'}</code>
        </dd>
        <dt>declared domains</dt>
        <dd data-domains>
          {Array.isArray(a.domains) ? a.domains.join(', ') || 'none' : 'not declared'}
        </dd>
      </dl>
      <h3>Decisions</h3>
      {a.approvals.length === 0 && a.status === 'pending' ? (
        <p class="muted small">
          {a.kind === 'checkpoint' ? 'Nobody answered yet.' : 'Nobody decided yet.'}
        </p>
      ) : (
        <Decisions a={a} />
      )}
      <RecentChanges store={store} approval={a} />
    </section>
  );
}
