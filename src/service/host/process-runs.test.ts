import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processRuns } from './index.js';

describe('processRuns', () => {
  it('is true for this process and false for one that has exited', () => {
    expect(processRuns(process.pid)).toBe(true);
    const child = spawnSync(process.execPath, ['-e', '0']);
    expect(child.status).toBe(0);
    expect(processRuns(child.pid)).toBe(false);
  });

  it('is true for a process of another user (pid 1 answers EPERM or runs as this user)', () => {
    expect(processRuns(1)).toBe(true);
  });
});
