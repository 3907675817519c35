/**
 * `fleetgate world [DOMAIN]`: the materialised world state, read from the gateway's store
 * (`--store`, `--config`) or asked of a running gateway (`--url`). Without a domain, one row per
 * domain; with one, its state as JSON; with `--history`, its audit log. Both sources feed the
 * same printer, so a user switching between them sees the same tables and the same JSON.
 */
import { Option } from 'commander';
import { FleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import type { AuditRecord, DomainSnapshot } from '../../world/index.js';
import { EXIT } from '../errors.js';
import type { CliIo } from '../io.js';
import { integerFlag, storeFlag } from '../options.js';
import type { GatewayStore } from '../../service/index.js';
import { DEFAULT_CONFIG, DEFAULT_STORE, withStore } from '../store.js';
import type { Style } from '../style.js';
import { age, createStyle, renderTable } from '../style.js';
import type { GatewayClient } from './gateway-client.js';
import { remoteClient } from './remote.js';
import type { RegisterCommand } from './types.js';

const CELL_WIDTH = 40;

interface WorldCliOptions {
  store?: string;
  config?: string;
  history?: boolean;
  path?: string;
  limit?: number;
  json?: boolean;
}

function short(value: unknown): string {
  if (value === undefined) return '-';
  let text: string;
  try {
    text = JSON.stringify(value) ?? typeof value;
  } catch {
    text = '?';
  }
  return text.length > CELL_WIDTH ? `${text.slice(0, CELL_WIDTH - 1)}…` : text;
}

/** One row per domain: name, version, last change, top-level keys of `data`. */
export function renderDomains(
  domains: readonly DomainSnapshot[],
  s: Style,
  now = Date.now(),
): string {
  if (domains.length === 0) return `${s.dim('no world-state domains yet')}\n`;
  const rows = domains.map((d) => {
    const data = d.state.data;
    const keys =
      typeof data === 'object' && data !== null && !Array.isArray(data) ? Object.keys(data) : [];
    return [
      s.bold(d.name),
      String(d.version),
      `${age(d.updatedAt, now)} ago`,
      short(keys.join(', ')).replace(/^"|"$/gu, ''),
    ];
  });
  return renderTable(['DOMAIN', 'VERSION', 'UPDATED', 'DATA KEYS'], rows);
}

/** The audit records of a domain as a table, rejected entries in red with their reason. */
export function renderHistory(records: readonly AuditRecord[], s: Style): string {
  if (records.length === 0) return `${s.dim('no audit records')}\n`;
  const rows = records.map((r) => [
    String(r.seq),
    r.time,
    `${r.agent}/${r.skill}`,
    r.taskId,
    `${r.op} ${r.path}`,
    r.status === 'applied'
      ? `${short(r.previous)} → ${short(r.next)} ${s.dim(`v${r.version ?? '?'}`)}`
      : s.red(`rejected: ${r.reason ?? ''}`),
  ]);
  return renderTable(['SEQ', 'TIME', 'AGENT/SKILL', 'TASK', 'CHANGE', 'RESULT'], rows);
}

/** A history query as `fleetgate world DOMAIN --history` asks it. */
interface HistoryAsk {
  limit: number;
  path?: string;
}

/**
 * Where `fleetgate world` reads: the store, or a running gateway's API. Each gives the same
 * records (the API serves what the store holds), so one printer renders both.
 */
interface WorldSource {
  /** The store URL or the gateway URL, for messages. */
  readonly where: string;
  domains(): Promise<DomainSnapshot[]>;
  /** Undefined for a domain the source does not have. */
  domain(name: string): Promise<DomainSnapshot | undefined>;
  history(domain: string, ask: HistoryAsk): Promise<AuditRecord[]>;
}

/** The state of the gateway's store, read-only (`--store`, `--config`). */
async function storeWorld(store: GatewayStore): Promise<WorldSource> {
  const { createSqlWorldStore } = await import('../../world/index.js');
  const { OUTBOX_WRITERS } = await import('../../bus/index.js');
  const world = createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS });
  return {
    where: store.url,
    domains: () => world.domains(),
    domain: (name) => world.domain(name),
    history: (domain, ask) => world.history(domain, ask),
  };
}

