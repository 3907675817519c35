import { render } from 'preact';
import { App } from './app.js';
import { Store } from './state.js';
import './style.css';

const store = new Store();
// For the browser suite and the load benchmark: the store the page renders from.
(window as unknown as { fleetgate: Store }).fleetgate = store;
render(<App store={store} />, document.getElementById('app')!);
