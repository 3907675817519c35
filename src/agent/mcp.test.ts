import { describe, expect, it } from 'vitest';
import { isFleetgateError, readDeclarations } from '../protocol/index.js';
import type { McpToolAnnotations } from './mcp.js';
import {
  checkRadiiAgainstMcpTools,
  declareBlastFromMcpTools,
  deriveRadiusFromMcpAnnotations,
  parseMcpTools,
  radiusFromMcpAnnotations,
} from './mcp.js';

describe('radiusFromMcpAnnotations', () => {
  // [annotations, radius, why]
  const table: [McpToolAnnotations | undefined, string, string][] = [
    [undefined, 'public', 'no annotations: the pessimistic MCP defaults'],
    [{}, 'public', 'empty annotations: the defaults'],
    [{ title: 'Search' }, 'public', 'a title says nothing about effects'],
    [{ readOnlyHint: true }, 'self', 'read-only'],
    [{ readOnlyHint: true, openWorldHint: true }, 'self', 'read-only, even open world'],
    [
      { readOnlyHint: true, destructiveHint: true },
      'self',
      'destructive means nothing when read-only',
    ],
    [{ readOnlyHint: false }, 'public', 'mutating, open world by default'],
    [{ readOnlyHint: false, openWorldHint: true }, 'public', 'open world mutating'],
    [{ destructiveHint: false }, 'public', 'not destructive, but open world by default'],
    [{ openWorldHint: false }, 'repo', 'closed world, destructive by default'],
    [{ openWorldHint: false, destructiveHint: true }, 'repo', 'closed world destructive'],
    [{ openWorldHint: false, destructiveHint: false }, 'project', 'closed world, not destructive'],
    [
      { readOnlyHint: false, openWorldHint: false, destructiveHint: false, idempotentHint: true },
      'project',
      'idempotence does not change the reach',
    ],
    [{ openWorldHint: false, idempotentHint: false }, 'repo', 'not idempotent, still repo'],
  ];
  it.each(table)('%j → %s (%s)', (annotations, radius) => {
    expect(radiusFromMcpAnnotations(annotations)).toBe(radius);
  });

  it('treats a hint that is not a boolean as absent (pessimistic)', () => {
    expect(radiusFromMcpAnnotations({ readOnlyHint: 'yes' })).toBe('public');
    expect(radiusFromMcpAnnotations({ openWorldHint: false, destructiveHint: 0 })).toBe('repo');
    expect(radiusFromMcpAnnotations(null)).toBe('public');
  });

  it('never derives fleet', () => {
    const hints = [undefined, true, false];
    for (const readOnlyHint of hints)
      for (const destructiveHint of hints)
        for (const openWorldHint of hints)
          for (const idempotentHint of hints) {
            const a: Record<string, boolean> = {};
            if (readOnlyHint !== undefined) a.readOnlyHint = readOnlyHint;
            if (destructiveHint !== undefined) a.destructiveHint = destructiveHint;
            if (openWorldHint !== undefined) a.openWorldHint = openWorldHint;
            if (idempotentHint !== undefined) a.idempotentHint = idempotentHint;
            expect(radiusFromMcpAnnotations(a)).not.toBe('fleet');
          }
  });

  it('says why', () => {
    expect(deriveRadiusFromMcpAnnotations(undefined).reason).toMatch(/no annotations/);
    expect(deriveRadiusFromMcpAnnotations({ openWorldHint: false }).reason).toMatch(
      /destructiveHint not given/,
    );
  });
});

const CARD = {
  name: 'tools',
  skills: [{ id: 'search' }, { id: 'label_issue' }, { id: 'delete_branch' }, { id: 'deploy' }],
} as const;

const TOOLS = {
  tools: [
    { name: 'search', annotations: { readOnlyHint: true, openWorldHint: true } },
    { name: 'label_issue', annotations: { openWorldHint: false, destructiveHint: false } },
    { name: 'delete_branch', annotations: { openWorldHint: false } },
    { name: 'deploy' },
  ],
};

