/**
 * A view whose code loads when it is first shown, so the first screen waits for less. Unlike
 * `preact/compat`'s `lazy`, which keeps a failed load for good (the view stays blank until the page
 * is reloaded), a failure is said with a Retry button, and the next time the view is shown its code
 * is asked for again. Only a load that succeeded is kept.
 */
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/**
 * A component that renders what `load` resolves to once it loaded.
 * @example
 * const WorldView = lazyView(() => import('./views/world.js').then((m) => m.WorldView));
 */
export function lazyView<P extends object>(
  load: () => Promise<ComponentType<P>>,
): ComponentType<P> {
  let loaded: ComponentType<P> | undefined;
  /** The load under way, shared by every view that waits for it; forgotten when it fails. */
  let loading: Promise<ComponentType<P>> | undefined;
  const get = (): Promise<ComponentType<P>> =>
    (loading ??= load().then(
      (view) => (loaded = view),
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    ));
  return function LazyView(props: P) {
    // Renders again once the code is in (the component itself is kept in `loaded`, not in
    // state: a function given to `useState` would be called as its initialiser).
    const [, setLoads] = useState(0);
    const [error, setError] = useState('');
    const [attempt, setAttempt] = useState(0);
    useEffect(() => {
      if (loaded !== undefined) return undefined;
      let live = true;
      get().then(
        () => live && setLoads((n) => n + 1),
        (e: unknown) => live && setError(e instanceof Error ? e.message : String(e)),
      );
      return () => {
        live = false;
      };
    }, [attempt]);
    if (loaded !== undefined) {
      const View = loaded;
      return <View {...props} />;
    }
    if (error !== '') {
      return (
        <div class="load-failed" role="alert" data-load-failed>
          <p class="error">
            This view could not be loaded: {error}. The gateway may be restarting or out of reach.
          </p>
          <button
            type="button"
            onClick={() => {
              setError('');
              setAttempt((n) => n + 1);
            }}
          >
            Retry
          </button>
        </div>
      );
    }
    return <p class="muted">…</p>;
  };
}
