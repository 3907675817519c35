/**
 * The page: token login (kept in session storage for this tab), the metrics strip, a tab per
 * view, and one live-event stream that keeps every view current.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, createApi, errorText, isUnreachable } from './api.js';
import { openEventStream } from './events.js';
import { lazyView } from './lazy-view.js';
import type { Session, Store } from './state.js';
import { useStore } from './state.js';
import type { Role } from './types.js';
import { ApprovalPage, ApprovalsView } from './views/approvals.js';
import { CallByTask, CallView } from './views/call.js';
import { DispatchesView } from './views/dispatches.js';
import { EffectsPage } from './views/effects.js';
import { FleetView } from './views/fleet.js';
import { MetricsStrip } from './views/metrics.js';

/** The world view and its charts (uPlot) load when first shown: the first screen waits for less. */
const WorldView = lazyView(() => import('./views/world.js').then((m) => m.WorldView));

export const TOKEN_KEY = 'fleetgate.token';
/** Who the gateway said this tab's token is (the token, its name and role), for rendering a reload at once. */
const WHO_KEY = 'fleetgate.who';

/** The session this tab last signed in with `token`, when it is remembered. */
function cachedSession(token: string): Session | undefined {
  try {
    const who = JSON.parse(sessionStorage.getItem(WHO_KEY) ?? 'null') as {
      token?: unknown;
      name?: unknown;
      role?: unknown;
    } | null;
    // Only for the token it was said of (`#token=…` may have brought another).
    if (who?.token !== token || typeof who.name !== 'string' || typeof who.role !== 'string')
      return undefined;
    if (!['viewer', 'operator', 'approver', 'admin'].includes(who.role)) return undefined;
    return { token, name: who.name, role: who.role as Role };
  } catch {
    return undefined;
  }
}

/** Why the page signed out by itself, shown on the sign-in form after the reload. */
const SIGNED_OUT_KEY = 'fleetgate.signedOut';

/**
 * Forgets the token and starts the page over at sign-in, saying why: nothing the page held (and
 * no button that acted on it) outlives a session the gateway no longer knows.
 */
function expire(why: string): void {
  if (sessionStorage.getItem(SIGNED_OUT_KEY) !== null && sessionStorage.getItem(TOKEN_KEY) === null)
    return;
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(WHO_KEY);
  sessionStorage.setItem(SIGNED_OUT_KEY, why);
  location.reload();
}
const VIEWS = ['fleet', 'approvals', 'effects', 'world', 'dispatches'] as const;
type View = (typeof VIEWS)[number];
const TITLES: Record<View, string> = {
  fleet: 'Fleet',
  approvals: 'Approvals',
  effects: 'Live effects',
  world: 'World state',
  dispatches: 'Dispatches',
};
const TOPICS = ['world.>', 'ops.alert.>', 'skill.dispatch.>', 'hitl.>', 'fleet.>'];

/** A page that is not a tab: one call, one approval. */
type Page = { kind: 'call'; id: string } | { kind: 'approval'; id: string };

