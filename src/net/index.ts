/**
 * The ground floor of the HTTP exchanges with agents, over `node:http` / `node:https`: calls to
 * agents (dispatch) and card fetches (fleet) both go through it. It imports no room.
 */
export { canExchange, exchange, exchangeWhole } from './exchange.js';
export type { Exchanged, WholeAnswer, WholeExchange } from './exchange.js';
