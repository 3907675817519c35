import { render } from 'preact';
import { createApi } from './api.js';
import { App, TOKEN_KEY } from './app.js';
import { Store } from './state.js';
import './style.css';

// `npm start` prints the dashboard URL with the run's token in the fragment (`/#token=…`), which
// the browser never sends to the server: keep it for this tab's session and clear the address bar.
// A link to a view may carry one too (`#/approvals?id=…&token=…`): the view stays.
const [route = '', query = ''] = location.hash.slice(1).split('?');
const fragment = new URLSearchParams(route.startsWith('/') ? query : location.hash.slice(1));
const fromHash = fragment.get('token');
if (fromHash !== null && fromHash !== '') {
  sessionStorage.setItem(TOKEN_KEY, fromHash);
  fragment.delete('token');
  const rest = fragment.toString();
  const view = route.startsWith('/') ? `#${route}${rest === '' ? '' : `?${rest}`}` : '#/fleet';
  history.replaceState(null, '', `${location.pathname}${location.search}${view}`);
}

const store = new Store();
// A tab that signed in before: the views' snapshots are asked for now, before the first render
// (the page renders them as they come; a refused token signs the page out).
const saved = sessionStorage.getItem(TOKEN_KEY) ?? '';
if (saved !== '') {
  store.api = createApi(saved);
  void store.loadAll();
}
// For the browser suite and the load benchmark: the store the page renders from.
(window as unknown as { fleetgate: Store }).fleetgate = store;
render(<App store={store} />, document.getElementById('app')!);
