/**
 * `fleetgate tail [PATTERN…]`: prints live bus events, one line each, coloured by topic family
 * (`--json` for the raw envelopes, one per line). It reads the NATS JetStream bus of gateways
 * configured with `bus: nats://…` (`--nats URL`), and creates nothing there: no stream means no
 * gateway has published to that NATS yet. An in-memory bus lives inside its gateway process and
 * cannot be tailed from outside.
 */
import { Option } from 'commander';
import type { EventBus, StartFrom } from '../../bus/index.js';
import type { OpenTopics } from '../../protocol/index.js';
import { FleetgateError, isFleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import { EXIT } from '../errors.js';
import type { CliIo } from '../io.js';
import { integerFlag, natsServers } from '../options.js';
import { formatEventLine } from './event-line.js';
import { remoteClient, remoteTail } from './remote.js';
import type { RegisterCommand } from './types.js';

export { formatEventLine } from './event-line.js';

/** Options of {@link runTail}. */
export interface RunTailOptions {
  bus: EventBus<OpenTopics>;
  /** NATS-syntax patterns; none means everything (`>`). */
  patterns: readonly string[];
  io: CliIo;
  json: boolean;
  from?: StartFrom;
  /** Stop after this many events. */
  count?: number;
  /** Stops the tail. */
  signal: AbortSignal;
}

/**
 * Subscribes and prints until `signal` aborts or `count` events were printed; resolves to the
 * number printed. Several patterns share one subscription filtered locally, so an event that
 * matches two patterns prints once, in order.
 */
export async function runTail(options: RunTailOptions): Promise<number> {
  const patterns = options.patterns.length === 0 ? ['>'] : [...options.patterns];
  const { TopicTrie, parsePattern } = await import('../../bus/index.js');
  for (const p of patterns) parsePattern(p);
  const filter = new TopicTrie<true>();
  for (const p of patterns) filter.add(p, true);
  const subscribed = patterns.length === 1 ? patterns[0]! : '>';
  let printed = 0;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  if (options.signal.aborted) return 0;
  options.signal.addEventListener('abort', () => finish(), { once: true });
  const sub = await options.bus.subscribe(
    subscribed,
    (event) => {
      if (options.count !== undefined && printed >= options.count) return;
      if (subscribed === '>' && filter.match(event.topic).length === 0) return;
      printed += 1;
      options.io.out(
        options.json
          ? `${JSON.stringify(event)}\n`
          : `${formatEventLine(event, options.io.color)}\n`,
      );
      if (options.count !== undefined && printed >= options.count) finish();
    },
    {
      name: `tail_${process.pid}`,
      // A slow terminal must never make the gateway's publishes fail (in-memory bus).
      overflow: 'drop-oldest',
      ...defined({ from: options.from }),
    },
  );
  options.io.err(`tailing ${patterns.join(' ')} (Ctrl-C to stop)\n`);
  try {
    await done;
  } finally {
    await sub.unsubscribe();
  }
  return printed;
}

interface TailCliOptions {
  nats?: string;
  stream?: string;
  prefix?: string;
  json?: boolean;
  from: StartFrom;
  count?: number;
}

/** Where tail reads: the NATS servers, the gateways' stream and their subject prefix. */
interface TailSource {
  servers: string;
  stream: string;
  prefix: string;
}

/**
 * The source a `--nats` URL names, read as the gateway reads its `bus:` (`parseBusUrl`), so the
 * `bus:` URL of a configuration can be passed as it is: its `?stream=` and `?prefix=` are the
 * gateways', and `--stream` / `--prefix` may only repeat them.
 *
 * @param what names the URL in errors (`--nats`, `FLEETGATE_NATS_URL`).
 */
async function tailSource(url: string, opts: TailCliOptions, what: string): Promise<TailSource> {
  const { parseBusUrl } = await import('../../service/index.js');
  let target;
  try {
    target = parseBusUrl(url);
  } catch (error) {
    if (!isFleetgateError(error, 'FLEETGATE_CONFIG_INVALID')) throw error;
    const summary = error.details?.summary;
    throw new FleetgateError('FLEETGATE_USAGE', `${what}: ${error.message}`, {
      cause: error,
      details: {
        ...error.details,
        ...(typeof summary === 'string' ? { summary: `${what}: ${summary}` } : {}),
      },
    });
  }
  if (target.kind !== 'nats') {
    throw new FleetgateError('FLEETGATE_USAGE', `${what}: ${url} is not a NATS server`);
  }
  const pick = (flag: string, given: string | undefined, inUrl: string | undefined): void => {
    if (given !== undefined && inUrl !== undefined && given !== inUrl) {
      throw new FleetgateError(
        'FLEETGATE_USAGE',
        `--${flag} ${given} and ?${flag}=${inUrl} of ${what} disagree; pass one of them`,
      );
    }
  };
  pick('stream', opts.stream, target.stream);
  pick('prefix', opts.prefix, target.prefix);
  return {
    servers: target.servers,
    stream: opts.stream ?? target.stream ?? DEFAULT_STREAM,
    prefix: opts.prefix ?? target.prefix ?? DEFAULT_PREFIX,
  };
}

/** The gateways' stream and subject prefix when neither a flag nor the URL names them. */
const DEFAULT_STREAM = 'FLEETGATE';
const DEFAULT_PREFIX = 'fleetgate';

/** The bus of the gateways on a NATS server, explaining a missing stream. */
async function openTailBus(source: TailSource): Promise<EventBus<OpenTopics>> {
  const url = source.servers;
  try {
    const { createJetStreamEventBus } = await import('../../bus/jetstream/index.js');
    return await createJetStreamEventBus<OpenTopics>({
      servers: url,
      stream: source.stream,
      subjectPrefix: source.prefix,
      // Tail only reads: it never creates the gateways' stream.
      manageStream: false,
      name: 'fleetgate-tail',
    });
  } catch (error) {
    const cause = isFleetgateError(error)
      ? (error.cause as { name?: unknown } | undefined)
      : undefined;
    if (cause?.name === 'StreamNotFoundError') {
      throw new FleetgateError(
        'FLEETGATE_BUS_STREAM_NOT_FOUND',
        `No stream ${source.stream} on ${url}: no gateway has published to this NATS yet (or it uses another --stream / --prefix)`,
        { cause: error, details: { servers: url, stream: source.stream } },
      );
    }
    throw error;
  }
}

/** `fleetgate tail [PATTERN…] --nats URL [--stream S] [--prefix P] [--json] [--from new|all] [--count N]` */
export const registerTail: RegisterCommand = (program, io, setExit) => {
  program
    .command('tail')
    .description(
      'print the live events of a running gateway (--url, through its restarts) or of a NATS JetStream bus (--nats), one line each, coloured by topic family',
    )
    .argument('[patterns...]', "topic patterns in NATS syntax ('*' one token, '>' the rest)", [])
    .option(
      '--nats <url>',
      "the NATS server of the gateways (nats://, tls:// or host:port; default $FLEETGATE_NATS_URL); their bus: URL's ?stream=NAME&prefix=name are read as the gateway reads them",
    )
    .option(
      '--stream <name>',
      `the gateways' JetStream stream (default: ?stream= of the URL, else ${DEFAULT_STREAM})`,
    )
    .option(
      '--prefix <prefix>',
      `the gateways' subject prefix (default: ?prefix= of the URL, else ${DEFAULT_PREFIX})`,
    )
    .option('--json', 'print raw event envelopes as JSON lines')
    .addOption(
      new Option('--from <where>', 'start with new events, or with all retained ones')
        .choices(['new', 'all'])
        .default('new'),
    )
    .option('--count <n>', 'exit after N events', integerFlag(1))
    .option('--url <url>', 'a running gateway (default $FLEETGATE_URL; token $FLEETGATE_TOKEN)')
    .action(async (patterns: string[], opts: TailCliOptions & { url?: string }) => {
      const { parsePattern } = await import('../../bus/index.js');
      for (const p of patterns) parsePattern(p);
      const client = opts.nats === undefined ? remoteClient(opts.url) : undefined;
      if (client !== undefined) return setExit(await remoteTail(client, io, patterns, opts));
      const given = opts.nats ?? process.env.FLEETGATE_NATS_URL;
      if (given === undefined || given === '') {
        throw new FleetgateError(
          'FLEETGATE_USAGE',
          'tail reads a running gateway (--url URL, or set FLEETGATE_URL) or the JetStream bus of gateways configured with bus: nats://…; pass --nats URL (or set FLEETGATE_NATS_URL)',
        );
      }
      const what = opts.nats === undefined ? 'FLEETGATE_NATS_URL' : '--nats';
      const source = await tailSource(natsServers(given, what), opts, what);
      for (const p of patterns) parsePattern(p);
      const bus = await openTailBus(source);
      const controller = new AbortController();
      const stop = (): void => controller.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      try {
        await runTail({
          bus,
          patterns,
          io,
          json: opts.json === true,
          from: opts.from,
          signal: controller.signal,
          ...defined({ count: opts.count }),
        });
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        await bus.close();
      }
      setExit(EXIT.ok);
    });
};
