/**
 * Blast radii derived from MCP tool annotations. The annotations say what kind of effect a tool
 * has (read-only, destructive, open world); the radius says how far it reaches. The mapping is
 * pessimistic where the annotations are silent, as the MCP specification's defaults are.
 */
import type { BlastDeclaration, BlastRadius, Diagnostic } from '../protocol/index.js';
import {
  BLAST_V1_URI,
  FleetgateError,
  LIMITS,
  compareRadius,
  isBlastRadius,
  jsonPath,
  maxRadius,
  readDeclarations,
} from '../protocol/index.js';
import type { BlastInput, CardLike, Declared, SkillIdOf } from './card.js';
import { declareBlast } from './card.js';

/**
 * The behaviour hints of an MCP tool (`Tool.annotations`). Every hint is optional; when absent the
 * specification's default applies: not read-only, destructive, not idempotent, open world.
 */
export interface McpToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** An MCP tool as `tools/list` returns it (only the fields read here). */
export interface McpTool {
  name: string;
  description?: string;
  annotations?: McpToolAnnotations;
}

/** A radius derived from annotations, with the reason in words. */
export interface McpRadiusDerivation {
  radius: BlastRadius;
  reason: string;
}

function hint(annotations: unknown, key: keyof McpToolAnnotations): boolean | undefined {
  if (typeof annotations !== 'object' || annotations === null) return undefined;
  const value = (annotations as Record<string, unknown>)[key];
  return typeof value === 'boolean' ? value : undefined;
}

/**
 * The radius an MCP tool's annotations imply, with the reason:
 * - `readOnlyHint: true` → `self` (it changes nothing);
 * - mutating, `openWorldHint: false`, `destructiveHint: false` → `project`;
 * - mutating, `openWorldHint: false`, destructive (or not said) → `repo`;
 * - mutating and open world (or not said) → `public`;
 * - no annotations at all → `public` (the specification's pessimistic defaults).
 *
 * `fleet` is never derived: only an override declares it. A hint that is not a boolean counts as
 * absent. `idempotentHint` does not change the reach.
 */
export function deriveRadiusFromMcpAnnotations(annotations?: unknown): McpRadiusDerivation {
  const readOnly = hint(annotations, 'readOnlyHint');
  const destructive = hint(annotations, 'destructiveHint');
  const openWorld = hint(annotations, 'openWorldHint');
  if (readOnly === true) return { radius: 'self', reason: 'read-only (readOnlyHint)' };
  const said = [readOnly, destructive, openWorld].some((h) => h !== undefined);
  if (openWorld !== false) {
    return {
      radius: 'public',
      reason: said
        ? `mutating and open world${openWorld === undefined ? ' (openWorldHint not given)' : ''}`
        : 'no annotations: the MCP defaults (mutating, destructive, open world)',
    };
  }
  if (destructive === false) {
    return { radius: 'project', reason: 'mutating, closed world, not destructive' };
  }
  return {
    radius: 'repo',
    reason: `mutating, closed world, destructive${destructive === undefined ? ' (destructiveHint not given)' : ''}`,
  };
}

/**
 * The radius an MCP tool's annotations imply; see {@link deriveRadiusFromMcpAnnotations}.
 *
 * @example
 * ```ts
 * radiusFromMcpAnnotations({ readOnlyHint: true })                          // 'self'
 * radiusFromMcpAnnotations({ openWorldHint: false, destructiveHint: false }) // 'project'
 * radiusFromMcpAnnotations(undefined)                                       // 'public'
 * ```
 */
export function radiusFromMcpAnnotations(annotations?: unknown): BlastRadius {
  return deriveRadiusFromMcpAnnotations(annotations).radius;
}

/**
 * Reads a list of MCP tools: a `tools/list` result (`{ tools: [...] }`) or a bare list.
 *
 * @param source where the value came from, named in errors.
 * @throws FleetgateError `FLEETGATE_MCP_TOOLS_INVALID` naming the tool and field.
 */
export function parseMcpTools(value: unknown, source = 'tools'): McpTool[] {
  const list: unknown =
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>).tools
      : value;
  if (!Array.isArray(list)) {
    throw new FleetgateError(
      'FLEETGATE_MCP_TOOLS_INVALID',
      `${source}: expected a tools/list result ({ "tools": [...] }) or a list of tools`,
      { details: { source } },
    );
  }
  return list.map((tool: unknown, index): McpTool => {
    const where = `${source}[${index}]`;
    if (typeof tool !== 'object' || tool === null || Array.isArray(tool)) {
      throw new FleetgateError(
        'FLEETGATE_MCP_TOOLS_INVALID',
        `${where}: a tool must be an object`,
        {
          details: { source, index },
        },
      );
    }
    const { name, description, annotations } = tool as Record<string, unknown>;
    if (typeof name !== 'string' || name === '') {
      throw new FleetgateError(
        'FLEETGATE_MCP_TOOLS_INVALID',
        `${where}.name: must be a non-empty string`,
        { details: { source, index, field: 'name' } },
      );
    }
    if (
      annotations !== undefined &&
      (typeof annotations !== 'object' || annotations === null || Array.isArray(annotations))
    ) {
      throw new FleetgateError(
        'FLEETGATE_MCP_TOOLS_INVALID',
        `${where}.annotations: must be an object`,
        { details: { source, index, field: 'annotations' } },
      );
    }
    const out: McpTool = { name };
    if (typeof description === 'string') out.description = description;
    if (annotations !== undefined) out.annotations = annotations;
    return out;
  });
}

