/** The example agents: real `@a2a-js/sdk` servers used by tests and the demo fleet. */
export * from './harness.js';
export * from './ops-agent.js';
export * from './plain-agent.js';
export * from './streaming-agent.js';
export * from './legacy-agent.js';
