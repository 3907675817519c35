/**
 * Dispatch: the fleet client (per-agent SDK clients, the extension chain around every call), the
 * task terminal every path settles a task through, and the dispatcher.
 */
export { createFleetClient, type FleetClient, type FleetClientOptions } from './fleet-client.js';
export type {
  CallInput,
  CallMode,
  CallOptions,
  CallResult,
  CallTiming,
  FollowRequest,
  TaskFollower,
} from './call-types.js';
export {
  createAgentClient,
  pinCard,
  toSdkAgentCard,
  type AgentClient,
  type FleetAgent,
  type FleetAgentSource,
  type TransportBinding,
} from './agent-clients.js';
export {
  createAgentFetch,
  DEFAULT_AGENT_RESPONSE_BYTES,
  DEFAULT_AGENT_RESPONSE_TIMEOUT_MS,
  type AgentFetchLimits,
} from './agent-fetch.js';
export { mergeExtensionHeader, readEchoedExtensions } from './headers.js';
export { TaskAccumulator, readReply, type DataPart } from './task-accumulator.js';
export { createTaskTerminal, outcomeForTask, type TaskTerminal } from './terminal.js';
export type {
  ChainSource,
  ClaimGroup,
  ClaimJournal,
  HeldCall,
  JournaledClaim,
  SettledTask,
  SettlePath,
  SettleResult,
  TaskCall,
  TaskTerminalOptions,
  TerminalRecords,
} from './terminal-types.js';
export * from './claim-journal.js';
export * from './dispatch-records.js';
export * from './dispatcher.js';
export * from './handle.js';
export {
  createDispatchWatcher,
  type DispatchEventSource,
  type DispatchWatcher,
} from './watcher.js';
export * from './store-tables.js';
export * from './policy-gate.js';
