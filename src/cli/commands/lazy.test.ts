import { describe, expect, it } from 'vitest';
import type { CliIo } from '../io.js';
import { createProgram } from '../program.js';
import { buildProgram } from './index.js';
import { COMMAND_LOADERS } from './lazy.js';

const silent: CliIo = { out: () => undefined, err: () => undefined, color: false, version: '' };

describe('the lazily loaded commands', () => {
  it('name every command of the program, and each loader registers the command it is named for', async () => {
    const names = buildProgram(silent, () => undefined)
      .commands.map((c) => c.name())
      .sort();
    expect(Object.keys(COMMAND_LOADERS).sort()).toEqual(names);
    for (const name of names) {
      const register = await COMMAND_LOADERS[name]!();
      const program = createProgram(silent, () => undefined, [register]);
      expect(program.commands.map((c) => c.name())).toContain(name);
    }
  });
});