/** Options of {@link declareBlastFromMcpTools}. */
export interface McpBlastOptions<C extends CardLike> {
  /**
   * Radii that replace what the annotations imply, per skill (the only way to declare `fleet`).
   * The note says it was set by hand and what the annotations implied.
   */
  overrides?: Partial<Readonly<Record<SkillIdOf<C>, BlastInput>>>;
  /**
   * The skill a tool belongs to (default: the skill named like the tool); `undefined` leaves the
   * tool out. A skill that wraps several tools gets the widest of their radii.
   */
  skillOf?: (tool: McpTool) => string | undefined;
}

function cut(note: string): string {
  return note.length <= LIMITS.noteLength ? note : `${note.slice(0, LIMITS.noteLength - 1)}…`;
}

/** The radius each skill's tools imply, with the tools and reasons behind it. */
function impliedBySkill(
  tools: readonly McpTool[],
  skillOf: (tool: McpTool) => string | undefined,
): Map<string, { radius: BlastRadius; because: string[] }> {
  const bySkill = new Map<string, { radius: BlastRadius; because: string[] }>();
  for (const tool of tools) {
    const skill = skillOf(tool);
    if (skill === undefined) continue;
    const derived = deriveRadiusFromMcpAnnotations(tool.annotations);
    const current = bySkill.get(skill);
    const because = `${tool.name}: ${derived.reason}`;
    if (current === undefined) bySkill.set(skill, { radius: derived.radius, because: [because] });
    else {
      current.radius = maxRadius(current.radius, derived.radius)!;
      current.because.push(because);
    }
  }
  return bySkill;
}

/**
 * Declares blast-v1 for the skills of an agent that wraps MCP tools, each radius derived from the
 * tools' annotations ({@link deriveRadiusFromMcpAnnotations}); the note says it was derived and
 * from what. A copy of the card is returned.
 *
 * @throws FleetgateError `FLEETGATE_MCP_TOOLS_INVALID` for a malformed tool list, and
 * `FLEETGATE_DECLARATION_INVALID` for a skill missing from `card.skills` (map tools with
 * `skillOf`).
 *
 * @example
 * ```ts
 * const { tools } = await mcp.listTools();
 * card = declareBlastFromMcpTools(card, tools, { overrides: { migrate_all: 'fleet' } });
 * ```
 */
export function declareBlastFromMcpTools<C extends CardLike>(
  card: C,
  tools: readonly McpTool[] | { tools: readonly McpTool[] },
  options: McpBlastOptions<C> = {},
): Declared<C> {
  const list = parseMcpTools(tools);
  const implied = impliedBySkill(list, options.skillOf ?? ((tool) => tool.name));
  const overrides = (options.overrides ?? {}) as Readonly<Record<string, BlastInput | undefined>>;
  const skills: Record<string, BlastDeclaration> = {};
  for (const [skill, { radius, because }] of implied) {
    skills[skill] = {
      radius,
      note: cut(`Derived from MCP tool annotations (${because.join('; ')})`),
    };
  }
  for (const [skill, input] of Object.entries(overrides)) {
    if (input === undefined) continue;
    const declaration = typeof input === 'string' ? { radius: input } : input;
    const derived = implied.get(skill);
    const note =
      declaration.note ??
      (derived === undefined
        ? 'Set by override'
        : `Set by override; the MCP tool annotations imply ${derived.radius} (${derived.because.join('; ')})`);
    skills[skill] = { radius: declaration.radius, note: cut(note) };
  }
  return declareBlast(card, skills as Partial<Record<SkillIdOf<C>, BlastInput>>);
}

/**
 * Compares a card's blast-v1 radii with what the MCP tools' annotations imply, tool name = skill
 * id: a warning for each declared radius narrower than implied, each skill with tools but no
 * radius, and each tool that names no skill of the card. Used by `fleetgate lint-card --mcp`.
 */
export function checkRadiiAgainstMcpTools(card: unknown, tools: readonly McpTool[]): Diagnostic[] {
  const declarations = readDeclarations(card);
  const out: Diagnostic[] = [];
  const blastPath = declarations.declared.find((d) => d.canonicalUri === BLAST_V1_URI)?.path;
  const skillIndex = new Map(declarations.skills.map((id, i) => [id, i]));
  const implied = impliedBySkill(tools, (tool) => tool.name);
  for (const [skill, { radius, because }] of implied) {
    const declared = declarations.blast[skill];
    if (!skillIndex.has(skill) && declared === undefined) {
      out.push({
        path: 'skills',
        severity: 'warning',
        message: `MCP tool ${JSON.stringify(skill)} names no skill in card.skills; not checked`,
      });
      continue;
    }
    if (declared === undefined || !isBlastRadius(declared.radius)) {
      out.push({
        path: jsonPath(jsonPath('skills', skillIndex.get(skill) ?? 0), 'id'),
        severity: 'warning',
        message: `${skill} declares no blast-v1 radius; its MCP tool annotations imply ${radius} (${because.join('; ')})`,
      });
      continue;
    }
    if (compareRadius(declared.radius, radius) < 0) {
      const where = jsonPath(
        jsonPath(jsonPath(blastPath ?? 'capabilities', 'params'), 'skills'),
        skill,
      );
      out.push({
        path: jsonPath(where, 'radius'),
        severity: 'warning',
        message: `declared radius ${declared.radius} is narrower than the MCP tool annotations imply: ${radius} (${because.join('; ')})`,
      });
    }
  }
  return out;
}
