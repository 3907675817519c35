import { readFile } from 'node:fs/promises';
import type { McpTool } from '../../agent/index.js';
import { checkRadiiAgainstMcpTools, parseMcpTools } from '../../agent/index.js';
import { HttpCardSource } from '../../fleet/index.js';
import type { Declarations, Diagnostic } from '../../protocol/index.js';
import { FleetgateError, parseCardJson, readDeclarations } from '../../protocol/index.js';
import { EXIT } from '../errors.js';
import { millisecondsFlag, readTarget } from '../options.js';
import { createStyle, renderTable } from '../style.js';
import type { RegisterCommand } from './types.js';

/** One skill row of the lint report. */
export interface LintSkillRow {
  id: string;
  inCard: boolean;
  radius?: string;
  hitlMode?: string;
  vetoTtlMs?: number;
  domains?: string[];
}

/** The machine-readable report of `fleetgate lint-card --json`. */
export interface LintReport {
  source: string;
  ok: boolean;
  extensions: Declarations['declared'];
  skills: LintSkillRow[];
  diagnostics: Diagnostic[];
  summary: { errors: number; warnings: number };
}

/**
 * Builds the lint report of a parsed card; with `mcpTools`, also warns where a declared radius is
 * narrower than the tools' MCP annotations imply (tool name = skill id).
 */
export function lintCard(
  card: unknown,
  source: string,
  options: { mcpTools?: readonly McpTool[] } = {},
): LintReport {
  const d = readDeclarations(card);
  if (options.mcpTools !== undefined) {
    d.diagnostics.push(...checkRadiiAgainstMcpTools(card, options.mcpTools));
  }
  const ids = [
    ...d.skills,
    ...[...Object.keys(d.blast), ...Object.keys(d.hitlMode), ...Object.keys(d.effectDomain)].filter(
      (id) => !d.skills.includes(id),
    ),
  ];
  const skills = [...new Set(ids)].map((id): LintSkillRow => {
    const row: LintSkillRow = { id, inCard: d.skills.includes(id) };
    const blast = d.blast[id];
    const hitl = d.hitlMode[id];
    const domains = d.effectDomain[id];
    if (blast) row.radius = blast.radius;
    if (hitl) row.hitlMode = hitl.mode;
    if (hitl?.vetoTtlMs !== undefined) row.vetoTtlMs = hitl.vetoTtlMs;
    if (domains) row.domains = domains.domains;
    return row;
  });
  const errors = d.diagnostics.filter((x) => x.severity === 'error').length;
  const warnings = d.diagnostics.length - errors;
  return {
    source,
    ok: errors === 0,
    extensions: d.declared,
    skills,
    diagnostics: d.diagnostics,
    summary: { errors, warnings },
  };
}

function renderReport(report: LintReport, color: boolean): string {
  const s = createStyle(color);
  const out: string[] = [s.bold(`Agent card ${report.source}`), ''];
  if (report.extensions.length === 0) out.push('Declared extensions: none', '');
  else {
    out.push('Declared extensions:');
    for (const e of report.extensions) {
      const tags = [e.required ? 'required' : '', e.known ? '' : 'not implemented by Fleetgate']
        .filter(Boolean)
        .join(', ');
      const alias = e.uri === e.canonicalUri ? '' : ` (as ${e.uri})`;
      out.push(`  ${e.canonicalUri}${alias}${tags ? s.dim(` [${tags}]`) : ''}`);
    }
    out.push('');
  }
  if (report.skills.length > 0) {
    const rows = report.skills.map((k) => [
      k.inCard ? k.id : `${k.id} ${s.dim('(not in card.skills)')}`,
      k.radius === undefined ? s.dim('-') : s.radius(k.radius as Parameters<typeof s.radius>[0]),
      k.hitlMode === undefined
        ? s.dim('-')
        : k.vetoTtlMs === undefined
          ? k.hitlMode
          : `${k.hitlMode} (${k.vetoTtlMs} ms)`,
      k.domains === undefined ? s.dim('-') : k.domains.join(', '),
    ]);
    out.push(renderTable(['skill', 'radius', 'hitl mode', 'domains'], rows));
  }
  for (const d of report.diagnostics) {
    const tag = d.severity === 'error' ? s.red('error  ') : s.yellow('warning');
    out.push(`${tag} ${d.path}: ${d.message}${d.code === undefined ? '' : s.dim(` (${d.code})`)}`);
  }
  const { errors, warnings } = report.summary;
  const summary = `${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`;
  out.push(errors > 0 ? s.red(summary) : warnings > 0 ? s.yellow(summary) : s.green(summary));
  return `${out.join('\n')}\n`;
}

