/**
 * `fleetgate calls` and `fleetgate call ID` against a running gateway: the calls it recorded,
 * newest first (`GET /api/dispatches` with its filters), and one call's whole story — who asked,
 * what the gate decided and why, who approved, what was sent, how the task ended, the deltas and
 * world changes, who canceled it — read from `GET /api/dispatches/:id/story`. The id may be the
 * end `fleetgate dispatch` prints. `--json` prints what the API answered.
 */
import { Option, type Command } from 'commander';
import {
  DISPATCH_STATUSES,
  FleetgateError,
  callDoorText,
  type CallDoor,
} from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import { cliCommand } from '../launcher.js';
import { integerFlag } from '../options.js';
import type { Style } from '../style.js';
import { age, createStyle, renderTable } from '../style.js';
import { urlOption } from './gateway-client.js';
import type { DispatchRow } from './remote.js';
import { ENDED, fullDispatchId, radiusCell, requireClient, statusCell } from './remote.js';
import type { RegisterCommand } from './types.js';

/** A listed call: a dispatch row with its times. */
interface CallRow extends DispatchRow {
  createdAt: number;
  updatedAt: number;
  requestedBy?: string | null;
  door?: CallDoor | null;
}

interface StoryEvent {
  id: string;
  topic: string;
  at: number;
  payload: Record<string, unknown>;
}

interface StoryApproval {
  kind: string;
  status: string;
  mode: string;
  radius: string | null;
  approvals: { by: string; at: number }[];
  decidedBy: string | null;
  decidedAt: number | null;
  reason?: string | null;
  createdAt: number;
  id: string;
  /** A checkpoint's question, and the answer a person gave. */
  question?: string | null;
  answer?: string | null;
}

interface StoryEffect {
  domain: string;
  path: string;
  op: string;
  previous: unknown;
  next: unknown;
  status: string;
  reason: string | null;
  at: number;
}

/** `GET /api/dispatches/:id/story`, as far as the CLI reads it. */
interface CallStory {
  dispatch: CallRow;
  send: { owner: string; messageId: string; contextId: string; sentAt: number | null } | null;
  task: {
    state: string;
    createdAt: number;
    terminalAt: number | null;
    terminalVia: string | null;
  } | null;
  events: StoryEvent[];
  approvals: StoryApproval[];
  effects: StoryEffect[];
}

/** Longest text of a cell or a value before it is cut. */
const TEXT_WIDTH = 60;

