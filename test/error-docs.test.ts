import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errorFixes } from '../src/cli/index.js';
import { ERROR_CODES } from '../src/protocol/index.js';

describe('docs/errors.md', () => {
  it('documents every error code, and no code that does not exist', () => {
    const doc = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
    const documented = new Set([...doc.matchAll(/^\| `(FLEETGATE_[A-Z_]+)`/gm)].map((m) => m[1]));
    expect(Object.keys(ERROR_CODES).filter((code) => !documented.has(code))).toEqual([]);
    expect([...documented].filter((code) => !(code! in ERROR_CODES))).toEqual([]);
  });

  it('gives every code the fix the command prints', () => {
    const fixes = errorFixes();
    const missing = Object.keys(ERROR_CODES).filter((code) => (fixes.get(code) ?? '') === '');
    expect(missing).toEqual([]);
    expect(fixes.get('FLEETGATE_COST_INVALID')).toContain('docs/extensions.md');
  });
});
