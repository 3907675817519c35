import { describe, expect, it } from 'vitest';
import { deterministicEventId } from './event-id.js';

describe('deterministicEventId', () => {
  it('is stable, 32 hex characters, and separates parts unambiguously', () => {
    const id = deterministicEventId('world.state.delta', 'quinn', 'task-1');
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(deterministicEventId('world.state.delta', 'quinn', 'task-1')).toBe(id);
    expect(deterministicEventId('world.state.delta', 'quinn', 'task-2')).not.toBe(id);
    expect(deterministicEventId('ab', 'c')).not.toBe(deterministicEventId('a', 'bc'));
    expect(deterministicEventId(1, 2)).toBe(deterministicEventId('1', '2'));
    // Pinned: ids must never change across releases, or re-sends after an upgrade would double.
    // sha256('1:a;') → `printf '1:a;' | sha256sum`
    expect(deterministicEventId('a')).toBe('836501e69990183d068ed21dd9ddc674');
  });

  it('needs at least one part', () => {
    expect(() => deterministicEventId()).toThrow(TypeError);
  });
});