describe('declareBlastFromMcpTools', () => {
  it('declares the derived radius per skill, with a note saying it was derived', () => {
    const card = declareBlastFromMcpTools(CARD, TOOLS);
    const d = readDeclarations(card);
    expect(d.diagnostics).toEqual([]);
    expect(Object.fromEntries(Object.entries(d.blast).map(([k, v]) => [k, v.radius]))).toEqual({
      search: 'self',
      label_issue: 'project',
      delete_branch: 'repo',
      deploy: 'public',
    });
    expect(d.blast.deploy?.note).toMatch(
      /^Derived from MCP tool annotations \(deploy: no annotations/,
    );
  });

  it('lets an override declare fleet and says what the annotations implied', () => {
    const card = declareBlastFromMcpTools(CARD, TOOLS, {
      overrides: { delete_branch: 'fleet', search: { radius: 'project', note: 'writes a cache' } },
    });
    const d = readDeclarations(card);
    expect(d.blast.delete_branch).toEqual({
      radius: 'fleet',
      note: expect.stringMatching(/^Set by override; the MCP tool annotations imply repo/),
    });
    expect(d.blast.search).toEqual({ radius: 'project', note: 'writes a cache' });
  });

  it('takes the widest radius of the tools one skill wraps', () => {
    const card = declareBlastFromMcpTools(
      { skills: [{ id: 'issues' }] },
      [
        { name: 'list_issues', annotations: { readOnlyHint: true } },
        { name: 'close_issue', annotations: { openWorldHint: false, destructiveHint: false } },
      ],
      { skillOf: () => 'issues' },
    );
    const blast = readDeclarations(card).blast.issues!;
    expect(blast.radius).toBe('project');
    expect(blast.note).toContain('list_issues: read-only');
    expect(blast.note).toContain('close_issue: mutating, closed world, not destructive');
  });

  it('refuses a tool whose skill is not on the card, and a malformed tool list', () => {
    expect(() => declareBlastFromMcpTools(CARD, [{ name: 'unknown_tool' }])).toThrow(
      expect.objectContaining({ code: 'FLEETGATE_DECLARATION_INVALID' }),
    );
    const wrong = (): unknown =>
      declareBlastFromMcpTools(CARD, { tools: [{ title: 'x' }] } as never);
    expect(wrong).toThrow(/tools\[0\]\.name/);
    try {
      parseMcpTools({ tools: [{ name: 'a', annotations: [] }] }, 'tools.json');
      expect.unreachable();
    } catch (error) {
      expect(isFleetgateError(error, 'FLEETGATE_MCP_TOOLS_INVALID')).toBe(true);
      expect((error as Error).message).toBe('tools.json[0].annotations: must be an object');
    }
  });
});

describe('checkRadiiAgainstMcpTools', () => {
  it('warns where a declared radius is narrower than the annotations imply', () => {
    const card = declareBlastFromMcpTools(CARD, TOOLS, {
      overrides: { deploy: 'repo', delete_branch: 'fleet' },
    });
    const tools = parseMcpTools(TOOLS);
    expect(checkRadiiAgainstMcpTools(card, tools)).toEqual([
      {
        path: 'capabilities.extensions[0].params.skills.deploy.radius',
        severity: 'warning',
        message: expect.stringMatching(/declared radius repo is narrower than .* public/),
      },
    ]);
  });

  it('warns for a skill without a radius and a tool that names no skill', () => {
    const diagnostics = checkRadiiAgainstMcpTools(CARD, [
      { name: 'search', annotations: { readOnlyHint: true } },
      { name: 'elsewhere' },
    ]);
    expect(diagnostics).toEqual([
      expect.objectContaining({
        path: 'skills[0].id',
        message: expect.stringMatching(/imply self/),
      }),
      expect.objectContaining({ path: 'skills', message: expect.stringMatching(/"elsewhere"/) }),
    ]);
  });
});