/** The world state a running gateway serves (`--url`): `GET /api/world[/DOMAIN[/history]]`. */
function gatewayWorld(client: GatewayClient): WorldSource {
  const path = (domain: string): string => `/api/world/${encodeURIComponent(domain)}`;
  return {
    where: client.url,
    async domains() {
      const body = await client.get<{ domains: Record<string, DomainSnapshot> }>('/api/world');
      return Object.values(body.domains);
    },
    async domain(name) {
      try {
        return await client.get<DomainSnapshot>(path(name));
      } catch (error) {
        // Unknown here as in the store: the printer names the domains there are, either way.
        if (error instanceof FleetgateError && error.code === 'FLEETGATE_WORLD_DOMAIN_UNKNOWN') {
          return undefined;
        }
        throw error;
      }
    },
    async history(domain, ask) {
      const query = new URLSearchParams(defined({ path: ask.path }));
      query.set('limit', String(ask.limit));
      const body = await client.get<{ records: AuditRecord[] }>(
        `${path(domain)}/history?${query.toString()}`,
      );
      return body.records;
    },
  };
}

/**
 * A domain as the command prints it, whichever source it came from: these four fields in this
 * order (a store row carries more, and the API may one day).
 */
function snapshot({ name, version, state, updatedAt }: DomainSnapshot): DomainSnapshot {
  return { name, version, state, updatedAt };
}

/** Code-unit order, the same whatever order (or collation) the source listed them in. */
const byName = (a: DomainSnapshot, b: DomainSnapshot): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

/** Prints what `fleetgate world [DOMAIN] [--history]` asked for, from either source. */
async function printWorld(
  source: WorldSource,
  io: CliIo,
  domain: string | undefined,
  opts: WorldCliOptions,
): Promise<void> {
  const s = createStyle(io.color);
  if (domain === undefined) {
    const view = (await source.domains()).map(snapshot).sort(byName);
    io.out(opts.json === true ? json(view) : renderDomains(view, s));
    return;
  }
  const found = await source.domain(domain);
  if (found === undefined) {
    const known = (await source.domains()).map((d) => d.name).sort();
    throw new FleetgateError(
      'FLEETGATE_WORLD_DOMAIN_UNKNOWN',
      `No world-state domain ${JSON.stringify(domain)} in ${source.where} (${
        known.length === 0 ? 'it has none yet' : `it has ${known.join(', ')}`
      })`,
      { details: { domain, known } },
    );
  }
  if (opts.history === true) {
    const records = await source.history(domain, {
      limit: opts.limit ?? 50,
      ...defined({ path: opts.path }),
    });
    io.out(opts.json === true ? json(records) : renderHistory(records, s));
    return;
  }
  const { name, version, state, updatedAt } = snapshot(found);
  if (opts.json === true) {
    io.out(json({ name, version, state, updatedAt }));
    return;
  }
  io.out(
    `${s.bold(name)} ${s.dim(`version ${version}, updated ${new Date(updatedAt).toISOString()}`)}\n`,
  );
  io.out(json(state));
}

/** Registers `fleetgate world`. */
export const registerWorld: RegisterCommand = (program, io, setExit) => {
  program
    .command('world')
    .description(
      'show the world state (all domains, one domain, or its audit log); reads the store, never writes it',
    )
    .argument('[domain]', 'a world-state domain')
    .option(
      '--store <url>',
      `store URL (default: the config\u2019s store, else ${DEFAULT_STORE})`,
      storeFlag,
    )
    .option('--config <file>', `configuration file (default ${DEFAULT_CONFIG} when present)`)
    .option('--history', "print the domain's audit log instead of its state")
    .option('--path <path>', 'with --history: only this path and below')
    .option('--limit <n>', 'with --history: most records (default 50)', integerFlag(1, 10_000))
    .option('--json', 'print JSON')
    .addOption(
      new Option(
        '--url <url>',
        'ask a running gateway (default $FLEETGATE_URL; token $FLEETGATE_TOKEN)',
      ).conflicts(['store', 'config']),
    )
    .action(async (domain: string | undefined, opts: WorldCliOptions & { url?: string }) => {
      if (opts.history === true && domain === undefined) {
        throw new FleetgateError('FLEETGATE_USAGE', '--history needs a DOMAIN');
      }
      for (const [flag, value] of [
        ['--path', opts.path],
        ['--limit', opts.limit],
      ] as const) {
        if (value !== undefined && opts.history !== true) {
          throw new FleetgateError('FLEETGATE_USAGE', `${flag} applies only with --history`);
        }
      }
      const client =
        opts.store === undefined && opts.config === undefined ? remoteClient(opts.url) : undefined;
      if (client !== undefined) {
        await printWorld(gatewayWorld(client), io, domain, opts);
      } else {
        await withStore(opts, { readOnly: true }, async (store) =>
          printWorld(await storeWorld(store), io, domain, opts),
        );
      }
      setExit(EXIT.ok);
    });
};