function cut(text: string, width = TEXT_WIDTH): string {
  const line = text.replace(/\s+/gu, ' ');
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

function json(value: unknown): string {
  return value === undefined ? '-' : cut(JSON.stringify(value) ?? typeof value, 40);
}

/** A time of a call's life: the hour to the millisecond, in this machine's zone. */
function clock(at: number): string {
  const d = new Date(at);
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

/** What a listed call came to: its text, the error of a call that did not complete, or its wait. */
function outcome(d: DispatchRow): string {
  if (d.status === 'awaiting-approval') return 'waiting for approval';
  if (d.status === 'awaiting-input') return 'the agent asks a question';
  const error = d.result?.error;
  // A running call's error is a cancel on its way (who asked, and why).
  if (error !== undefined && d.status !== 'completed') return `${error.code}: ${error.message}`;
  return d.result?.text ?? '';
}

/** The table of `fleetgate calls`. */
export function renderCalls(calls: readonly CallRow[], s: Style, now: number): string {
  if (calls.length === 0) return 'no calls match\n';
  return renderTable(
    ['call', 'agent/skill', 'status', 'asked', 'by', 'outcome'],
    calls.map((d) => [
      s.bold(d.id.slice(-8)),
      `${d.agent}/${d.skill}`,
      statusCell(d.status, s),
      `${age(d.createdAt, now)} ago`,
      d.requestedBy ?? '-',
      cut(outcome(d)),
    ]),
  );
}

/** One line of a story: when, what, and lines under it. */
interface Line {
  at: number;
  /** The call's life orders lines of one moment. */
  order: number;
  text: string;
  more?: string[];
}

function gateLines(story: CallStory, s: Style): Line[] {
  const decided = story.events.find(
    (e) =>
      e.topic === 'skill.dispatch.gated' ||
      (e.topic === 'skill.dispatch.rejected' && e.payload.decision !== undefined),
  );
  if (decided === undefined) {
    const started = story.events.find((e) => e.topic === 'skill.dispatch.started');
    return started === undefined
      ? []
      : [{ at: started.at, order: 1, text: 'gate: allowed at once (no approval needed)' }];
  }
  const decision = (decided.payload.decision ?? {}) as {
    mode?: string;
    effectiveRadius?: string | null;
    reasons?: { kind?: string; detail?: string }[];
    deny?: { reason?: string };
  };
  const radius = decision.effectiveRadius ?? null;
  const held = decided.topic === 'skill.dispatch.gated';
  const what = held
    ? `held (${decision.mode ?? 'gated'})`
    : s.red(`denied${decision.deny?.reason === undefined ? '' : `: ${decision.deny.reason}`}`);
  return [
    {
      at: Math.min(decided.at, ...story.approvals.map((a) => a.createdAt)),
      order: 1,
      text: `gate: ${what} at ${radiusCell(radius, s)}`,
      more: (decision.reasons ?? []).map((r) => `${r.kind ?? 'reason'}: ${r.detail ?? ''}`),
    },
  ];
}

/** The agent's question to the caller (a checkpoint), and its answer or end. */
function questionLines(a: StoryApproval, s: Style): Line[] {
  const lines: Line[] = [
    {
      at: a.createdAt,
      order: 2,
      text: `the agent asked: ${cut(a.question ?? '')}  (question ${a.id})`,
    },
  ];
  if (a.decidedAt === null || a.status === 'pending') return lines;
  const who = a.decidedBy === null ? '' : ` by ${s.bold(a.decidedBy)}`;
  const text =
    a.status === 'approved' || a.status === 'consumed'
      ? `answered${who}: ${cut(a.answer ?? '')}`
      : a.status === 'expired'
        ? 'expired: nobody answered'
        : `${a.status}${who}${a.reason === undefined || a.reason === null ? '' : `: ${a.reason}`}`;
  return [...lines, { at: a.decidedAt, order: 3, text }];
}

function approvalLines(a: StoryApproval, s: Style): Line[] {
  if (a.kind === 'checkpoint') return questionLines(a, s);
  const what =
    a.kind === 'veto' ? 'veto window' : a.kind === 'follow-up' ? 'follow-up' : 'approval';
  const lines: Line[] = [{ at: a.createdAt, order: 2, text: `${what} ${a.id} opened` }];
  for (const yes of a.approvals) {
    lines.push({ at: yes.at, order: 3, text: `${what} approved by ${s.bold(yes.by)}` });
  }
  if (a.decidedAt !== null && a.status !== 'approved' && a.status !== 'consumed') {
    const by = a.decidedBy === null ? '' : ` by ${s.bold(a.decidedBy)}`;
    const why = a.reason === undefined || a.reason === null ? '' : `: ${a.reason}`;
    lines.push({ at: a.decidedAt, order: 3, text: `${what} ${a.status}${by}${why}` });
  }
  return lines;
}

function taskLines(story: CallStory, s: Style): Line[] {
  const { send, task, dispatch: d } = story;
  const lines: Line[] = [];
  if (send !== null && send.sentAt !== null) {
    lines.push({
      at: send.sentAt,
      order: 4,
      text: `sent to ${d.agent} (message ${send.messageId}, context ${send.contextId})`,
    });
  }
  if (task !== null) {
    lines.push({
      at: task.createdAt,
      order: 5,
      text: `task ${d.taskId ?? ''} opened at the agent`,
    });
    if (task.terminalAt !== null) {
      const via = task.terminalVia === null ? '' : ` (seen by ${task.terminalVia})`;
      const state = task.state === 'completed' ? s.green(task.state) : s.red(task.state);
      lines.push({ at: task.terminalAt, order: 6, text: `task ${state}${via}` });
    }
  }
  return lines;
}

function eventLines(story: CallStory, s: Style): Line[] {
  const lines: Line[] = [];
  for (const e of story.events) {
    const p = e.payload;
    if (e.topic === 'skill.dispatch.cancel-requested') {
      const by = typeof p.canceledBy === 'string' ? ` by ${s.bold(p.canceledBy)}` : '';
      const why = typeof p.reason === 'string' ? `: ${p.reason}` : '';
      lines.push({ at: e.at, order: 5, text: s.yellow(`cancel requested${by}${why}`) });
    } else if (
      e.topic === 'skill.dispatch.awaiting-input' ||
      e.topic === 'skill.dispatch.resumed'
    ) {
      const state = typeof p.state === 'string' ? p.state : e.topic.slice('skill.dispatch.'.length);
      lines.push({ at: e.at, order: 5, text: `task ${state}` });
    } else if (e.topic === 'world.state.delta') {
      const deltas = Array.isArray(p.deltas)
        ? (p.deltas as { domain: string; path: string; op: string; value: unknown }[])
        : [];
      lines.push({
        at: e.at,
        order: 7,
        text: `${deltas.length} delta${deltas.length === 1 ? '' : 's'} reported`,
        more: deltas.map((x) => `${x.domain} ${x.path} ${x.op} ${json(x.value)}`),
      });
    } else if (e.topic === 'world.state.delta.rejected') {
      lines.push({ at: e.at, order: 7, text: s.red('delta entries rejected by the gateway') });
    }
  }
  return lines;
}

function worldLines(story: CallStory, s: Style): Line[] {
  if (story.effects.length === 0) return [];
  return [
    {
      at: Math.max(...story.effects.map((e) => e.at)),
      order: 8,
      text: 'world changed',
      more: story.effects.map((e) =>
        e.status === 'applied'
          ? `${e.domain} ${e.path}: ${json(e.previous)} → ${json(e.next)}`
          : s.red(`${e.domain} ${e.path}: not applied (${e.reason ?? e.status})`),
      ),
    },
  ];
}

/** What a call that waits on a person waits for, and the command that answers it. */
function waitLines(story: CallStory, s: Style, cli: string): Line[] {
  const { status } = story.dispatch;
  const kinds = status === 'awaiting-approval' ? ['dispatch', 'veto'] : ['checkpoint'];
  if (status !== 'awaiting-approval' && status !== 'awaiting-input') return [];
  const open = story.approvals
    .filter((a) => a.status === 'pending' && kinds.includes(a.kind))
    .at(-1);
  if (open === undefined) return [];
  const command =
    open.kind === 'checkpoint'
      ? `${cli} approvals answer ${open.id} 'ANSWER'`
      : open.kind === 'veto'
        ? `${cli} approvals reject ${open.id} --reason 'WHY'   (it runs unless vetoed)`
        : `${cli} approvals approve ${open.id}   (someone other than the caller)`;
  return [
    {
      at: open.createdAt,
      order: 10,
      text: s.yellow(open.kind === 'checkpoint' ? 'waiting for an answer' : 'waiting for approval'),
      more: [command],
    },
  ];
}

function endLines(story: CallStory, s: Style): Line[] {
  const d = story.dispatch;
  if (!ENDED.has(d.status)) return [];
  const ended = story.events.find((e) =>
    ['completed', 'failed', 'rejected'].some((t) => e.topic === `skill.dispatch.${t}`),
  );
  const more: string[] = [];
  if (d.result?.text !== undefined) more.push(`"${cut(d.result.text, 200)}"`);
  if (d.result?.error !== undefined && d.status !== 'completed') {
    more.push(`${d.result.error.code}: ${d.result.error.message}`);
  }
  return [
    { at: ended?.at ?? d.updatedAt, order: 9, text: `ended ${statusCell(d.status, s)}`, more },
  ];
}

/** `fleetgate call ID`: the story, one line per step in time order. */
export function renderStory(story: CallStory, s: Style, cli = cliCommand()): string {
  const d = story.dispatch;
  const requested = story.events.find((e) => e.topic === 'skill.dispatch.requested');
  const lines: Line[] = [
    {
      at: requested?.at ?? d.createdAt,
      order: 0,
      text: [
        'requested',
        ...(d.requestedBy === undefined || d.requestedBy === null
          ? []
          : [`by ${s.bold(d.requestedBy)}`]),
        ...(d.door === undefined || d.door === null ? [] : [callDoorText(d.door)]),
      ].join(' '),
    },
    ...gateLines(story, s),
    ...story.approvals.flatMap((a) => approvalLines(a, s)),
    ...taskLines(story, s),
    ...eventLines(story, s),
    ...worldLines(story, s),
    ...endLines(story, s),
  ];
  // What it waits for comes last, whenever its request was opened.
  const waiting = waitLines(story, s, cli);
  lines.sort((a, b) => a.at - b.at || a.order - b.order);
  const head =
    `${s.bold(d.id.slice(-8))}  ${d.agent}/${d.skill}  ${statusCell(d.status, s)}\n` +
    s.dim(
      `  call ${d.id} · correlation ${d.correlationId}${d.taskId === null ? '' : ` · task ${d.taskId}`}`,
    ) +
    '\n';
  const body = [...lines, ...waiting]
    .map(
      (l) =>
        `  ${s.dim(clock(l.at))}  ${l.text}\n` +
        (l.more ?? []).map((m) => `${' '.repeat(16)}${m}\n`).join(''),
    )
    .join('');
  return head + body;
}

/**
 * Refuses words after `fleetgate calls` (`calls ops`, `calls failed`), naming the filter each was
 * probably meant for: a status is `--status`, any other word an agent's (or a skill's) name.
 */
function refuseWords(words: readonly string[]): void {
  if (words.length === 0) return;
  const flags = words.map((w) =>
    (DISPATCH_STATUSES as readonly string[]).includes(w) ? `--status ${w}` : `--agent ${w}`,
  );
  throw new FleetgateError(
    'FLEETGATE_USAGE',
    `fleetgate calls filters with flags; '${words.join(' ')}' is not read: write ${flags.join(' ')}${flags.some((f) => f.startsWith('--agent')) ? ' (or --skill for a skill)' : ''}`,
  );
}

/** Registers `fleetgate calls` and `fleetgate call`. */
export const registerCalls: RegisterCommand = (program, io) => {
  urlOption(
    program
      .command('calls')
      .description('list the calls a running gateway recorded, newest first')
      .option('--agent <agent>', 'only calls to this agent')
      .option('--skill <skill>', 'only calls of this skill')
      .addOption(
        new Option('--status <status>', 'only calls in this status').choices(DISPATCH_STATUSES),
      )
      .option('--limit <n>', 'at most this many calls (1 to 500)', integerFlag(1, 500), 20)
      .option('--before <id>', 'the calls older than this one (the next page: the id it names)')
      .option('--json', 'print the API answer as JSON')
      // A word is refused here, naming the filter it was meant for.
      .allowExcessArguments(true),
  ).action(
    async (
      opts: {
        url?: string;
        agent?: string;
        skill?: string;
        status?: string;
        limit: number;
        before?: string;
        json?: boolean;
      },
      command: Command,
    ) => {
      refuseWords(command.args);
      const client = requireClient(opts.url);
      const filters = defined({ agent: opts.agent, skill: opts.skill, status: opts.status });
      const before =
        opts.before === undefined ? undefined : await fullDispatchId(client, opts.before);
      const query = new URLSearchParams({
        limit: String(opts.limit),
        ...filters,
        ...defined({ before }),
      });
      const answer = await client.get<{ dispatches: CallRow[]; next: string | null }>(
        `/api/dispatches?${query}`,
      );
      if (opts.json === true) {
        io.out(`${JSON.stringify(answer, null, 2)}\n`);
        return;
      }
      const s = createStyle(io.color);
      io.out(renderCalls(answer.dispatches, s, Date.now()));
      if (answer.next !== null) {
        const flags = Object.entries(filters)
          .map(([k, v]) => ` --${k} ${v}`)
          .join('');
        io.out(s.dim(`more: ${cliCommand()} calls${flags} --before ${answer.next}\n`));
      }
    },
  );

  urlOption(
    program
      .command('call')
      .description(
        "one call's story on a running gateway: who asked, the gate's decision and reasons, approvals, what was sent, the task, deltas, world changes, how it ended",
      )
      .argument('<id>', 'the call id, or its end as `fleetgate dispatch` prints it')
      .option('--json', 'print the API answer as JSON'),
  ).action(async (id: string, opts: { url?: string; json?: boolean }) => {
    const client = requireClient(opts.url);
    const whole = await fullDispatchId(client, id);
    const story = await client.get<CallStory>(`/api/dispatches/${encodeURIComponent(whole)}/story`);
    if (opts.json === true) {
      io.out(`${JSON.stringify(story, null, 2)}\n`);
      return;
    }
    io.out(renderStory(story, createStyle(io.color)));
  });
};
