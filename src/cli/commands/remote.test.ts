import { describe, expect, it } from 'vitest';
import { createStyle } from '../style.js';
import type { DispatchRow } from './remote.js';
import { dispatchLine } from './remote.js';

function row(id: string): DispatchRow {
  return {
    id,
    agent: 'ci',
    skill: 'sitrep',
    status: 'completed',
    taskId: null,
    correlationId: 'c',
    result: null,
  };
}

describe('dispatchLine', () => {
  it("names a call by its id's tail: ids made in the same minute share their head", () => {
    const s = createStyle(false);
    const first = dispatchLine(row('01a24b3d-f4e4-75d7-a3a4-7b45e2eecfab'), s);
    const second = dispatchLine(row('01a24b3d-f502-7f10-9c2e-0d81a95c3371'), s);
    expect(first.startsWith('e2eecfab ci/sitrep')).toBe(true);
    expect(second.startsWith('a95c3371 ci/sitrep')).toBe(true);
  });
});
