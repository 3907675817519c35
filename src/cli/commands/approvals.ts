/**
 * `fleetgate approvals [approve|reject|snooze ID | answer ID TEXT]` and `fleetgate policy explain AGENT SKILL`.
 *
 * Decisions are written to the gateway's store; the running gateway (any replica) sees them on
 * its next sweep and sends or refuses the held call, so the CLI needs no connection to it. Each
 * accepted vote's `hitl.approval.voted` goes into the store's outbox in the vote's transaction, as
 * the gateway writes it; the running gateway's outbox relay publishes it on its next poll. With
 * `--url` they go through the gateway's API instead; the list prints the same either way.
 */
import { Option, type Command } from 'commander';
import type {
  ApprovalInbox,
  ApprovalRecord,
  Explanation,
  InboxEvents,
  Reason,
} from '../../policy/index.js';
import { FleetgateError, parseDuration } from '../../protocol/index.js';
import type { GatewayStore } from '../../service/index.js';
import { EXIT } from '../errors.js';
import type { CliIo } from '../io.js';
import { durationFlag, storeFlag, textFlag } from '../options.js';
import type { StoreFlags } from '../store.js';
import { DEFAULT_CONFIG, DEFAULT_STORE, withStore } from '../store.js';
import type { Style } from '../style.js';
import { createStyle, renderTable } from '../style.js';
import { alreadyInState, remoteApprovals, remoteClient, requireClient } from './remote.js';
import type { RegisterCommand } from './types.js';

interface StoreOptions extends StoreFlags {
  json?: boolean;
}

function left(ms: number): string {
  if (ms <= 0) return 'expired';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}

function reasonsText(reasons: readonly Reason[]): string {
  return reasons.map((r) => r.detail).join('; ');
}

/** Pending approvals as a table: radius coloured, time left, approvers, reasons. */
export function renderApprovals(
  approvals: readonly ApprovalRecord[],
  s: Style,
  now = Date.now(),
): string {
  if (approvals.length === 0) return `${s.dim('no pending approvals')}\n`;
  const rows = approvals.map((a) => {
    const ttl = a.expiresAt - now;
    return [
      s.bold(a.id),
      `${a.agent}/${a.skill}`,
      a.radius === null ? s.dim('unknown') : s.radius(a.radius),
      // A veto window's time to go is LEFT's: MODE names the kind only.
      a.kind === 'veto'
        ? 'veto'
        : a.kind === 'checkpoint'
          ? 'question'
          : a.kind === 'follow-up'
            ? `follow-up ${a.mode}`
            : a.mode,
      ttl < 5 * 60_000 ? s.red(left(ttl)) : left(ttl),
      `${a.approvals.length}/${a.requiredApprovals}`,
      a.domains === null ? '-' : a.domains.join(','),
      a.kind === 'checkpoint' ? `asks: ${a.question ?? ''}` : reasonsText(a.reasons),
    ];
  });
  return renderTable(
    ['ID', 'AGENT/SKILL', 'RADIUS', 'MODE', 'LEFT', 'OK', 'DOMAINS', 'REASONS'],
    rows,
  );
}

/** A decision and every reason behind it. */
export function renderExplanation(e: Explanation, s: Style): string {
  const d = e.decision;
  const radius = d.effectiveRadius === null ? s.dim('unknown') : s.radius(d.effectiveRadius);
  const lines = [
    `${s.bold(`${e.agent}/${e.skill}`)}: ${d.deny === undefined ? s.bold(d.mode) : s.red(`denied (${d.deny.reason})`)} at radius ${radius}`,
  ];
  if (d.mode === 'veto') lines.push(`  veto window ${left(d.vetoTtlMs ?? 0)}`);
  if (d.mode === 'gated' || d.mode === 'compound') lines.push(`  approvers needed: ${d.approvers}`);
  if (d.standing !== undefined) lines.push(`  standing approval ${d.standing} applies`);
  for (const r of d.reasons) lines.push(`  ${s.dim(r.kind.padEnd(18))} ${r.detail}`);
  lines.push(s.dim(`  policy version ${e.policyVersion}`));
  return `${lines.join('\n')}\n`;
}

const storeOption = '--store <url>';
const storeHelp = `store URL (default: the config\u2019s store, else ${DEFAULT_STORE})`;
const configHelp = `configuration file (default ${DEFAULT_CONFIG} when present)`;
const byHelp = '(default $FLEETGATE_USER, else $USER)';

/** Who decides: `--by`, else the user the environment names. */
function decider(by: string | undefined): string {
  return by ?? process.env.FLEETGATE_USER ?? process.env.USER ?? 'operator';
}

const urlHelp = 'a running gateway (default $FLEETGATE_URL; token $FLEETGATE_TOKEN)';
/** `--url`, which names the other place to work than `--store` or `--config`: one or the other. */
const urlFlag = (): Option => new Option('--url <url>', urlHelp).conflicts(['store', 'config']);
/** --store or --config: work on the store directly, not through a running gateway. */
const local = (opts: StoreOptions): boolean =>
  opts.store !== undefined || opts.config !== undefined;

