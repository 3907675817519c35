/**
 * `fleetgate dispatch AGENT|--skill SKILL [TEXT] [--data JSON] [--wait]` against a running
 * gateway: the answer (with the routing and the gate's decision), and with `--wait` every status
 * change as it happens, from the live-event stream.
 */
import { Option, type Command } from 'commander';
import { FleetgateError, parseDuration } from '../../protocol/index.js';
import { newRecordId } from '../../protocol/ids/index.js';
import { defined } from '../../protocol/fields/index.js';
import type { PrintedError } from '../errors.js';
import type { CliIo } from '../io.js';
import { cliCommand } from '../launcher.js';
import { waitFlag } from '../options.js';
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
  /** Milliseconds. */
  timeout: number;
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
      .option(
        '--wait',
        'follow the dispatch and print each status change until it ends; exit 0 when it completed, 1 when it failed, was rejected or canceled, or still goes on when --timeout ends',
      )
      .addOption(
        new Option(
          '--timeout <duration>',
          'with --wait: stop waiting after this long (30s, 10m, 1h; at most 24d) and say where to follow the call, which goes on at the gateway',
        )
          .argParser(waitFlag)
          .default(600_000, '10m'),
      )
      .option('--json', 'print the API answer (and with --wait, each change) as JSON'),
  ).action((args: string[], opts: DispatchOptions, command: Command) => {
    // The words as typed: commander sets `rawArgs` on the program it parses (not in its types).
    const raw = (command.parent as { rawArgs?: unknown } | null)?.rawArgs;
    refuseWaitValue(
      Array.isArray(raw) ? raw.filter((a): a is string => typeof a === 'string') : [],
    );
    return runDispatch(args, opts, io, setExit);
  });
};

/**
 * `--wait` takes no value, so in `dispatch ci rerun_checks --wait 5s 'PR 7'` the `5s` would be
 * sent as the first word of the text. A duration right after `--wait` is refused, naming
 * `--timeout`; a text that starts with one goes before `--wait`.
 */
function refuseWaitValue(argv: readonly string[]): void {
  const end = argv.indexOf('--');
  const at = argv.indexOf('--wait');
  if (at < 0 || (end >= 0 && end < at)) return;
  const next = argv[at + 1];
  if (next === undefined || next === '--') return;
  const bare = /^\d+(?:\.\d+)?$/u.test(next.trim());
  if (!bare && parseDuration(next.trim()) === undefined) return;
  const timeout = bare ? `${next.trim()}s` : next.trim();
  throw new FleetgateError(
    'FLEETGATE_USAGE',
    `--wait takes no value: '${next}' after it would be sent as the start of the text; to stop waiting after ${timeout}, write --wait --timeout ${timeout} (a text that starts with a duration goes before --wait)`,
  );
}

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
  const s = createStyle(io.color);
  const correlationId = newRecordId();
  const controller = new AbortController();
  /** Set when --timeout ended the wait, not the call's end. */
  let gaveUp = false;
  let last: DispatchRow | undefined;
  /** The gate's decision from the API's answer: the events of the dispatch do not carry it. */
  const answered: { yes: boolean; decision?: DispatchRow['decision'] } = { yes: false };
  /** The newest change the stream brought before the API's answer (printed after it, if newer). */
  let early: DispatchRow | undefined;
  const print = (row: DispatchRow): void => {
    // Nothing before the answer: it names the approval a held call waits for, and a change the
    // stream brought first (the call's `running` before it was held) would come out of order.
    if (!answered.yes) {
      if (early === undefined || (row.updatedAt ?? 0) >= (early.updatedAt ?? 0)) early = row;
      return;
    }
    const d =
      row.decision === undefined && answered.decision !== undefined
        ? { ...row, decision: answered.decision }
        : row;
    if (last !== undefined && last.status === d.status) return;
    // A change older than the one printed (the stream's `running` after the answer said held; in
    // the same millisecond, `running` is the first of the two).
    const at = d.updatedAt ?? Infinity;
    const printedAt = last?.updatedAt ?? 0;
    if (at < printedAt || (at === printedAt && d.status === 'running')) return;
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
            // Before the answer the end is kept for after it; the answer stops the stream then.
            if (ENDED.has(payload.status) && answered.yes) controller.abort();
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
  if (early !== undefined && (early.updatedAt ?? 0) > (answer.updatedAt ?? 0)) print(early);
  const ended = ENDED.has(answer.status) || (early !== undefined && ENDED.has(early.status));
  if (opts.wait === true && !ended) {
    const timer = setTimeout(() => {
      gaveUp = true;
      controller.abort();
    }, opts.timeout);
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
  if (gaveUp && !ENDED.has(final.status)) {
    reportStoppedWaiting(io, client.url, final, opts);
    setExit(1);
    return;
  }
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

/**
 * Says that `--wait` stopped waiting while the call goes on at the gateway: which call, in what
 * status, and where to follow it. Printed as the CLI prints an error (`CODE: message`, `  fix: …`
 * on stderr), or with `--json` as one more JSON line, `{ "error": { …, dispatch: { id, status } } }`.
 */
function reportStoppedWaiting(
  io: CliIo,
  url: string,
  d: DispatchRow,
  opts: Pick<DispatchOptions, 'timeout' | 'json'>,
): void {
  const printed: PrintedError = {
    code: 'FLEETGATE_CALL_TIMEOUT',
    message: `stopped waiting after ${durationText(opts.timeout)} (--timeout): call ${d.id} (${d.agent}/${d.skill}) is still ${d.status} at the gateway, which goes on with it`,
    fix: `follow it with \`${cliCommand()} call ${d.id.slice(-8)}\`, at ${url}/#/calls/${d.id} or GET ${url}/api/dispatches/${d.id}`,
  };
  if (opts.json === true) {
    io.out(
      `${JSON.stringify({ error: { ...printed, dispatch: { id: d.id, status: d.status } } })}\n`,
    );
  } else io.err(`${printed.code}: ${printed.message}\n  fix: ${printed.fix}\n`);
}

/** Milliseconds as the duration a user writes: `1s`, `90s`, `10m`, `2d`, else `1500ms`. */
function durationText(ms: number): string {
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  const [unit, size] = units.find(([, n]) => ms % n === 0) ?? ['ms', 1];
  return `${ms / size}${unit}`;
}
