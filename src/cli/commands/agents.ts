/**
 * `fleetgate agents`, `agents ack` and `cards refresh`. The fleet table is printed from the
 * fleet this process reads (`--config`) or from a running gateway's API (`--url`); both rows
 * take their radius cell from {@link skillRadiusCell}, so a skill reads the same either way.
 */
import type { AgentCardState, CardBroker, RefreshOutcome } from '../../fleet/index.js';
import type { BlastRadius } from '../../protocol/index.js';
import { isBlastRadius, maxRadius } from '../../protocol/index.js';
import type { FleetRuntime } from '../../service/index.js';
import { EXIT } from '../errors.js';
import type { CliIo } from '../io.js';
import { textFlag } from '../options.js';
import { DEFAULT_CONFIG, fromEnvironment, readConfig } from '../store.js';
import type { Style } from '../style.js';
import { age, createStyle, renderFleetTable } from '../style.js';
import type { GatewayClient } from './gateway-client.js';
import type { AgentRow } from './remote.js';
import { remoteClient, statusCell as remoteStatusCell } from './remote.js';
import type { RegisterCommand } from './types.js';

/** What the policy counts an unknown radius as (`policy.unknownRadius`). */
type UnknownRule = BlastRadius | 'proceed';

/**
 * Runs `run` on the fleet of a configuration. These commands keep the card cache (last good
 * cards, failure counts, acknowledgements) in the configured store, and set the store up when
 * it is new.
 */
async function withRuntime<T>(
  path: string | undefined,
  run: (rt: FleetRuntime, unknownRule: UnknownRule) => Promise<T>,
): Promise<T> {
  const config = await readConfig(path, { required: true, secrets: fromEnvironment });
  const { createFleetRuntime } = await import('../../service/index.js');
  const rt = await createFleetRuntime(config, { secrets: fromEnvironment });
  try {
    return await run(rt, config.policy.unknownRadius);
  } finally {
    await rt.close();
  }
}

