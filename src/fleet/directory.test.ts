import { describe, expect, it } from 'vitest';
import { AgentDirectory } from './directory.js';
import { StaticCardSource } from './card-source.js';
import { createSemaphore } from './semaphore.js';

describe('AgentDirectory', () => {
  it('lists every invalid entry with its path and adds nothing', () => {
    const directory = new AgentDirectory();
    let error: unknown;
    try {
      directory.load([
        { name: 'ok', url: 'http://127.0.0.1:1' },
        { name: 'Bad Name', url: 'ftp://x' },
        { name: 'ok', url: 'http://127.0.0.1:2' },
        { name: 'x', url: 'http://h', extra: true },
        { name: 'y', url: 'http://h', floors: { deploy: 'galaxy' } },
      ]);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'FLEETGATE_CONFIG_INVALID' });
    const message = (error as Error).message;
    expect(message).toContain('agents[1].name');
    expect(message).toContain('agents[1].url: must be an http:// or https:// URL');
    expect(message).toContain('agents[4].floors.deploy');
    expect(message).toContain('agents[2].name: ok is configured twice');
    expect(message).toContain('agents[3]');
    expect(directory.size).toBe(0);
  });

  it('resolves auth from named secrets and reports a missing one', () => {
    const directory = new AgentDirectory({ secrets: (n) => ({ TOKEN: 't0k', KEY: 'k' })[n] });
    const entry = directory.add({
      name: 'a',
      url: 'http://127.0.0.1:1/',
      auth: { bearerEnv: 'TOKEN', headersEnv: { 'X-Api-Key': 'KEY' } },
    });
    expect(entry.headers).toEqual({ authorization: 'Bearer t0k', 'x-api-key': 'k' });
    expect(entry.url).toBe('http://127.0.0.1:1');
    expect(() =>
      directory.add({ name: 'b', url: 'http://h', auth: { bearerEnv: 'NOPE' } }),
    ).toThrow('agent.auth.bearerEnv: NOPE is not set');
  });

  it('tells listeners about adds, updates and removals', () => {
    const directory = new AgentDirectory();
    const seen: string[] = [];
    directory.onChange((c) => seen.push(`${c.type}:${c.agent.name}`));
    directory.add({ name: 'a', url: 'http://h' });
    directory.update({ name: 'a', url: 'http://h2' });
    expect(directory.remove('a')).toBe(true);
    expect(directory.remove('a')).toBe(false);
    expect(() => directory.update({ name: 'zz', url: 'http://h' })).toThrow(/No agent named zz/);
    expect(seen).toEqual(['added:a', 'updated:a', 'removed:a']);
  });
});

describe('StaticCardSource', () => {
  it('serves held cards with a digest etag and answers not-modified for an unchanged card', async () => {
    const source = new StaticCardSource({ a: { name: 'a' } });
    const first = await source.fetch({ name: 'a', url: 'x' });
    expect(first.status).toBe('fetched');
    if (first.status !== 'fetched') return;
    expect(await source.fetch({ name: 'a', url: 'x' }, first.validators)).toMatchObject({
      status: 'not-modified',
    });
    source.set('a', { name: 'a', version: '2' });
    expect(await source.fetch({ name: 'a', url: 'x' }, first.validators)).toMatchObject({
      status: 'fetched',
    });
    source.delete('a');
    await expect(source.fetch({ name: 'a', url: 'x' })).rejects.toMatchObject({
      code: 'FLEETGATE_CARD_FETCH_FAILED',
    });
  });
});

describe('createSemaphore', () => {
  it('never runs more than the limit at once, even when tasks finish and start together', async () => {
    const run = createSemaphore(3);
    let active = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        run(async () => {
          active += 1;
          peak = Math.max(peak, active);
          await new Promise((r) => setImmediate(r));
          if (i % 7 === 0) await Promise.resolve();
          active -= 1;
        }),
      ),
    );
    expect(peak).toBe(3);
  });
});
