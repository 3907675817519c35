/** `fleetgate refresh [AGENT]` and `fleetgate ack AGENT SKILL` against a running gateway. */
import type { BlastRadius } from '../../protocol/index.js';
import { createStyle } from '../style.js';
import { urlOption } from './gateway-client.js';
import type { AgentRow } from './remote.js';
import { requireClient, statusCell } from './remote.js';
import type { RegisterCommand } from './types.js';

/** Registers `fleetgate refresh` and `fleetgate ack`. */
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
};
