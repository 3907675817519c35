/**
 * Dispatch: the fleet client (per-agent SDK clients, the extension chain around every call) and
 * the single terminal seam, `onTerminal`.
 */
export {
  createFleetClient,
  type FleetClient,
  type FleetClientOptions,
  type ResumedCall,
} from './fleet-client.js';
export type { CallInput, CallMode, CallOptions, CallResult, CallTiming } from './call-types.js';
export {
  createAgentClient,
  pinCard,
  toSdkAgentCard,
  type AgentClient,
  type FleetAgent,
  type FleetAgentSource,
  type TransportBinding,
} from './agent-clients.js';
export { mergeExtensionHeader, readEchoedExtensions } from './headers.js';
export { TaskAccumulator, readReply, type DataPart } from './task-accumulator.js';
export {
  TerminalRouter,
  outcomeForTask,
  type PendingCall,
  type TerminalClaim,
  type TerminalCommit,
  type TerminalPath,
  type TerminalResult,
  type TerminalRouterOptions,
} from './terminal.js';
export * from './dispatch-records.js';
export * from './dispatcher.js';
export * from './policy-gate.js';
