/**
 * The CLI against a running gateway (`--url`, token from `$FLEETGATE_TOKEN`): the remote sides of
 * the approvals decisions and `tail`, and what `agents`, `dispatch`, `refresh` and `ack` share.
 * `agents`, `world` and the approvals list read the gateway in their own modules, through the
 * printer they share with the local mode.
 * Tables colour radii as `lint-card` and the dashboard do; `--json` prints what the API answered.
 */
import type { EventEnvelope } from '../../protocol/index.js';
import { FleetgateError, isBlastRadius } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import type { CliIo } from '../io.js';
import { cliCommand } from '../launcher.js';
import type { Style } from '../style.js';
import { createStyle } from '../style.js';
import type { GatewayClient } from './gateway-client.js';
import { createGatewayClient, gatewayTarget } from './gateway-client.js';
import { formatEventLine } from './event-line.js';

interface SkillRow {
  id: string;
  effectiveRadius: string | null;
  declaredRadius: string | null;
  floor: string | null;
  hitlMode: string | null;
  pendingRadius: string | null;
  domains: string[] | null;
}
export interface AgentRow {
  name: string;
  status: string;
  lastFetchedAt: number | null;
  lastError: { message: string } | null;
  skills: SkillRow[];
}
export interface DispatchRow {
  id: string;
  agent: string;
  skill: string;
  status: string;
  taskId: string | null;
  correlationId: string;
  /** Epoch milliseconds of its last change. */
  updatedAt?: number;
  result: { text?: string; error?: { code: string; message: string } } | null;
  decision?: {
    action: string;
    mode?: string;
    effectiveRadius?: string | null;
    reason?: string;
    approvalId?: string;
  };
  routing?: { agent: string; reasons: string[] };
}

export const ENDED = new Set(['completed', 'failed', 'rejected', 'canceled']);

/** A client for `--url` / `$FLEETGATE_URL`, or undefined for the local mode. */
export function remoteClient(url: string | undefined): GatewayClient | undefined {
  const target = gatewayTarget(url);
  return target === undefined ? undefined : createGatewayClient(target);
}

export function requireClient(url: string | undefined): GatewayClient {
  const client = remoteClient(url);
  if (client === undefined) {
    throw new FleetgateError(
      'FLEETGATE_USAGE',
      'this command talks to a running gateway: pass --url URL or set FLEETGATE_URL',
    );
  }
  return client;
}

export function radiusCell(r: string | null, s: Style): string {
  return r !== null && isBlastRadius(r) ? s.radius(r) : s.dim('unknown');
}

export function statusCell(status: string, s: Style): string {
  if (status === 'fresh' || status === 'completed') return s.green(status);
  if (status === 'failed' || status === 'awaiting-approval' || status === 'awaiting-input')
    return s.yellow(status);
  if (status === 'stale' || status === 'rejected') return s.red(status);
  return s.dim(status);
}

export function dispatchLine(d: DispatchRow, s: Style): string {
  // A record id's tail: its head is the time it was made, the same for every call of a minute.
  const parts = [`${s.bold(d.id.slice(-8))} ${d.agent}/${d.skill}`, statusCell(d.status, s)];
  if (d.decision?.mode !== undefined) {
    const r = d.decision.effectiveRadius ?? null;
    parts.push(`${d.decision.mode} at ${radiusCell(r, s)}`);
  }
  if (d.decision?.approvalId !== undefined && d.status === 'awaiting-approval') {
    parts.push(`approval ${s.bold(d.decision.approvalId)}`);
  }
  if (d.result?.text !== undefined) parts.push(`"${d.result.text}"`);
  // An error is news only on a call that ended without completing: a held call's "approval
  // required" is a wait (see waitingLines), and it stays on the record once the call moves on.
  if (d.result?.error !== undefined && ENDED.has(d.status) && d.status !== 'completed')
    parts.push(s.red(`${d.result.error.code}: ${d.result.error.message}`));
  return parts.join('  ');
}

/**
 * The lines under a call that waits for approval: not a denial, but what to do next — the
 * approval's id and the command that approves it (as someone other than the caller).
 */
export function waitingLines(d: DispatchRow, s: Style, cli = cliCommand()): string {
  const id = d.decision?.approvalId;
  if (d.status !== 'awaiting-approval' || id === undefined) return '';
  return (
    `  ${s.yellow('waiting for approval')} ${s.bold(id)} (someone other than the caller approves it):\n` +
    `    ${cli} approvals approve ${id}\n`
  );
}

/** The states an approval ends in when `verb` decided it. */
const DECIDED_BY: Readonly<Record<string, readonly string[]>> = {
  approve: ['approved', 'consumed'],
  reject: ['rejected'],
};

/**
 * A second `approve` (or `reject`) of a request already decided that way: nothing to do, so not a
 * failure — a note naming who decided it. Undefined for any other error (a request decided the
 * other way, or expired, is still an error).
 */
