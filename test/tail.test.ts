/** `fleetgate tail`: line format, pattern filtering, and the real command against NATS. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { EventEnvelope, OpenTopics } from '../src/protocol/index.js';
import { createInMemoryEventBus } from '../src/bus/index.js';
import type { CliIo } from '../src/cli/index.js';
import { formatEventLine, runTail } from '../src/cli/index.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { runCli } from './support/cli.js';
import {
  NATS_URL,
  deleteNatsStream,
  natsStreamExists,
  requireNats,
  uniqueName,
} from './support/services.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const natsUp = await requireNats();

function captureIo(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (t) => void stdout.push(t),
    err: (t) => void stderr.push(t),
    color: false,
    version: '0.0.0',
  };
}

const alert: EventEnvelope = {
  id: 'abcdef0123456789',
  topic: 'ops.alert.radius',
  time: '2026-11-30T05:00:01.234Z',
  correlationId: 'call-1',
  payload: { kind: 'radius', radius: 'repo', message: 'wider than declared' },
};

describe('formatEventLine', () => {
  it('prints time, topic, short id, correlation and payload on one line', () => {
    const event = { ...alert, topic: 'cost.sample' };
    expect(formatEventLine(event, false)).toBe(
      '05:00:01.234 cost.sample repo ef0123456789 ⇠call-1 {"kind":"radius","radius":"repo","message":"wider than declared"}',
    );
  });

  it("prints an alert's message whole instead of its payload, and an unknown radius", () => {
    const message = `q/s changed ${'deploy, '.repeat(30)}board: declare the domains`;
    const payload = { kind: 'radius', radius: 'repo', message };
    expect(formatEventLine({ ...alert, payload }, false)).toBe(
      `05:00:01.234 ops.alert.radius repo ef0123456789 ⇠call-1 ${message}`,
    );
    const unknown = { ...alert, payload: { radius: 'unknown', message: 'no radius declared' } };
    expect(formatEventLine(unknown, false)).toBe(
      '05:00:01.234 ops.alert.radius unknown ef0123456789 ⇠call-1 no radius declared',
    );
  });

  it("shows a generated id's uuid tail and counter, not the counter's zero padding", () => {
    const generated = { ...alert, id: '1b4e28ba-2fa1-41d2-883f-0016d3cca427-000000000b' };
    expect(formatEventLine(generated, false)).toContain(' 16d3cca427-b ⇠call-1 ');
  });

  it('shows the severity of an alert, coloured by weight', () => {
    const critical = {
      ...alert,
      payload: { kind: 'radius', radius: 'repo', message: 'wider', severity: 'critical' },
    };
    expect(formatEventLine(critical, false)).toMatch(
      /^05:00:01\.234 ops\.alert\.radius \[critical\] repo /,
    );
    expect(formatEventLine(critical, true)).toContain('\x1b[1m\x1b[31m[critical]');
    // Only alerts carry one; another event's "severity" field is just payload.
    const other = { ...alert, topic: 'cost.sample', payload: { severity: 'critical' } };
    expect(formatEventLine(other, false)).not.toContain('[critical]');
  });

  it('colours by topic family when colour is on, and truncates long payloads', () => {
    const coloured = formatEventLine({ ...alert, topic: 'world.state.delta' }, true);
    expect(coloured).toContain('\x1b[32mworld.state.delta');
    const long = formatEventLine({ ...alert, payload: 'x'.repeat(500) }, false);
    expect(long.length).toBeLessThan(250);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('runTail', () => {
  it('prints each event matching any pattern once, in order, and stops after --count', async () => {
    const bus = createInMemoryEventBus<OpenTopics>();
    const io = captureIo();
    const controller = new AbortController();
    const done = runTail({
      bus,
      patterns: ['world.>', 'world.state.*', 'ops.alert.*'],
      io,
      json: true,
      count: 3,
      signal: controller.signal,
    });
    await vi.waitFor(() => expect(io.stderr.join('')).toContain('tailing'));
    for (const t of [
      'world.state.delta',
      'cost.sample',
      'ops.alert.x',
      'skill.dispatch.started',
      'world.a',
    ]) {
      await bus.publish(t, { t });
    }
    expect(await done).toBe(3);
    const topics = io.stdout.map((l) => (JSON.parse(l) as EventEnvelope).topic);
    expect(topics).toEqual(['world.state.delta', 'ops.alert.x', 'world.a']);
    await bus.close();
  });

  it('stops on abort', async () => {
    const bus = createInMemoryEventBus<OpenTopics>();
    const controller = new AbortController();
    const done = runTail({
      bus,
      patterns: [],
      io: captureIo(),
      json: false,
      signal: controller.signal,
    });
    controller.abort();
    expect(await done).toBe(0);
    await bus.close();
  });
});

describe.skipIf(!natsUp)('fleetgate tail --nats (the command, in a child process)', () => {
  let stream = '';
  afterEach(async () => {
    if (stream !== '') await deleteNatsStream(stream);
    stream = '';
  });

  it('prints live events from the gateway stream as JSON lines', async () => {
    const prefix = uniqueName('fgtail');
    stream = prefix.toUpperCase();
    const bus = await createJetStreamEventBus<OpenTopics>({
      servers: NATS_URL,
      stream,
      subjectPrefix: prefix,
    });
    try {
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          'src/cli/run.ts',
          'tail',
          'fleet.>',
          '--nats',
          NATS_URL,
          '--stream',
          stream,
          '--prefix',
          prefix,
          '--json',
          '--count',
          '2',
        ],
        { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      const ready = new Promise<void>((resolve, reject) => {
        child.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
          if (stderr.includes('tailing')) resolve();
        });
        child.on('exit', () => reject(new Error(`tail exited early: ${stderr}`)));
      });
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      await ready;
      await bus.publish('cost.sample', {
        agent: 'a',
        skill: 's',
        wallMs: 1,
        success: true,
        measured: 'wall-clock',
      });
      const first = await bus.publish('fleet.card.refreshed', { agent: 'quinn', digest: 'd1' });
      const second = await bus.publish('fleet.agent.stale', { agent: 'ava' });
      expect(await exited).toBe(0);
      const lines = stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as EventEnvelope);
      expect(lines.map((e) => [e.topic, e.id])).toEqual([
        ['fleet.card.refreshed', first.id],
        ['fleet.agent.stale', second.id],
      ]);
    } finally {
      await bus.close();
    }
  }, 30_000);

  it('exits 2 with a hint when no NATS URL is given', async () => {
    const run = await runCli(['tail'], { FLEETGATE_NATS_URL: '' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^FLEETGATE_USAGE: .*pass --nats URL/m);
  }, 30_000);

  it('explains a missing stream instead of creating it', async () => {
    const prefix = uniqueName('fgnostream');
    const missing = prefix.toUpperCase();
    const run = await runCli([
      'tail',
      '--nats',
      NATS_URL,
      '--stream',
      missing,
      '--prefix',
      prefix,
      '--count',
      '1',
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      new RegExp(
        `^FLEETGATE_BUS_STREAM_NOT_FOUND: No stream ${missing} on .*: no gateway has published to this NATS yet`,
        'm',
      ),
    );
    expect(run.stderr).toMatch(/^ {2}fix: Start a gateway with `bus: nats:\/\/…`/m);
    expect(await natsStreamExists(missing)).toBe(false);
  }, 30_000);
});