/**
 * The inbox over a store the CLI decides on directly: each accepted vote's `hitl.approval.voted`
 * is written into the store's outbox in the vote's own transaction, as the gateway writes it (same
 * deterministic id), so open dashboards and `GET /api/events` readers see a vote cast here. No
 * relay runs in this process: a running gateway's relay publishes the row on its next poll.
 */
async function storeInbox(store: GatewayStore): Promise<ApprovalInbox> {
  const [{ createApprovalInbox }, { writeOutboxEvent }] = await Promise.all([
    import('../../policy/index.js'),
    import('../../bus/index.js'),
  ]);
  const events: InboxEvents = {
    write: async (trx, topic, payload, options) => {
      await writeOutboxEvent(trx, topic, payload, options);
    },
  };
  return createApprovalInbox({ db: store.db, events });
}

/** Registers `fleetgate approvals` and `fleetgate policy`. */
export const registerApprovals: RegisterCommand = (program, io, setExit) => {
  const approvals = registerList(program, io, setExit);
  registerDecision(approvals, 'approve', io, setExit);
  registerDecision(approvals, 'reject', io, setExit);
  registerDecision(approvals, 'snooze', io, setExit);
  registerAnswer(approvals, io, setExit);
  registerExplain(program, io, setExit);
};

/**
 * The pending approvals (with `all`, the snoozed ones too), from a running gateway
 * (`GET /api/approvals`) or from the store: the same records either way, the API serving what
 * the store holds.
 */
async function pendingApprovals(
  opts: StoreOptions & { all?: boolean; url?: string },
): Promise<ApprovalRecord[]> {
  const client = local(opts) ? undefined : remoteClient(opts.url);
  if (client !== undefined) {
    const query = opts.all === true ? '?snoozed=true' : '';
    return (await client.get<{ approvals: ApprovalRecord[] }>(`/api/approvals${query}`)).approvals;
  }
  const { createApprovalInbox } = await import('../../policy/index.js');
  return withStore(opts, { readOnly: true }, (store) =>
    createApprovalInbox({ db: store.db }).list({ includeSnoozed: opts.all === true }),
  );
}

/** `fleetgate approvals`: the pending approvals; returns the command its verbs are added to. */
function registerList(program: Command, io: CliIo, setExit: (code: number) => void): Command {
  return program
    .command('approvals')
    .description(
      'list pending approvals (reads the store, never writes it); approve, reject or snooze one',
    )
    .option(storeOption, storeHelp, storeFlag)
    .option('--config <file>', configHelp)
    .option('--all', 'include snoozed approvals')
    .option('--json', 'print JSON')
    .addOption(urlFlag())
    .action(async (opts: StoreOptions & { all?: boolean; url?: string }) => {
      // One printer for both sources: the same columns, and the same JSON (an array of records).
      const list = await pendingApprovals(opts);
      io.out(
        opts.json === true
          ? `${JSON.stringify(list, null, 2)}\n`
          : renderApprovals(list, createStyle(io.color)),
      );
      setExit(EXIT.ok);
    });
}

/**
 * Refuses words after an approval's id (`approvals snooze ID 30m`, `approvals reject ID wrong
 * week`), naming the flag they were meant for.
 */
function refuseExtraWords(verb: 'approve' | 'reject' | 'snooze', extra: readonly string[]): void {
  if (extra.length === 0) return;
  const words = extra.join(' ');
  const duration = verb === 'snooze' && extra.length === 1 && parseDuration(words) !== undefined;
  throw new FleetgateError(
    'FLEETGATE_USAGE',
    duration
      ? `approvals snooze takes how long as --for: write --for ${words} ('${words}' after the id is not read)`
      : `approvals ${verb} takes one approval id; '${words}' after it is not read: a reason goes in --reason '${words}'`,
  );
}

