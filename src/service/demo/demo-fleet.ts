/**
 * The demo fleet behind `fleetgate start` with no configuration: the example agents of
 * `examples/demo/` run in a child process (real `@a2a-js/sdk` servers on free loopback ports),
 * and the gateway gets a configuration naming them, a policy that shows every mode, seeded world
 * state, a generated admin token and, with `--demo-traffic`, a call every few seconds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FleetgateError } from '../../protocol/index.js';
import type { FleetgateConfigInput } from '../config.js';
import type { Gateway } from '../gateway-types.js';

/** A running demo fleet. */
export interface DemoFleet {
  agents: { name: string; url: string }[];
  seeds: Record<string, unknown>;
  /** Stops the agents (after the gateway closed: calls in flight finish first). */
  stop(): Promise<void>;
}

/** Found from the package's root: bundled into `dist/`, this module has no place of its own. */
const SCRIPT = new URL('examples/demo/run.ts', import.meta.resolve('fleetgate/package.json'));
const STARTUP_TIMEOUT_MS = 30_000;

function tsxLoader(): string | undefined {
  try {
    return import.meta.resolve('tsx');
  } catch {
    return undefined;
  }
}

/**
 * Starts the demo agents.
 *
 * @throws FleetgateError `FLEETGATE_DEMO_UNAVAILABLE` outside a source checkout (the examples and
 *   their TypeScript loader ship with the repository, not with the package).
 */
