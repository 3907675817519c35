import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../', import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|tsx|js)$/.test(name) && !name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Spellings that only src/protocol may define. */
const CONTRACT_SPELLINGS: [string, RegExp][] = [
  ['an extension URI', /proto-labs\.ai\/a2a\/ext/],
  ['an extension MIME type', /vnd\.protolabs\./],
  ['the radius list', /['"]self['"]\s*,\s*['"]project['"]/],
  ['the op list', /['"]set['"]\s*,\s*['"]inc['"]\s*,\s*['"]push['"]/],
  ['the hitl mode list', /['"]autonomous['"]\s*,\s*['"]notification['"]/],
  [
    'a stamp key',
    /['"]x-(effect-domain-skill|blast-radius|hitl-mode|hitl-veto-ttl-ms|cost-skill)['"]/,
  ],
];

describe('src/protocol is the single source of the wire contracts', () => {
  it('no other module under src/ spells a URI, MIME type, stamp key, radius, mode or op list', () => {
    const offenders: string[] = [];
    for (const file of sourceFiles(join(ROOT, 'src'))) {
      const rel = relative(ROOT, file);
      if (rel.startsWith('src/protocol/')) continue;
      const text = readFileSync(file, 'utf8');
      for (const [what, pattern] of CONTRACT_SPELLINGS) {
        if (pattern.test(text)) offenders.push(`${rel} defines ${what}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
