/**
 * `fleetgate world [DOMAIN]`: the materialised world state, read from the gateway's store. Without
 * a domain, one row per domain; with one, its state as JSON; with `--history`, its audit log.
 */
import { Option } from 'commander';
import { FleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import type { AuditRecord, DomainSnapshot } from '../../world/index.js';
import { EXIT } from '../errors.js';
import { integerFlag, storeFlag } from '../options.js';
import { DEFAULT_CONFIG, DEFAULT_STORE, withStore } from '../store.js';
import type { Style } from '../style.js';
import { createStyle, renderTable } from '../style.js';
import { remoteClient, remoteWorld } from './remote.js';
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

function age(ms: number, now: number): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.round(s / 60)}m`;
  return s < 86_400 ? `${Math.round(s / 3600)}h` : `${Math.round(s / 86_400)}d`;
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
      if (client !== undefined) return setExit(await remoteWorld(client, io, domain, opts));
      await withStore(opts, { readOnly: true }, async (store) => {
        const s = createStyle(io.color);
        const { createSqlWorldStore } = await import('../../world/index.js');
        const { OUTBOX_WRITERS } = await import('../../bus/index.js');
        const world = createSqlWorldStore({
          db: store.db,
          kind: store.kind,
          outbox: OUTBOX_WRITERS,
        });
        if (domain === undefined) {
          const domains = await world.domains();
          const view = domains.map(({ name, version, state, updatedAt }) => ({
            name,
            version,
            state,
            updatedAt,
          }));
          io.out(
            opts.json === true ? `${JSON.stringify(view, null, 2)}\n` : renderDomains(view, s),
          );
          setExit(EXIT.ok);
          return;
        }
        const found = await world.domain(domain);
        if (found === undefined) {
          const known = (await world.domains()).map((d) => d.name);
          throw new FleetgateError(
            'FLEETGATE_WORLD_DOMAIN_UNKNOWN',
            `No world-state domain ${JSON.stringify(domain)} in ${store.url} (${
              known.length === 0 ? 'it has none yet' : `it has ${known.join(', ')}`
            })`,
            { details: { domain, known } },
          );
        }
        if (opts.history === true) {
          const records = await world.history(domain, {
            limit: opts.limit ?? 50,
            ...defined({ path: opts.path }),
          });
          io.out(
            opts.json === true
              ? `${JSON.stringify(records, null, 2)}\n`
              : renderHistory(records, s),
          );
          setExit(EXIT.ok);
          return;
        }
        const { name, version, state, updatedAt } = found;
        if (opts.json === true) {
          io.out(`${JSON.stringify({ name, version, state, updatedAt }, null, 2)}\n`);
        } else {
          io.out(
            `${s.bold(name)} ${s.dim(`version ${version}, updated ${new Date(updatedAt).toISOString()}`)}\n`,
          );
          io.out(`${JSON.stringify(state, null, 2)}\n`);
        }
        setExit(EXIT.ok);
      });
    });
};
