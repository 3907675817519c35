import { describe, expect, it } from 'vitest';
import { EventCollector } from './collecting-bus.js';
import { createInMemoryEventBus } from './in-memory-bus.js';
import type { OpenTopics } from '../protocol/index.js';

describe('EventCollector', () => {
  it('keeps events published inside a scope, publishes the others, and never mixes concurrent scopes', async () => {
    const bus = createInMemoryEventBus<OpenTopics>();
    const seen: string[] = [];
    await bus.subscribe('>', (e) => void seen.push(e.topic), { name: 'all' });
    const collector = new EventCollector(bus);
    const scope = (name: string) =>
      collector.collect(async () => {
        await collector.publish(`${name}.one`, {});
        await new Promise((r) => setTimeout(r, name === 'a' ? 10 : 1));
        await collector.publish(`${name}.two`, {}, { id: `${name}-2`, correlationId: 'c' });
        return name;
      });
    const [a, b] = await Promise.all([scope('a'), scope('b'), collector.publish('outside.x', {})]);
    expect(a.value).toBe('a');
    expect(a.events.map((e) => e.topic)).toEqual(['a.one', 'a.two']);
    expect(b.events.map((e) => e.topic)).toEqual(['b.one', 'b.two']);
    expect(b.events[1]).toEqual({ topic: 'b.two', payload: {}, id: 'b-2', correlationId: 'c' });
    await bus.idle();
    expect(seen).toEqual(['outside.x']);
    await bus.close();
  });

  it('gives events kept without an id ids of their own, sorting in the order they were kept', async () => {
    const collector = new EventCollector(createInMemoryEventBus<OpenTopics>());
    const { events } = await collector.collect(async () => {
      for (let i = 0; i < 2_000; i += 1) await collector.publish('cost.sample', { i });
    });
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    // The outbox keys its rows by these ids: in order, they go to one end of its index.
    expect([...ids].sort()).toEqual(ids);
  });
});
