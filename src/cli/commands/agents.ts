import { existsSync } from 'node:fs';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { FleetgateError } from '../../protocol/index.js';
import type { AgentCardState, CardBroker, RefreshOutcome } from '../../fleet/index.js';
import type { FleetgateConfig } from '../../service/index.js';
import { loadConfigFile } from '../../service/index.js';
import type { FleetRuntime } from '../../service/index.js';
import { createFleetRuntime } from '../../service/index.js';
import type { CliIo } from '../io.js';
import type { Style } from '../style.js';
import { createStyle, renderTable } from '../style.js';
import { remoteAgents, remoteClient } from './remote.js';

const DEFAULT_CONFIG = 'fleetgate.yaml';

async function config(path: string | undefined): Promise<FleetgateConfig> {
  const file = path ?? DEFAULT_CONFIG;
  if (path === undefined && !existsSync(file)) {
    throw new FleetgateError('FLEETGATE_USAGE', `no ${DEFAULT_CONFIG} here; pass --config FILE`);
  }
  return loadConfigFile(file);
}

async function withRuntime<T>(
  path: string | undefined,
  run: (rt: FleetRuntime) => Promise<T>,
): Promise<T> {
  const rt = await createFleetRuntime(await config(path), {
    secrets: (name) => process.env[name],
  });
  try {
    return await run(rt);
  } finally {
    await rt.close();
  }
}