export function alreadyInState(
  error: unknown,
  verb: string,
): { details: Record<string, unknown>; text: (s: Style) => string } | undefined {
  if (!(error instanceof FleetgateError) || error.code !== 'FLEETGATE_APPROVAL_ALREADY_DECIDED') {
    return undefined;
  }
  const details = error.details ?? {};
  const status = typeof details.status === 'string' ? details.status : undefined;
  if (status === undefined || !(DECIDED_BY[verb] ?? []).includes(status)) return undefined;
  const by = typeof details.decidedBy === 'string' ? ` by ${details.decidedBy}` : '';
  return {
    details: { ...details, note: 'already in that state' },
    text: (s) =>
      `${s.bold(String(details.id))}: already ${status}${by} ${s.dim('(nothing to do)')}`,
  };
}

/**
 * `fleetgate approvals approve|reject|snooze|answer --url`. The list is not here: `approvals.ts`
 * prints it from either source with one renderer.
 */
export async function remoteApprovals(
  client: GatewayClient,
  io: CliIo,
  verb: 'approve' | 'reject' | 'snooze' | 'answer',
  args: {
    id?: string;
    reason?: string;
    for?: string;
    text?: string;
    json?: boolean;
  },
): Promise<number> {
  const s = createStyle(io.color);
  const id = encodeURIComponent(args.id ?? '');
  const body =
    verb === 'snooze'
      ? defined({ reason: args.reason, for: args.for })
      : verb === 'answer'
        ? { text: args.text, ...defined({ reason: args.reason }) }
        : defined({ reason: args.reason });
  let result: {
    approval?: { id: string; status: string; agent: string; skill: string };
    dispatch?: DispatchRow | null;
    id?: string;
    status?: string;
    agent?: string;
    skill?: string;
  };
  try {
    result = await client.post<typeof result>(`/api/approvals/${id}/${verb}`, body);
  } catch (error) {
    const note = alreadyInState(error, verb);
    if (note === undefined) throw error;
    io.out(args.json === true ? `${JSON.stringify(note.details)}\n` : `${note.text(s)}\n`);
    return 0;
  }
  if (args.json === true) {
    io.out(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  }
  const approval =
    result.approval ?? (result as { id: string; status: string; agent: string; skill: string });
  io.out(`${s.bold(approval.id)} ${approval.agent}/${approval.skill}: ${approval.status}\n`);
  if (result.dispatch !== undefined && result.dispatch !== null)
    io.out(`  dispatch ${dispatchLine(result.dispatch, s)}\n`);
  return 0;
}

/** `fleetgate tail [PATTERN…] --url`: the gateway's live events, until Ctrl-C or `count`. */
export async function remoteTail(
  client: GatewayClient,
  io: CliIo,
  patterns: readonly string[],
  opts: { json?: boolean; count?: number; from?: unknown },
): Promise<number> {
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let printed = 0;
  io.err(
    `tailing ${patterns.length === 0 ? '>' : patterns.join(' ')} at ${client.url} (Ctrl-C to stop)\n`,
  );
  try {
    await client.events(
      patterns,
      (e) => {
        if (e.type !== 'message') {
          io.err(`${e.type}: ${JSON.stringify(e.data)}\n`);
          return;
        }
        // Several events can arrive in one chunk: none is printed past the count.
        if (controller.signal.aborted) return;
        const event = e.data as EventEnvelope;
        io.out(
          opts.json === true
            ? `${JSON.stringify(event)}\n`
            : `${formatEventLine(event, io.color)}\n`,
        );
        printed += 1;
        if (opts.count !== undefined && printed >= opts.count) controller.abort();
      },
      controller.signal,
      { fromRetained: opts.from === 'all' },
    );
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  return 0;
}

/** How many calls a short id may match before the rest are left unread. */
const SHORT_ID_MATCHES = 20;

/**
 * The whole id of a call named by the end of its id, as `fleetgate dispatch` prints it (a record
 * id's head is its time, the same for every call of a minute); a whole id, or one no call ends
 * with, is taken as it is.
 */
export async function fullDispatchId(client: GatewayClient, id: string): Promise<string> {
  if (id.length >= 32 || !/^[0-9a-f-]+$/iu.test(id)) return id;
  const { dispatches } = await client.get<{ dispatches: DispatchRow[] }>(
    `/api/dispatches?idEndsWith=${encodeURIComponent(id)}&limit=${SHORT_ID_MATCHES}`,
  );
  const matches = dispatches.filter((d) => d.id.toLowerCase().endsWith(id.toLowerCase()));
  if (matches.length === 1) return matches[0]!.id;
  // None: the id as given, for the gateway to name unknown.
  if (matches.length === 0) return id;
  const many = matches.length === SHORT_ID_MATCHES ? 'At least ' : '';
  throw new FleetgateError(
    'FLEETGATE_USAGE',
    `${many}${matches.length} dispatches have ids that end with ${id} (${matches.map((d) => d.id).join(', ')}): give more of it, or the whole id.`,
  );
}