function parseHash(hash: string): {
  view: View;
  params: URLSearchParams;
  page: Page | undefined;
} {
  const [path = '', query = ''] = hash.replace(/^#\/?/, '').split('?');
  const params = new URLSearchParams(query);
  const [head = '', id = ''] = path.split('/');
  if (head === 'calls') {
    return { view: 'dispatches', params, page: { kind: 'call', id: decodeURIComponent(id) } };
  }
  if (head === 'approvals' && id !== '') {
    return { view: 'approvals', params, page: { kind: 'approval', id: decodeURIComponent(id) } };
  }
  const view = (VIEWS as readonly string[]).includes(head) ? (head as View) : 'fleet';
  return { view, params, page: undefined };
}

function Toasts(props: { store: Store }) {
  const { store } = props;
  if (store.toasts.length === 0) return null;
  return (
    <ul class="toasts" aria-live="polite">
      {store.toasts.map((t) => (
        <li key={t.key} class={`toast toast-${t.kind}`} data-toast={t.kind}>
          <a href={`#/calls/${encodeURIComponent(t.dispatchId)}`} data-dispatch={t.dispatchId}>
            {t.text}
          </a>
          <button
            type="button"
            class="small-button"
            aria-label="Dismiss"
            onClick={() => store.dismissToast(t.key)}
          >
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = (): void => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

/**
 * Set (in local storage, per origin) once this gateway is known to ask for tokens: a tab without a
 * token then shows the sign-in form without first asking the gateway who nobody is (a 401).
 */
const TOKENS_KEY = 'fleetgate.tokensRequired';

function remember(tokensRequired: boolean): void {
  try {
    if (tokensRequired) localStorage.setItem(TOKENS_KEY, '1');
    else localStorage.removeItem(TOKENS_KEY);
  } catch {
    // Storage refused (a private window's quota): the page asks again next time.
  }
}

/**
 * Whether a tab without a token may be signed in by the gateway itself. Only a gateway without
 * tokens does that, and it listens on loopback only (`FLEETGATE_LISTEN_UNSAFE`): a page from any
 * other host, or from a gateway that asked this browser for a token before, shows the form. (A
 * tokenless gateway behind a proxy: Sign in with the field empty.)
 */
function mayBeTokenless(): boolean {
  try {
    if (localStorage.getItem(TOKENS_KEY) !== null) return false;
  } catch {
    // No storage: decide by the host alone.
  }
  const host = location.hostname;
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host === '[::1]' ||
    /^127(\.\d{1,3}){3}$/.test(host)
  );
}

/** Asks the gateway who a token is (`''`: no token, for a gateway without tokens); throws when refused. */
async function signIn(token: string): Promise<Session> {
  let who: { name: string; role: Role; authenticated: boolean };
  try {
    who = await createApi(token).get<{ name: string; role: Role; authenticated: boolean }>(
      '/api/session',
    );
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) remember(true);
    throw error;
  }
  remember(who.authenticated);
  return { token, name: who.name, role: who.role };
}

function describeSignInError(error: unknown): string {
  if (isUnreachable(error)) {
    return `${error.message} Is it running? Try again once it is.`;
  }
  return errorText(error);
}

function Login(props: { onSession(s: Session): void; message: string }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(props.message);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    try {
      props.onSession(await signIn(token.trim()));
    } catch (err) {
      setError(describeSignInError(err));
    }
  };
  return (
    <main class="login">
      <h1>Fleetgate</h1>
      <form onSubmit={(e) => void submit(e)}>
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          placeholder="the token the gateway printed, or one from auth.tokens"
        />
        <button type="submit">Sign in</button>
        <p class="muted small">
          Kept in this tab's session storage only. A gateway without tokens needs none: sign in with
          the field empty.
        </p>
        {error !== '' && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

export function App(props: { store: Store }) {
  const store = useStore(props.store);
  const hash = useHash();
  const [message, setMessage] = useState(() => {
    const why = sessionStorage.getItem(SIGNED_OUT_KEY) ?? '';
    sessionStorage.removeItem(SIGNED_OUT_KEY);
    return why;
  });
  const [checked, setChecked] = useState(false);
  const { view, params, page } = parseHash(hash);

  useEffect(() => {
    const saved = sessionStorage.getItem(TOKEN_KEY) ?? '';
    // This tab signed in before (a reload): render at once as who the gateway said the token is,
    // while asking again; an answer that differs replaces it, a refusal signs out.
    const known = saved === '' ? undefined : cachedSession(saved);
    // With a token from this tab's session the views started loading before the first render
    // (`main.tsx`), while the gateway is asked who it is.
    if (known !== undefined) {
      start(known, true);
      setChecked(true);
    }
    // Without a token, only a gateway that has none signs the tab in: ask only one that may.
    if (saved === '' && !mayBeTokenless()) {
      setChecked(true);
      return;
    }
    signIn(saved)
      .then((s) => {
        if (known === undefined) start(s, saved !== '');
        else if (s.name !== known.name || s.role !== known.role) {
          store.session = s;
          sessionStorage.setItem(
            WHO_KEY,
            JSON.stringify({ token: s.token, name: s.name, role: s.role }),
          );
          store.changed();
        }
      })
      .catch((e: unknown) => {
        if (known !== undefined && e instanceof ApiError && e.status === 401) {
          expire(
            `Signed out: the gateway no longer accepts this token (${e.message}). Sign in again.`,
          );
        } else if (saved !== '' && known === undefined) {
          setMessage(describeSignInError(e));
        }
      })
      .finally(() => setChecked(true));
  }, []);

  const start = (session: Session, loading = false): void => {
    sessionStorage.setItem(TOKEN_KEY, session.token);
    sessionStorage.setItem(
      WHO_KEY,
      JSON.stringify({ token: session.token, name: session.name, role: session.role }),
    );
    store.session = session;
    store.api = createApi(session.token, '', (said) =>
      expire(`Signed out: the gateway no longer accepts this token (${said}). Sign in again.`),
    );
    store.changed();
    if (!loading) void store.loadAll();
    /** A gateway that restarted is another one: what the page holds may be stale. */
    const checkGateway = (): void => {
      const before = store.status;
      store
        .loadStatus()
        .then((same) => {
          if (!same) {
            expire(
              `Signed out: the gateway restarted (${before?.instance.slice(0, 8) ?? '?'} → ${store.status?.instance.slice(0, 8) ?? '?'}, version ${store.status?.version ?? '?'}). Sign in again to see its current state.`,
            );
          }
        })
        .catch(() => undefined);
    };
    checkGateway();
    const stream = openEventStream({
      token: session.token,
      topics: TOPICS,
      onEvent: (e) => store.onEvent(e),
      onStatus: (s, detail) => {
        // Every (re)connection: is it still the same gateway?
        if (s === 'live' && store.stream !== 'live' && store.status !== undefined) checkGateway();
        // Back after an outage: what failed to load meanwhile is read again.
        if (s === 'live' && store.streamLostAt !== undefined && store.error !== '')
          void store.loadAll();
        if (s === 'live') store.streamLostAt = undefined;
        else if (s !== 'connecting') store.streamLostAt ??= Date.now();
        store.stream = s;
        store.streamDetail = detail ?? '';
        store.changed();
      },
      onGap: () => {
        checkGateway();
        void store.loadAll();
      },
      onUnauthorized: (said) =>
        expire(`Signed out: the gateway no longer accepts this token (${said}). Sign in again.`),
    });
    addEventListener('pagehide', () => stream.close(), { once: true });
  };

  // What the inbox counts as pending (snoozed requests are not).
  const waiting = store.awaitingDecision.length;
  useEffect(() => {
    document.title = `${waiting > 0 ? `(${waiting}) ` : ''}Fleetgate`;
  }, [waiting]);

  if (!checked) return <p class="muted">…</p>;
  if (store.session === undefined) return <Login onSession={start} message={message} />;
  const signOut = (): void => {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(WHO_KEY);
    location.reload();
  };
  return (
    <>
      <header class="top">
        <h1>Fleetgate</h1>
        <nav aria-label="Views">
          {VIEWS.map((v) => (
            <a key={v} href={`#/${v}`} aria-current={v === view ? 'page' : undefined} data-view={v}>
              {TITLES[v]}
              {v === 'approvals' && waiting > 0 && (
                <span class="count" data-pending-count={waiting} aria-label={`${waiting} pending`}>
                  {waiting}
                </span>
              )}
            </a>
          ))}
        </nav>
        <span class="who small">
          {store.session.name} ({store.session.role}){' '}
          <button type="button" class="small-button" onClick={signOut}>
            Sign out
          </button>
        </span>
      </header>
      <MetricsStrip store={store} />
      {store.error !== '' && (
        <p class="error" role="alert">
          {store.error}
        </p>
      )}
      <Toasts store={store} />
      <main>
        {page?.kind === 'call' &&
          (page.id === '' ? (
            <CallByTask
              store={store}
              agent={params.get('agent') ?? ''}
              task={params.get('task') ?? ''}
            />
          ) : (
            <CallView key={page.id} store={store} id={page.id} />
          ))}
        {page?.kind === 'approval' && <ApprovalPage key={page.id} store={store} id={page.id} />}
        {page === undefined && view === 'fleet' && <FleetView store={store} />}
        {page === undefined && view === 'approvals' && (
          <ApprovalsView store={store} focus={params.get('id') ?? ''} />
        )}
        {page === undefined && view === 'effects' && <EffectsPage store={store} params={params} />}
        {page === undefined && view === 'world' && <WorldView store={store} params={params} />}
        {page === undefined && view === 'dispatches' && (
          <DispatchesView
            store={store}
            focus={{
              ...(params.get('id') === null ? {} : { id: params.get('id')! }),
              ...(params.get('task') === null ? {} : { task: params.get('task')! }),
            }}
          />
        )}
      </main>
    </>
  );
}