export async function startDemoFleet(): Promise<DemoFleet> {
  const script = fileURLToPath(SCRIPT);
  const loader = tsxLoader();
  if (!existsSync(script) || loader === undefined) {
    throw new FleetgateError(
      'FLEETGATE_DEMO_UNAVAILABLE',
      `The demo fleet runs from a source checkout (npm install && npm start); ${existsSync(script) ? 'tsx is not installed' : `${script} is missing`}. Pass --config FILE to run a gateway over your own agents.`,
    );
  }
  // Its own process group: a Ctrl-C in the terminal stops the gateway, which stops the agents
  // once calls in flight are done. Stdin stays open: if the gateway dies, the agents follow.
  const child: ChildProcess = spawn(process.execPath, ['--import', loader, script], {
    stdio: ['pipe', 'pipe', 'inherit'],
    detached: true,
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = await new Promise<{ agents: DemoFleet['agents']; seeds: Record<string, unknown> }>(
    (resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(
          new FleetgateError(
            'FLEETGATE_DEMO_UNAVAILABLE',
            'The demo agents did not start within 30 s.',
          ),
        );
      }, STARTUP_TIMEOUT_MS);
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const line = out.indexOf('\n');
        if (line < 0) return;
        clearTimeout(timer);
        try {
          resolve(
            JSON.parse(out.slice(0, line)) as {
              agents: DemoFleet['agents'];
              seeds: Record<string, unknown>;
            },
          );
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(
          new FleetgateError(
            'FLEETGATE_DEMO_UNAVAILABLE',
            `The demo agents exited with code ${code ?? 'null'} before they were ready.`,
          ),
        );
      });
    },
  );
  return {
    ...ready,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A token of the demo: from the environment variable `name` when set, else fresh for this run. */
export function demoToken(
  env: NodeJS.ProcessEnv,
  name = 'FLEETGATE_TOKEN',
): { token: string; generated: boolean } {
  const given = env[name];
  if (given !== undefined && given.length >= 16) return { token: given, generated: false };
  return { token: randomBytes(24).toString('base64url'), generated: true };
}

/** The environment variable the demo's admin token is read from by the gateway. */
export const DEMO_TOKEN_ENV = 'FLEETGATE_DEMO_ADMIN_TOKEN';

/**
 * The demo's second person, an approver: a call one of them dispatches needs the other's approval
 * (nobody approves their own call), so the demo can show the whole story with two tokens.
 */
export const DEMO_APPROVER = 'alice';

/** Where the gateway reads the second person's token from; `FLEETGATE_ALICE_TOKEN` chooses it. */
export const DEMO_APPROVER_TOKEN_ENV = 'FLEETGATE_DEMO_ALICE_TOKEN';

/** The variable a user sets to choose the second person's token. */
export const DEMO_APPROVER_CHOICE_ENV = 'FLEETGATE_ALICE_TOKEN';

/**
 * The gateway configuration of the demo: the agents, a SQLite store in `./data`, a policy where
 * every mode shows (project and below autonomous, repo notified by the card, fleet vetoable,
 * public gated by one approver) and two people: `admin` and the approver `alice`.
 */
export function demoConfig(
  fleet: Pick<DemoFleet, 'agents'>,
  listen: { host: string; port: number },
): FleetgateConfigInput {
  return {
    listen,
    store: 'sqlite:./data/fleetgate.db',
    bus: 'memory',
    agents: fleet.agents.map((a) => ({ name: a.name, url: a.url })),
    cards: { refreshInterval: '1m' },
    policy: {
      approvalAtOrAbove: 'public',
      vetoAtOrAbove: 'fleet',
      vetoWindow: '30s',
      approvers: { fleet: 1, public: 1 },
      sweepInterval: '1s',
    },
    auth: {
      tokens: [
        { name: 'admin', tokenEnv: DEMO_TOKEN_ENV, roles: ['admin'] },
        { name: DEMO_APPROVER, tokenEnv: DEMO_APPROVER_TOKEN_ENV, roles: ['approver'] },
      ],
    },
  };
}

/** Calls the demo makes in the background with `--demo-traffic`, in turn. */
const TRAFFIC: readonly { agent: string; skill: string; text: string }[] = [
  { agent: 'ci', skill: 'rerun_checks', text: 'PR 128' },
  { agent: 'board', skill: 'triage', text: 'new issues' },
  { agent: 'ci', skill: 'sitrep', text: 'status' },
  { agent: 'ci', skill: 'rerun_checks', text: 'PR 131' },
  { agent: 'board', skill: 'triage', text: 'new issues' },
  { agent: 'deployer', skill: 'rollback', text: 'roll back the canary' },
];

/** Starts dispatching a call every `everyMs`; returns a function that stops it. */
export function startDemoTraffic(
  gateway: Pick<Gateway, 'dispatch'>,
  everyMs: number,
  onError: (error: unknown) => void,
): () => Promise<void> {
  let turn = 0;
  const inFlight = new Set<Promise<unknown>>();
  const timer = setInterval(() => {
    const call = TRAFFIC[turn % TRAFFIC.length]!;
    turn += 1;
    const work = gateway
      .dispatch({ ...call, requestedBy: 'demo-traffic', mode: 'return-immediately' })
      .answered()
      .catch(onError);
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  }, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await Promise.allSettled([...inFlight]);
  };
}

/**
 * The first calls of the demo: a deploy waiting for approval, and one CI re-run. The deploy is
 * requested by `demo`, so either person can approve it; after a restart its request is found
 * again (only one the demo made: a deploy someone dispatched is theirs, not the banner's).
 */
export async function seedDemoCalls(
  gateway: Pick<Gateway, 'dispatch' | 'approvals'>,
): Promise<string | undefined> {
  const pending = await gateway.approvals.list({ status: 'pending' });
  const waiting = pending.find(
    (a) => a.agent === 'deployer' && a.skill === 'production_deploy' && a.requestedBy === 'demo',
  );
  if (waiting !== undefined) return waiting.id;
  const record = await gateway
    .dispatch({
      agent: 'deployer',
      skill: 'production_deploy',
      text: 'ship 1.5.0',
      requestedBy: 'demo',
    })
    .answered();
  await gateway
    .dispatch({
      agent: 'ci',
      skill: 'rerun_checks',
      text: 'PR 127',
      requestedBy: 'demo',
      mode: 'return-immediately',
    })
    .answered();
  const approvals = await gateway.approvals.list({ status: 'pending' });
  return approvals.find((a) => a.dispatchId === record.id)?.id;
}
