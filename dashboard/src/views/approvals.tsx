/**
 * The approvals inbox: every pending request of the fleet, widest radius first then oldest, with
 * a countdown to expiry; approve, reject with a reason, snooze (hidden for a while, not a
 * rejection); a history tab. A request someone else decided answers 409: said inline.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api.js';
import { RadiusBadge, radiusRank } from '../radius.js';
import type { Store } from '../state.js';
import { ago, countdown, roleAtLeast, useNow, useStore } from '../state.js';
import type { Approval } from '../types.js';

/** Pending requests in inbox order: widest radius first, then the oldest. */
export function inboxOrder(approvals: readonly Approval[]): Approval[] {
  return [...approvals].sort(
    (a, b) => radiusRank(b.radius) - radiusRank(a.radius) || a.createdAt - b.createdAt,
  );
}

function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    const by = error.details?.decidedBy;
    if (error.status === 409) {
      return typeof by === 'string'
        ? `Already decided by ${by}.`
        : `Already decided: ${error.message}`;
    }
    return `${error.code}: ${error.message}`;
  }
  return String(error);
}

function Request(props: {
  store: Store;
  approval: Approval;
  now: number;
  canDecide: boolean;
  canAnswer: boolean;
}) {
  const { store, approval: a, now } = props;
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
  const snoozed = typeof a.snoozedUntil === 'number' && a.snoozedUntil > now;
  return (
    <li
      class={`request${snoozed ? ' snoozed' : ''}`}
      data-approval={a.id}
      data-dispatch={a.dispatchId}
    >
      <div class="request-head">
        <RadiusBadge radius={a.radius} />
        <strong>
          {a.agent} / {a.skill}
        </strong>
        <span class="badge mode">{a.kind === 'checkpoint' ? 'question' : a.mode}</span>
        <span class="muted small">from {a.requestedBy ?? 'unknown'}</span>
        <span class="muted small">asked {ago(a.createdAt, now)}</span>
        <a class="small" href={`#/calls/${encodeURIComponent(a.dispatchId)}`} data-call-link>
          the call
        </a>
        <a class="small" href={`#/approvals/${encodeURIComponent(a.id)}`} data-approval-link>
          details
        </a>
        <span class="countdown" title={new Date(a.expiresAt).toISOString()}>
          expires in {countdown(a.expiresAt, now)}
        </span>
        {snoozed && (
          <span class="badge">snoozed until {new Date(a.snoozedUntil!).toLocaleTimeString()}</span>
        )}
        {a.requiredApprovals > 1 && (
          <span class="badge">
            {a.approvals.length}/{a.requiredApprovals} approvals
          </span>
        )}
      </div>
      {a.question !== null && <p class="question">{a.question}</p>}
      <ul class="reasons">
        {a.reasons.map((r, i) => (
          <li key={i}>
            <code>{r.kind}</code> {r.detail}
          </li>
        ))}
      </ul>
      <div class="muted small">
        domains:{' '}
        {Array.isArray(a.domains) ? (a.domains as string[]).join(', ') || 'none' : 'not declared'}
      </div>
      {a.input !== undefined && a.input !== null && (
        <pre class="input">
          {a.input.text ?? ''}
          {a.input.data === undefined ? '' : `\n${JSON.stringify(a.input.data, null, 2)}`}
        </pre>
      )}
      {a.kind === 'checkpoint'
        ? props.canAnswer && (
            <div class="actions">
              <label>
                Answer <input value={answer} onInput={(e) => setAnswer(e.currentTarget.value)} />
              </label>
              <button
                type="button"
                disabled={busy || answer.trim() === ''}
                onClick={() => void act('answer')}
              >
                Send answer
              </button>
            </div>
          )
        : props.canDecide && (
            <div class="actions">
              <button
                type="button"
                class="approve"
                disabled={busy}
                onClick={() => void act('approve')}
              >
                Approve
              </button>
              {rejecting ? (
                <>
                  <label>
                    Reason{' '}
                    <input
                      class="reason"
                      value={reason}
                      onInput={(e) => setReason(e.currentTarget.value)}
                    />
                  </label>
                  <button
                    type="button"
                    class="reject"
                    disabled={busy}
                    onClick={() => void act('reject')}
                  >
                    Confirm reject
                  </button>
                </>
              ) : (
                <button
                  type="button"
                  class="reject"
                  disabled={busy}
                  onClick={() => setRejecting(true)}
                >
                  Reject…
                </button>
              )}
              <button type="button" disabled={busy} onClick={() => void act('snooze')}>
                Snooze 15m
              </button>
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

export function ApprovalsView(props: { store: Store }) {
  const store = useStore(props.store);
  const now = useNow(1000);
  const [tab, setTab] = useState<'pending' | 'history'>('pending');
  const role = store.session?.role ?? 'viewer';
  const [showSnoozed, setShowSnoozed] = useState(false);
  const all = inboxOrder(store.pending);
  const isSnoozed = (a: Approval): boolean =>
    typeof a.snoozedUntil === 'number' && a.snoozedUntil > now;
  const snoozed = all.filter(isSnoozed).length;
  const pending = showSnoozed ? all : all.filter((a) => !isSnoozed(a));
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
            Pending ({pending.length})
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
                canDecide={roleAtLeast(role, 'approver')}
                canAnswer={roleAtLeast(role, 'operator')}
              />
            ))}
          </ul>
        )
      ) : (
        <div class="table-wrap">
          <table class="history">
            <thead>
              <tr>
                <th scope="col">call</th>
                <th scope="col">radius</th>
                <th scope="col">outcome</th>
                <th scope="col">by</th>
                <th scope="col">when</th>
                <th scope="col">reason</th>
              </tr>
            </thead>
            <tbody>
              {store.history.map((a) => (
                <tr key={a.id} data-approval={a.id}>
                  <td>
                    {a.agent} / {a.skill}
                  </td>
                  <td>
                    <RadiusBadge radius={a.radius} />
                  </td>
                  <td>
                    <span class={`badge outcome-${a.status}`}>{a.status}</span>
                  </td>
                  <td>{a.decidedBy ?? (a.status === 'expired' ? 'expiry' : '—')}</td>
                  <td>{a.decidedAt === null ? '—' : new Date(a.decidedAt).toLocaleString()}</td>
                  <td>{typeof a.reason === 'string' ? a.reason : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** One approval request on its own page (`#/approvals/<id>`). */
export function ApprovalPage(props: { store: Store; id: string }) {
  const store = useStore(props.store);
  const now = useNow(1000);
  const role = store.session?.role ?? 'viewer';
  const [approval, setApproval] = useState<Approval | undefined>();
  const [error, setError] = useState('');
  useEffect(() => {
    store
      .api!.get<Approval>(`/api/approvals/${encodeURIComponent(props.id)}`)
      .then(setApproval)
      .catch((e: unknown) => setError(describeError(e)));
  }, [store, props.id, store.pending, store.history]);
  if (error !== '') {
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  }
  if (approval === undefined) return <p class="muted">…</p>;
  return (
    <section aria-label="Approval">
      <ul class="inbox">
        <Request
          store={store}
          approval={approval}
          now={now}
          canDecide={approval.status === 'pending' && roleAtLeast(role, 'approver')}
          canAnswer={approval.status === 'pending' && roleAtLeast(role, 'operator')}
        />
      </ul>
    </section>
  );
}
