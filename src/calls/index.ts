/**
 * The calls room: the life of one call as a pure transition (`advance`), the one status
 * vocabulary of calls, and how an ended call is summed up. The dispatcher runs it.
 */
export {
  advance,
  CANCEL_REQUESTED_CODE,
  ENDED_STATUSES,
  RESULT_TEXT_LIMIT,
  statusOfState,
  summaryOf,
  type Advanced,
  type CallEffect,
  type CallError,
  type CallEvent,
  type CallState,
  type CallStatus,
  type CallTopic,
} from './advance.js';