/** `1 agent`, `2 agents`. */
function count(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Refreshes every card, with a progress bar on a terminal. */
async function refreshWithProgress(
  broker: CardBroker,
  total: number,
  io: CliIo,
): Promise<RefreshOutcome[]> {
  const cliProgress = io.color && total > 0 ? (await import('cli-progress')).default : undefined;
  const bar =
    cliProgress !== undefined
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

/** What the fleet table's radius cell is made from, whichever side read the fleet. */
export interface SkillRadius {
  /** max(declared, acknowledged, floor); `undefined` when the card declares no valid radius. */
  radius: BlastRadius | undefined;
  declared: BlastRadius | undefined;
  /** True while the agent's card is stale: the policy does not trust its radius. */
  stale: boolean;
  /**
   * What the gate counts the skill as when the card gives no radius it trusts (`undefined`: the
   * call proceeds unrated, `policy.unknownRadius: proceed`). Read only in that case.
   */
  counted: BlastRadius | undefined;
}

/**
 * The radius cell of one skill, in both modes of `fleetgate agents`. A radius the policy takes
 * from the card shows as declared, or raised (`repo (declares self)`); one it does not (none
 * declared, an invalid one, a stale card) shows what the gate counts it as, then why
 * (`public (unknown)`, `proceed (stale)`).
 */
export function skillRadiusCell(r: SkillRadius, s: Style): string {
  if (r.radius === undefined || r.stale) {
    const why = s.dim(r.stale ? '(stale)' : '(unknown)');
    return r.counted === undefined ? `proceed ${why}` : `${s.radius(r.counted)} ${why}`;
  }
  return r.declared !== r.radius
    ? `${s.radius(r.radius)} ${s.dim(`(declares ${r.declared ?? '?'})`)}`
    : s.radius(r.radius);
}

/**
 * What the gate counts a skill as whose card gives it no radius it trusts: the unknown rule, never
 * below what is known (a stale card's radius, the acknowledged level, the floor). The same
 * arithmetic as the policy's `decide`.
 */
function countedRadius(
  r: ReturnType<CardBroker['effectiveRadius']>,
  rule: UnknownRule,
): BlastRadius | undefined {
  return maxRadius(
    rule === 'proceed' ? undefined : rule,
    r.stale ? r.radius : undefined,
    r.accepted,
    r.floor,
  );
}

/**
 * The fleet table: one row per skill (or per agent without skills). A radius the policy does not
 * take from the card shows what `unknownRule` makes of it.
 */
export function renderFleet(
  broker: CardBroker,
  s: Style,
  unknownRule: UnknownRule = 'public',
  now = Date.now(),
): string {
  const rows: string[][] = [];
  const pending = broker.pendingAcknowledgements();
  for (const state of broker.states()) {
    const skills = new Set<string>();
    const card = broker.get(state.name)?.card as { skills?: { id?: unknown }[] } | undefined;
    for (const skill of card?.skills ?? []) if (typeof skill.id === 'string') skills.add(skill.id);
    const head = [
      state.name,
      statusCell(state, s),
      state.lastFetchedAt === undefined ? '-' : age(state.lastFetchedAt, now),
    ];
    if (skills.size === 0) rows.push([...head, s.dim('-'), '', '', '', '']);
    for (const skill of skills) {
      const r = broker.effectiveRadius(state.name, skill);
      const m = broker.effectiveHitlMode(state.name, skill);
      const radius = skillRadiusCell({ ...r, counted: countedRadius(r, unknownRule) }, s);
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
  const failures = broker
    .states()
    .flatMap((st) =>
      st.lastError === undefined ? [] : [{ name: st.name, message: st.lastError.message }],
    );
  return renderFleetTable(rows, failures, s);
}

/** A radius as the API spells it; `undefined` for `null` or a name this CLI does not know. */
function apiRadius(value: string | null | undefined): BlastRadius | undefined {
  return typeof value === 'string' && isBlastRadius(value) ? value : undefined;
}

/**
 * A skill row of `GET /api/agents` whose card gives no radius the gateway's policy trusts: the
 * rows {@link skillRadiusCell} shows what the gate counts as.
 */
function untrustedRow(agent: AgentRow, skill: AgentRow['skills'][number]): boolean {
  return agent.status === 'stale' || apiRadius(skill.effectiveRadius) === undefined;
}

/** `agent/skill`, the key of {@link countedByGateway}'s answer. */
const skillKey = (agent: string, skill: string): string => `${agent}/${skill}`;

/** How many `policy/explain` requests {@link countedByGateway} keeps in flight. */
const EXPLAIN_CONCURRENCY = 8;

/**
 * What the gateway's gate counts each skill as whose card gives no radius it trusts, by
 * `agent/skill`: the gate's own effective radius for a call (`GET /api/policy/explain`), since
 * only the gateway knows its `policy.unknownRadius` and the level its ratchet holds.
 */
async function countedByGateway(
  client: GatewayClient,
  agents: readonly AgentRow[],
): Promise<Map<string, BlastRadius | undefined>> {
  const asks = agents.flatMap((a) =>
    a.skills.filter((k) => untrustedRow(a, k)).map((k) => ({ agent: a.name, skill: k.id })),
  );
  const counted = new Map<string, BlastRadius | undefined>();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let ask = asks[next++]; ask !== undefined; ask = asks[next++]) {
      const query = new URLSearchParams(ask).toString();
      const { decision } = await client.get<{ decision: { effectiveRadius: string | null } }>(
        `/api/policy/explain?${query}`,
      );
      counted.set(skillKey(ask.agent, ask.skill), apiRadius(decision.effectiveRadius));
    }
  };
  await Promise.all(Array.from({ length: Math.min(EXPLAIN_CONCURRENCY, asks.length) }, worker));
  return counted;
}

/**
 * The fleet table from `GET /api/agents`, radii as {@link renderFleet} prints them; `counted` is
 * what the gateway counts each skill as whose radius it does not take from the card.
 */
export function renderRemoteFleet(
  agents: readonly AgentRow[],
  counted: ReadonlyMap<string, BlastRadius | undefined>,
  s: Style,
  now = Date.now(),
): string {
  const rows: string[][] = [];
  for (const a of agents) {
    const head = [
      a.name,
      remoteStatusCell(a.status, s),
      a.lastFetchedAt == null ? '-' : age(a.lastFetchedAt, now),
    ];
    if (a.skills.length === 0) rows.push([...head, s.dim('-'), '', '', '', '']);
    for (const k of a.skills) {
      const radius = skillRadiusCell(
        {
          radius: apiRadius(k.effectiveRadius),
          declared: apiRadius(k.declaredRadius),
          stale: a.status === 'stale',
          counted: counted.get(skillKey(a.name, k.id)),
        },
        s,
      );
      rows.push([
        ...head,
        k.id,
        radius,
        k.hitlMode ?? s.dim('-'),
        k.floor ?? s.dim('-'),
        k.pendingRadius === null ? '' : s.yellow(`narrower ${k.pendingRadius} awaits ack`),
      ]);
      head.fill('');
    }
  }
  const failures = agents.flatMap((a) =>
    a.lastError === null ? [] : [{ name: a.name, message: a.lastError.message }],
  );
  return renderFleetTable(rows, failures, s);
}

/** `fleetgate agents --url`: exit 1 when an agent is not fresh. */
async function remoteAgents(client: GatewayClient, io: CliIo, json: boolean): Promise<number> {
  const body = await client.get<{ agents: AgentRow[] }>('/api/agents');
  io.out(
    json
      ? `${JSON.stringify(body, null, 2)}\n`
      : renderRemoteFleet(
          body.agents,
          await countedByGateway(client, body.agents),
          createStyle(io.color),
        ),
  );
  return body.agents.some((a) => a.status !== 'fresh') ? EXIT.problems : EXIT.ok;
}

/** What a refresh did, as `cards refresh` reports it: a first card is new, not changed. */
type RefreshResult = 'new' | 'changed' | 'unchanged' | 'failed';

function refreshResult(o: RefreshOutcome): RefreshResult {
  if (o.result === 'changed' && o.previousDigest === undefined) return 'new';
  return o.result;
}

/** `fleetgate agents`, `fleetgate agents ack`, `fleetgate cards refresh`. */
export const registerAgents: RegisterCommand = (program, io, setExit) => {
  const configHelp = `configuration file (default ./${DEFAULT_CONFIG})`;
  const agents = program
    .command('agents')
    .description(
      'refresh every agent card and print the fleet: status, card age, effective radius per skill; exit 1 when an agent is not fresh',
    )
    .option('-c, --config <file>', configHelp)
    .option('--json', 'print the card states and effective declarations as JSON')
    .option('--url <url>', 'ask a running gateway (default $FLEETGATE_URL; token $FLEETGATE_TOKEN)')
    .enablePositionalOptions()
    .action(async (opts: { config?: string; json?: boolean; url?: string }) => {
      const client = opts.config === undefined ? remoteClient(opts.url) : undefined;
      if (client !== undefined) return setExit(await remoteAgents(client, io, opts.json === true));
      await withRuntime(opts.config, async (rt, unknownRule) => {
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
            `${JSON.stringify({ agents: report, unknownRadius: unknownRule, pendingAcknowledgements: rt.broker.pendingAcknowledgements() }, null, 2)}\n`,
          );
        } else io.out(renderFleet(rt.broker, createStyle(io.color), unknownRule));
        setExit(rt.broker.states().some((st) => st.status !== 'fresh') ? EXIT.problems : EXIT.ok);
      });
    });

  agents
    .command('ack')
    .description('accept the narrower radius / hitl mode a skill now declares')
    .argument('<agent>', 'agent name')
    .argument('<skill>', 'skill id')
    .option('-c, --config <file>', configHelp)
    .option('--by <name>', 'who acknowledges (default $USER)', textFlag)
    .action(async (agent: string, skill: string, opts: { config?: string; by?: string }) => {
      const by = opts.by ?? process.env.USER ?? 'operator';
      await withRuntime(opts.config, async (rt) => {
        await rt.broker.refresh(agent);
        const result = await rt.broker.acknowledge(agent, skill, by);
        const parts = [
          result.radius === undefined ? '' : `radius ${result.radius}`,
          result.mode === undefined ? '' : `hitl mode ${result.mode}`,
        ].filter(Boolean);
        io.out(`${agent}/${skill}: ${parts.join(' and ')} now in effect (acknowledged by ${by})\n`);
        setExit(EXIT.ok);
      });
    });

  program
    .command('cards')
    .description('agent card maintenance')
    .command('refresh')
    .description(
      'refresh every agent card now and print a summary (new / changed / unchanged / failed); exit 1 when one failed',
    )
    .option('-c, --config <file>', configHelp)
    .option('--json', 'print each outcome and the summary as JSON')
    .action(async (opts: { config?: string; json?: boolean }) => {
      await withRuntime(opts.config, async (rt) => {
        const outcomes = await refreshWithProgress(rt.broker, rt.directory.size, io);
        const tally: Record<RefreshResult, number> = {
          new: 0,
          changed: 0,
          unchanged: 0,
          failed: 0,
        };
        for (const o of outcomes) tally[refreshResult(o)] += 1;
        setExit(tally.failed > 0 ? EXIT.problems : EXIT.ok);
        if (opts.json === true) {
          const agentsOut = outcomes.map((o) => ({ ...o, result: refreshResult(o) }));
          io.out(`${JSON.stringify({ agents: agentsOut, summary: tally }, null, 2)}\n`);
          return;
        }
        const s = createStyle(io.color);
        for (const o of outcomes)
          if (o.result === 'failed') io.out(`${s.red('failed')}  ${o.agent}: ${o.error.message}\n`);
        io.out(
          `${count(outcomes.length, 'agent')}: ${tally.new} new, ${tally.changed} changed, ${s.green(`${tally.unchanged} unchanged`)}, ${
            tally.failed > 0 ? s.red(`${tally.failed} failed`) : '0 failed'
          }\n`,
        );
      });
    });
};
