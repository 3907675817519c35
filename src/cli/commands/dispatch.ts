/**
 * `fleetgate dispatch AGENT|--skill SKILL [TEXT] [--data JSON] [--wait]` against a running
 * gateway: the answer (with the routing and the gate's decision), and with `--wait` every status
 * change as it happens, from the live-event stream.
 */
import { FleetgateError } from '../../protocol/index.js';
import { newRecordId } from '../../protocol/ids/index.js';
import { defined } from '../../protocol/fields/index.js';
import type { CliIo } from '../io.js';
import { createStyle } from '../style.js';
import { urlOption } from './gateway-client.js';
import type { DispatchRow } from './remote.js';
import { ENDED, dispatchLine, requireClient, waitingLines } from './remote.js';
import type { RegisterCommand } from './types.js';

interface DispatchOptions {
  url?: string;
  skill?: string;
  data?: string;
  wait?: boolean;
  timeout: string;
  json?: boolean;
}

/** `fleetgate dispatch AGENT|--skill SKILL [TEXT] [--data JSON] [--wait]`. */
export const registerDispatch: RegisterCommand = (program, io, setExit) => {
  urlOption(
    program
      .command('dispatch')
      .description(
        'dispatch a skill call through a running gateway: `dispatch AGENT SKILL [TEXT]`, or `dispatch --skill SKILL [TEXT]` to let the gateway choose the agent',
      )
      .argument('[args...]', 'AGENT SKILL [TEXT] (or only [TEXT] with --skill)')
      .option(
        '--skill <skill>',
        'route this skill: the gateway picks the agent (fresh, narrowest radius, best success rate)',
      )
      .option('--data <json>', 'a JSON value sent with the text')
      .option('--wait', 'follow the dispatch and print each status change until it ends')
      .option('--timeout <duration>', 'with --wait: give up after this long', '10m')
      .option('--json', 'print the API answer (and with --wait, each change) as JSON'),
  ).action((args: string[], opts: DispatchOptions) => runDispatch(args, opts, io, setExit));
};

/** Sends the dispatch and prints its answer; with `--wait`, each status change until it ends. */
async function runDispatch(
  args: string[],
  opts: DispatchOptions,
  io: CliIo,
  setExit: (code: number) => void,
): Promise<void> {
  const client = requireClient(opts.url);
  const { agent, skill, text } = dispatchTarget(args, opts);
  const data = parseData(opts.data);
  const timeoutMs = /^\d+$/.test(opts.timeout)
    ? Number(opts.timeout)
    : parseShortDuration(opts.timeout);
  const s = createStyle(io.color);
  const correlationId = newRecordId();
  const controller = new AbortController();
  let last: DispatchRow | undefined;
  /** The gate's decision from the API's answer: the events of the dispatch do not carry it. */
  const answered: { yes: boolean; decision?: DispatchRow['decision'] } = { yes: false };
  const print = (row: DispatchRow): void => {
    // Waiting is printed once the answer named the approval, with what to do about it.
    if (row.status === 'awaiting-approval' && !answered.yes) return;
    const d =
      row.decision === undefined && answered.decision !== undefined
        ? { ...row, decision: answered.decision }
        : row;
    if (last !== undefined && last.status === d.status) return;
    last = d;
    io.out(
      opts.json === true
        ? `${JSON.stringify(d)}\n`
        : `${dispatchLine(d, s)}\n${waitingLines(d, s)}`,
    );
  };
  // With --wait, listen first so no status change is missed between the answer and the stream.
  const following =
    opts.wait === true
      ? client.events(
          ['skill.dispatch.>'],
          (e) => {
            const payload = (e.data as { payload?: DispatchRow } | undefined)?.payload;
            if (payload?.correlationId !== correlationId) return;
            print(payload);
            if (ENDED.has(payload.status)) controller.abort();
          },
          controller.signal,
        )
      : Promise.resolve();
  const answer = await client
    .post<DispatchRow>('/api/dispatch', {
      ...defined({ agent }),
      skill,
      ...defined({ text, data }),
      correlationId,
    })
    .catch((error: unknown) => {
      controller.abort();
      throw error;
    });
  answered.yes = true;
  answered.decision = answer.decision;
  if (answer.routing !== undefined && opts.json !== true) {
    io.out(`${s.dim(`routed to ${answer.routing.agent}: ${answer.routing.reasons.join('; ')}`)}\n`);
  }
  if (opts.json === true && opts.wait !== true) io.out(`${JSON.stringify(answer, null, 2)}\n`);
  else print(answer);
  if (opts.wait === true && !ENDED.has(answer.status)) {
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    // The stream may have started after a quick end: read the record once it is quiet.
    const poll = setInterval(() => {
      client
        .get<DispatchRow>(`/api/dispatches/${answer.id}`)
        .then((d) => {
          print(d);
          if (ENDED.has(d.status)) controller.abort();
        })
        .catch(() => undefined);
    }, 2000);
    try {
      await following;
    } finally {
      clearTimeout(timer);
      clearInterval(poll);
    }
  } else controller.abort();
  await following.catch(() => undefined);
  const final = last ?? answer;
  setExit(
    final.status === 'completed' ? 0 : ENDED.has(final.status) ? 1 : opts.wait === true ? 1 : 0,
  );
}

/** The agent, skill and text: `AGENT SKILL [TEXT]`, or `--skill SKILL [TEXT]`. */
function dispatchTarget(
  args: string[],
  opts: DispatchOptions,
): { agent: string | undefined; skill: string; text: string | undefined } {
  let agent: string | undefined;
  let skill: string;
  let text: string | undefined;
  if (opts.skill !== undefined) {
    skill = opts.skill;
    text = args.length > 0 ? args.join(' ') : undefined;
  } else {
    if (args.length < 2)
      throw new FleetgateError(
        'FLEETGATE_USAGE',
        'dispatch needs AGENT SKILL [TEXT], or --skill SKILL [TEXT]',
      );
    [agent, skill] = [args[0]!, args[1]!];
    text = args.length > 2 ? args.slice(2).join(' ') : undefined;
  }
  return { agent, skill, text };
}

/** The `--data` JSON value, parsed. */
function parseData(json: string | undefined): unknown {
  let data: unknown;
  if (json !== undefined) {
    try {
      data = JSON.parse(json);
    } catch (error) {
      throw new FleetgateError(
        'FLEETGATE_USAGE',
        `--data is not JSON: ${(error as Error).message}`,
      );
    }
  }
  return data;
}

function parseShortDuration(text: string): number {
  const match = /^(\d+)(ms|s|m|h)$/.exec(text.trim());
  if (match === null)
    throw new FleetgateError(
      'FLEETGATE_USAGE',
      `--timeout must be a duration like 30s or 10m, not ${text}`,
    );
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as 'ms' | 's' | 'm' | 'h'];
  return Number(match[1]) * unit;
}
