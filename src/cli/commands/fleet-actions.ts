/**
 * `fleetgate refresh [AGENT]`, `fleetgate ack AGENT SKILL` and `fleetgate cancel ID` against a
 * running gateway.
 */
import type { BlastRadius } from '../../protocol/index.js';
import { cliCommand } from '../launcher.js';
import { textFlag } from '../options.js';
import { createStyle } from '../style.js';
import { urlOption } from './gateway-client.js';
import type { AgentRow, DispatchRow } from './remote.js';
import { ENDED, dispatchLine, fullDispatchId, requireClient, statusCell } from './remote.js';
import type { RegisterCommand } from './types.js';

/** Registers `fleetgate refresh`, `fleetgate ack` and `fleetgate cancel`. */
export const registerFleetActions: RegisterCommand = (program, io, setExit) => {
  urlOption(
    program
      .command('refresh')
      .description("refresh an agent's card now (every agent's without AGENT) on a running gateway")
      .argument('[agent]')
      .option('--json', 'print JSON'),
  ).action(async (agent: string | undefined, opts: { url?: string; json?: boolean }) => {
    const client = requireClient(opts.url);
    const names =
      agent === undefined
        ? (await client.get<{ agents: AgentRow[] }>('/api/agents')).agents.map((a) => a.name)
        : [agent];
    const s = createStyle(io.color);
    let failed = 0;
    const outcomes: unknown[] = [];
    for (const name of names) {
      const r = await client.post<{
        outcome: { result: string; error?: { message: string } };
        agent: AgentRow;
      }>(`/api/agents/${encodeURIComponent(name)}/refresh`);
      outcomes.push(r);
      if (r.outcome.result === 'failed') failed += 1;
      if (opts.json !== true) {
        io.out(
          `${name}: ${r.outcome.result === 'failed' ? s.red(`failed ${r.outcome.error?.message ?? ''}`) : s.green(r.outcome.result)} (${statusCell(r.agent.status, s)})\n`,
        );
      }
    }
    if (opts.json === true) io.out(`${JSON.stringify(outcomes, null, 2)}\n`);
    setExit(failed > 0 ? 1 : 0);
  });

  urlOption(
    program
      .command('ack')
      .description(
        'accept the narrower radius / hitl mode a skill now declares, on a running gateway (admin token)',
      )
      .argument('<agent>')
      .argument('<skill>')
      .option('--json', 'print JSON'),
  ).action(async (agent: string, skill: string, opts: { url?: string; json?: boolean }) => {
    const client = requireClient(opts.url);
    const r = await client.post<{ radius?: BlastRadius; mode?: string; acknowledgedBy: string }>(
      `/api/agents/${encodeURIComponent(agent)}/ack`,
      { skill },
    );
    if (opts.json === true) io.out(`${JSON.stringify(r, null, 2)}\n`);
    else {
      const parts = [
        r.radius === undefined ? '' : `radius ${r.radius}`,
        r.mode === undefined ? '' : `hitl mode ${r.mode}`,
      ].filter(Boolean);
      io.out(
        `${agent}/${skill}: ${parts.join(' and ') || 'nothing changed'} now in effect (acknowledged by ${r.acknowledgedBy})\n`,
      );
    }
    setExit(0);
  });

  urlOption(
    program
      .command('cancel')
      .description(
        'cancel a call on a running gateway (a held one is rejected, a running task canceled at the agent); exit 1 when it had ended',
      )
      .argument('<id>', 'the dispatch id, or the end of it that `fleetgate dispatch` prints')
      .option(
        '--reason <text>',
        'why (kept in the audit trail when a held call is rejected)',
        textFlag,
      )
      .option('--json', 'print the dispatch as JSON'),
  ).action(async (id: string, opts: { url?: string; json?: boolean; reason?: string }) => {
    const client = requireClient(opts.url);
    const full = await fullDispatchId(client, id);
    const d = await client.post<DispatchRow>(
      `/api/dispatches/${encodeURIComponent(full)}/cancel`,
      opts.reason === undefined ? {} : { reason: opts.reason },
    );
    const stopped = d.status === 'canceled' || d.status === 'rejected';
    if (opts.json === true) io.out(`${JSON.stringify(d, null, 2)}\n`);
    else {
      const s = createStyle(io.color);
      const note = stopped
        ? ''
        : ENDED.has(d.status)
          ? `  it had already ended ${d.status}: nothing was canceled\n`
          : `  the agent is still ending its task; follow it: ${s.bold(`${cliCommand()} call ${d.id.slice(-8)}`)}\n`;
      io.out(`${dispatchLine(d, s)}\n${note}`);
    }
    setExit(stopped ? 0 : 1);
  });
};