/** Refreshes every card, with a progress bar on a terminal. */
async function refreshWithProgress(
  broker: CardBroker,
  total: number,
  io: CliIo,
): Promise<RefreshOutcome[]> {
  const bar =
    io.color && total > 0
      ? new cliProgress.SingleBar(
          {
            format: 'cards {bar} {value}/{total} {agent}',
            stream: process.stderr,
            hideCursor: true,
            clearOnComplete: true,
          },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
  bar?.start(total, 0, { agent: '' });
  try {
    return await broker.refreshAll((o) => bar?.increment({ agent: o.agent }));
  } finally {
    bar?.stop();
  }
}

function age(ms: number | undefined, now: number): string {
  if (ms === undefined) return '-';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}

function statusCell(state: AgentCardState, s: Style): string {
  switch (state.status) {
    case 'fresh':
      return s.green('fresh');
    case 'pending':
      return s.dim('pending');
    case 'failed':
      return s.yellow('failed');
    case 'stale':
      return s.red('stale');
  }
}

/** The fleet table: one row per skill (or per agent without skills). */
export function renderFleet(broker: CardBroker, s: Style, now = Date.now()): string {
  const rows: string[][] = [];
  const pending = broker.pendingAcknowledgements();
  for (const state of broker.states()) {
    const skills = new Set<string>();
    const card = broker.get(state.name)?.card as { skills?: { id?: unknown }[] } | undefined;
    for (const skill of card?.skills ?? []) if (typeof skill.id === 'string') skills.add(skill.id);
    const head = [state.name, statusCell(state, s), age(state.lastFetchedAt, now)];
    if (skills.size === 0) rows.push([...head, s.dim('-'), '', '', '', '']);
    for (const skill of skills) {
      const r = broker.effectiveRadius(state.name, skill);
      const m = broker.effectiveHitlMode(state.name, skill);
      const radius =
        r.radius === undefined
          ? s.dim('unknown')
          : r.declared !== r.radius
            ? `${s.radius(r.radius)} ${s.dim(`(declares ${r.declared ?? '?'})`)}`
            : s.radius(r.radius);
      const waits = pending
        .filter((p) => p.agent === state.name && p.skill === skill)
        .map((p) => `${p.kind} ${p.accepted}→${p.pending}`)
        .join(', ');
      rows.push([
        ...head,
        skill,
        radius,
        m.mode ?? s.dim('-'),
        r.floor ?? s.dim('-'),
        waits === '' ? '' : s.yellow(waits),
      ]);
      head.fill('');
    }
  }
  const problems = broker
    .states()
    .filter((st) => st.lastError !== undefined)
    .map((st) => `${s.red('!')} ${st.name}: ${st.lastError!.message}`);
  return (
    renderTable(
      ['agent', 'status', 'card age', 'skill', 'radius', 'mode', 'floor', 'awaiting ack'],
      rows,
    ) + (problems.length > 0 ? `\n${problems.join('\n')}\n` : '')
  );
}

/** `fleetgate agents`, `fleetgate agents ack`, `fleetgate cards refresh`. */
export function registerAgents(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const agents = program
    .command('agents')
    .description(
      'refresh every agent card and print the fleet: status, card age, effective radius per skill',
    )
    .option('-c, --config <file>', `configuration file (default ./${DEFAULT_CONFIG})`)
    .option('--json', 'print the card states and effective declarations as JSON')
    .option('--url <url>', 'ask a running gateway (default $FLEETGATE_URL; token $FLEETGATE_TOKEN)')
    .enablePositionalOptions()
    .action(async (opts: { config?: string; json?: boolean; url?: string }) => {
      const client = opts.config === undefined ? remoteClient(opts.url) : undefined;
      if (client !== undefined) return setExit(await remoteAgents(client, io, opts.json === true));
      await withRuntime(opts.config, async (rt) => {
        await refreshWithProgress(rt.broker, rt.directory.size, io);
        if (opts.json) {
          const report = rt.broker.states().map((st) => ({
            ...st,
            card: undefined,
            skills: (
              (rt.broker.get(st.name)?.card as { skills?: { id?: unknown }[] } | undefined)
                ?.skills ?? []
            )
              .flatMap((k) => (typeof k.id === 'string' ? [k.id] : []))
              .map((skill) => ({
                skill,
                radius: rt.broker.effectiveRadius(st.name, skill),
                hitlMode: rt.broker.effectiveHitlMode(st.name, skill),
                domains: rt.registries.effectDomain.get(st.name, skill)?.domains,
              })),
          }));
          io.out(
            `${JSON.stringify({ agents: report, pendingAcknowledgements: rt.broker.pendingAcknowledgements() }, null, 2)}\n`,
          );
        } else io.out(renderFleet(rt.broker, createStyle(io.color)));
        setExit(rt.broker.states().some((st) => st.status !== 'fresh') ? 1 : 0);
      });
    });

  agents
    .command('ack')
    .description('accept the narrower radius / hitl mode a skill now declares')
    .argument('<agent>')
    .argument('<skill>')
    .option('-c, --config <file>', `configuration file (default ./${DEFAULT_CONFIG})`)
    .option('--by <name>', 'who acknowledges', process.env.USER ?? 'operator')
    .action(async (agent: string, skill: string, opts: { config?: string; by: string }) => {
      await withRuntime(opts.config, async (rt) => {
        await rt.broker.refresh(agent);
        const result = await rt.broker.acknowledge(agent, skill, opts.by);
        const parts = [
          result.radius === undefined ? '' : `radius ${result.radius}`,
          result.mode === undefined ? '' : `hitl mode ${result.mode}`,
        ].filter(Boolean);
        io.out(
          `${agent}/${skill}: ${parts.join(' and ')} now in effect (acknowledged by ${opts.by})\n`,
        );
        setExit(0);
      });
    });

  program
    .command('cards')
    .description('agent card maintenance')
    .command('refresh')
    .description('refresh every agent card now and print a summary (fresh / changed / failed)')
    .option('-c, --config <file>', `configuration file (default ./${DEFAULT_CONFIG})`)
    .action(async (opts: { config?: string }) => {
      await withRuntime(opts.config, async (rt) => {
        const outcomes = await refreshWithProgress(rt.broker, rt.directory.size, io);
        const s = createStyle(io.color);
        const count = (r: RefreshOutcome['result']): number =>
          outcomes.filter((o) => o.result === r).length;
        for (const o of outcomes)
          if (o.result === 'failed') io.out(`${s.red('failed')}  ${o.agent}: ${o.error.message}\n`);
        io.out(
          `${outcomes.length} agents: ${s.green(`${count('unchanged')} fresh`)}, ${count('changed')} changed, ${
            count('failed') > 0 ? s.red(`${count('failed')} failed`) : '0 failed'
          }\n`,
        );
        setExit(count('failed') > 0 ? 1 : 0);
      });
    });
}