/** Reads the card text of a lint target: a file, or a card / agent URL. */
async function readCard(
  input: string,
  timeoutMs: number,
): Promise<{ text: string; source: string }> {
  const target = readTarget(input, {
    what: 'lint-card CARD',
    schemes: ['http', 'https'],
    defaultScheme: 'http',
    files: true,
  });
  if (target.kind === 'url') {
    const fetched = await new HttpCardSource({ timeoutMs }).fetch({
      name: target.url,
      url: target.url,
    });
    if (fetched.status !== 'fetched') {
      throw new FleetgateError(
        'FLEETGATE_CARD_FETCH_FAILED',
        `${target.url}: answered 304 Not Modified to a request without validators`,
      );
    }
    return { text: fetched.text, source: fetched.url };
  }
  return { text: await readText(target.path, 'the card file'), source: target.path };
}

/** A file's text; a file that cannot be read is `FLEETGATE_FILE_ACCESS_FAILED` naming `what`. */
async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^[A-Z]+: /u, '') : '';
    throw new FleetgateError(
      'FLEETGATE_FILE_ACCESS_FAILED',
      `Cannot read ${what} ${path} (${reason})`,
      { cause: error, details: { path } },
    );
  }
}

type LintOptions = { json?: boolean; strict?: boolean; timeout: number; mcp?: string };

/** Reads an MCP tools/list JSON file (`--mcp`). */
async function readMcpTools(path: string): Promise<McpTool[]> {
  const text = await readText(path, 'the MCP tools file');
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch (error) {
    throw new FleetgateError(
      'FLEETGATE_MCP_TOOLS_INVALID',
      `${path}: not valid JSON (${(error as Error).message})`,
      { cause: error, details: { source: path } },
    );
  }
  return parseMcpTools(json, path);
}

/** `fleetgate lint-card FILE|URL [--json] [--strict] [--timeout MS] [--mcp TOOLS.json]` */
export const registerLintCard: RegisterCommand = (program, io, setExit) => {
  program
    .command('lint-card')
    .description(
      'check the extension declarations of an agent card (a file, or an agent URL); exit 1 on errors, or on warnings with --strict',
    )
    .argument('<card>', 'a card file, a card URL, or an agent base URL (host:port means http://)')
    .option('--json', 'print a machine-readable report')
    .option('--strict', 'exit 1 on warnings too')
    .option(
      '--timeout <ms>',
      'fetch timeout: milliseconds, or a duration like 10s',
      millisecondsFlag,
      5000,
    )
    .option('--mcp <tools.json>', 'warn where a radius is narrower than MCP tool annotations imply')
    .action(async (target: string, opts: LintOptions) => {
      const { text, source } = await readCard(target, opts.timeout);
      const mcpTools = opts.mcp === undefined ? undefined : await readMcpTools(opts.mcp);
      const report = lintCard(parseCardJson(text, source), source, mcpTools && { mcpTools });
      io.out(opts.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report, io.color));
      const { errors, warnings } = report.summary;
      setExit(errors > 0 || (warnings > 0 && opts.strict === true) ? EXIT.problems : EXIT.ok);
    });
};