/** `fleetgate approvals approve|reject|snooze ID`. */
function registerDecision(
  approvals: Command,
  verb: 'approve' | 'reject' | 'snooze',
  io: CliIo,
  setExit: (code: number) => void,
): void {
  const cmd = approvals
    .command(verb)
    .description(`${verb} a pending approval`)
    .argument('<id>', 'approval id')
    .option('--reason <text>', 'why (kept in the audit trail)')
    .option('--by <name>', `who decides ${byHelp}`, textFlag)
    .option(storeOption, storeHelp, storeFlag)
    .option('--config <file>', configHelp)
    .option('--json', 'print the approval as JSON');
  if (verb === 'snooze') {
    cmd.option('--for <duration>', 'how long, e.g. 30m or 2h (default 15m)', durationFlag);
  }
  cmd.addOption(urlFlag());
  // Words after the id are refused here, saying which flag they belong in (commander would only
  // say "too many arguments").
  cmd.allowExcessArguments(true);
  cmd.action(
    async (
      id: string,
      opts: StoreOptions & { reason?: string; by?: string; for?: number; url?: string },
      command: Command,
    ) => {
      refuseExtraWords(verb, command.args.slice(1));
      // Against a running gateway the approver is the token's name; --by is not sent.
      const client = local(opts) ? undefined : remoteClient(opts.url);
      if (client !== undefined) {
        const { for: ms, ...rest } = opts;
        return setExit(
          await remoteApprovals(client, io, verb, {
            ...rest,
            id,
            ...(ms === undefined ? {} : { for: `${ms}ms` }),
          }),
        );
      }
      const by = decider(opts.by);
      await withStore(opts, { readOnly: false }, async (store) => {
        const inbox = await storeInbox(store);
        let record: ApprovalRecord;
        try {
          record = await decide();
        } catch (error) {
          const note = alreadyInState(error, verb);
          if (note === undefined) throw error;
          io.out(
            opts.json === true
              ? `${JSON.stringify(note.details)}\n`
              : `${note.text(createStyle(io.color))}\n`,
          );
          return setExit(EXIT.ok);
        }
        function decide(): Promise<ApprovalRecord> {
          switch (verb) {
            case 'approve':
              return inbox.approve(id, by, opts.reason);
            case 'reject':
              return inbox.reject(id, by, opts.reason);
            case 'snooze':
              return inbox.snooze(id, by, Date.now() + (opts.for ?? 15 * 60_000), opts.reason);
          }
        }
        setExit(EXIT.ok);
        if (opts.json === true) {
          io.out(`${JSON.stringify(record, null, 2)}\n`);
          return;
        }
        const s = createStyle(io.color);
        const state =
          record.status === 'pending' && verb === 'approve'
            ? `approved by ${record.approvals.length} of ${record.requiredApprovals}`
            : verb === 'snooze'
              ? `snoozed until ${new Date(record.snoozedUntil ?? 0).toISOString()}`
              : record.status;
        io.out(
          `${s.bold(record.id)} ${record.agent}/${record.skill}: ${state}` +
            (record.status === 'approved' || record.status === 'rejected'
              ? s.dim(' (the gateway moves the call on at its next sweep)')
              : '') +
            '\n',
        );
      });
    },
  );
}

/** `fleetgate approvals answer ID TEXT`: answers a task's question. */
function registerAnswer(approvals: Command, io: CliIo, setExit: (code: number) => void): void {
  approvals
    .command('answer')
    .description("answer a task's question (input-required); the gateway sends it to the agent")
    .argument('<id>', 'approval id of the question')
    .argument('<text>', 'the answer')
    .option('--by <name>', `who answers ${byHelp}`, textFlag)
    .option(storeOption, storeHelp, storeFlag)
    .option('--config <file>', configHelp)
    .addOption(urlFlag())
    .action(
      async (id: string, text: string, opts: StoreOptions & { by?: string; url?: string }) => {
        const client = local(opts) ? undefined : remoteClient(opts.url);
        if (client !== undefined) {
          return setExit(await remoteApprovals(client, io, 'answer', { id, text }));
        }
        await withStore(opts, { readOnly: false }, async (store) => {
          const record = await (await storeInbox(store)).answer(id, decider(opts.by), text);
          setExit(EXIT.ok);
          const s = createStyle(io.color);
          io.out(
            `${s.bold(record.id)} ${record.agent}/${record.skill}: answered` +
              s.dim(' (the gateway sends it at its next sweep)') +
              '\n',
          );
        });
      },
    );
}

/** `fleetgate policy explain AGENT SKILL`: the running gateway's decision on a call. */
function registerExplain(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('policy')
    .description('the HITL policy')
    .command('explain')
    .description(
      'ask the running gateway for its decision on a call to AGENT SKILL and every reason behind it (nothing is sent); exit 1 when denied',
    )
    .argument('<agent>', 'agent name')
    .argument('<skill>', 'skill id')
    .option('--text <text>', 'an input, to print the call fingerprint too')
    .option('--url <url>', urlHelp)
    .option('--json', 'print JSON')
    .action(
      async (
        agent: string,
        skill: string,
        opts: { url?: string; json?: boolean; text?: string },
      ) => {
        const client = requireClient(opts.url);
        const query = new URLSearchParams({ agent, skill });
        if (opts.text !== undefined) query.set('text', opts.text);
        const explained = await client.get<Explanation>(`/api/policy/explain?${query.toString()}`);
        io.out(
          opts.json === true
            ? `${JSON.stringify(explained, null, 2)}\n`
            : renderExplanation(explained, createStyle(io.color)),
        );
        setExit(explained.decision.deny === undefined ? EXIT.ok : EXIT.problems);
      },
    );
}
