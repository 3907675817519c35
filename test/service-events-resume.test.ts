/**
 * Live-event resume on the in-process bus, through the front door: a client further behind than
 * the gateway's retained window, and a client back after the gateway restarted, get every event
 * the gateway committed meanwhile from the durable log (the outbox), in order, none twice, then
 * the live ones.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import type { ServiceProcess, SseFrame } from './support/gateway-service.js';
import { api, eventually, readEvents, startServiceProcess } from './support/gateway-service.js';

/** Topics whose events the gateway commits through the outbox. */
const TOPICS = 'skill.dispatch.>,world.state.delta';

interface Dispatch {
  id: string;
  status: string;
}

describe('live events resume from the durable log on the in-process bus', () => {
  let dir: string;
  let config: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-resume-'));
    agent = await startOpsAgent();
    config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'agents:',
        `  - { name: ops, url: ${agent.url} }`,
        // The smallest window: a few dozen calls push a client's position out of it.
        'events: { retain: 100 }',
      ].join('\n'),
    );
    gw = await startServiceProcess({ args: ['--config', config] });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const sitreps = async (base: string, n: number, label: string): Promise<void> => {
    for (let i = 0; i < n; i += 1) {
      const r = await api<Dispatch>(base, '/api/dispatch?wait=10s', {
        body: { agent: 'ops', skill: 'sitrep', text: `${label} ${i}` },
      });
      expect(r.body.status).toBe('completed');
    }
  };

  /** Frames read from `lastEventId` on until `until` holds (and a little after). */
  const resume = async (
    base: string,
    lastEventId: string,
    until: (frames: SseFrame[]) => boolean,
  ): Promise<SseFrame[]> => {
    const controller = new AbortController();
    const frames: SseFrame[] = [];
    const stream = await readEvents(
      base,
      `/api/events?topics=${TOPICS}`,
      { lastEventId, signal: controller.signal },
      frames,
    );
    expect(stream.status).toBe(200);
    await eventually(() => (until(frames) ? true : undefined), 20_000, 'the resumed events');
    await new Promise((resolve) => setTimeout(resolve, 300));
    controller.abort();
    await stream.done;
    return frames;
  };

  /** A reader of every event from now on, and the first delta it saw after one call. */
  const watchFirstDelta = async (
    label: string,
  ): Promise<{ all: SseFrame[]; last: SseFrame; stop: () => Promise<void> }> => {
    const watching = new AbortController();
    const all: SseFrame[] = [];
    const watch = await readEvents(
      gw.url,
      `/api/events?topics=${TOPICS}`,
      { signal: watching.signal },
      all,
    );
    await sitreps(gw.url, 1, label);
    const last = await eventually(
      () => all.find((f) => f.data?.topic === 'world.state.delta'),
      10_000,
      'the first delta',
    );
    return {
      all,
      last,
      stop: async () => {
        watching.abort();
        await watch.done;
      },
    };
  };

  /** Resolves once `count` has not changed for `ms` (at most 15 s). */
  const quiet = async (count: () => number, ms: number): Promise<void> => {
    const until = Date.now() + 15_000;
    let seen = count();
    let since = Date.now();
    while (Date.now() - since < ms && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (count() !== seen) {
        seen = count();
        since = Date.now();
      }
    }
  };

  const eventIds = (frames: readonly SseFrame[]): string[] =>
    frames.filter((f) => f.event === undefined).map((f) => String(f.data!.id));

  it('answers a client further behind than the window from the durable log, nothing missed or repeated', async () => {
    // A reader connected throughout sees every event: what the resumed client must see too.
    const { all, last, stop } = await watchFirstDelta('before');
    // Far more than the window holds (each call announces several events).
    await sitreps(gw.url, 40, 'away');
    await eventually(
      () =>
        all.filter((f) => f.data?.topic === 'world.state.delta').length >= 41 ? true : undefined,
      20_000,
      'every delta on the watching stream',
    );
    const expected = eventIds(all.slice(all.indexOf(last) + 1));
    expect(expected.length).toBeGreaterThan(100);

    const resumed = await resume(gw.url, last.id!, (f) => eventIds(f).length >= expected.length);
    expect(resumed.filter((f) => f.event !== undefined)).toEqual([]);
    expect(eventIds(resumed)).toEqual(expected);

    // It resumes again from an id the durable log gave, and goes live after it.
    const middle = resumed[Math.floor(resumed.length / 2)]!;
    await sitreps(gw.url, 1, 'live');
    await eventually(
      () =>
        all.filter((f) => f.data?.topic === 'world.state.delta').length >= 42 ? true : undefined,
      10_000,
      'the live delta',
    );
    const fromMiddle = eventIds(
      all.slice(all.findIndex((f) => f.data!.id === middle.data!.id) + 1),
    );
    const again = await resume(gw.url, middle.id!, (f) => eventIds(f).length >= fromMiddle.length);
    expect(eventIds(again)).toEqual(fromMiddle);
    await stop();
  });

  it('answers a client back after a restart with what the gateway committed before it stopped', async () => {
    const { all, last, stop } = await watchFirstDelta('seen');
    // The client is away; three calls, then the gateway stops and starts again.
    const seenAt = all.indexOf(last);
    await sitreps(gw.url, 3, 'missed');
    await eventually(
      () =>
        all.slice(seenAt + 1).filter((f) => f.data?.topic === 'world.state.delta').length >= 3
          ? true
          : undefined,
      10_000,
      'the missed deltas on the watching stream',
    );
    // The calls' last events (their ends, cost samples) may follow their deltas: take the stream
    // once it has been quiet for a second.
    await quiet(() => all.length, 1000);
    const missed = eventIds(all.slice(seenAt + 1));
    await stop();
    expect(await gw.stop('SIGTERM')).toBe(0);
    gw = await startServiceProcess({ args: ['--config', config] });

    const resumed = await resume(gw.url, last.id!, (f) => eventIds(f).length >= missed.length);
    // Events published outside the durable log in between cannot be known: the client is told.
    expect(resumed.filter((f) => f.event !== undefined)).toMatchObject([
      { event: 'fleetgate.gap', data: { durable: true } },
    ]);
    expect(eventIds(resumed)).toEqual(missed);
  });
});
