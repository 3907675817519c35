import type { AgentCheckCall, AgentCheckReport } from '../../agent/index.js';
import { checkAgent } from '../../agent/index.js';
import { FleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import { EXIT } from '../errors.js';
import { millisecondsFlag } from '../options.js';
import type { Style } from '../style.js';
import { createStyle, renderTable } from '../style.js';
import type { RegisterCommand } from './types.js';

interface CheckAgentCliOptions {
  skill: string;
  input?: string;
  json?: boolean;
  strict?: boolean;
  timeout: number;
  stream?: boolean;
  header?: string[];
}

function renderCall(call: AgentCheckCall, s: Style): string[] {
  const out = [
    s.bold(
      `${call.mode} call (${call.binding}, A2A ${call.protocolVersion}) → ${call.state}${call.taskId === undefined ? '' : ` task ${call.taskId}`}`,
    ),
  ];
  if (call.statusText !== undefined) {
    out.push(`  status text:         ${JSON.stringify(call.statusText)}`);
  }
  const stamps = Object.entries(call.stamps).map(([k, v]) => `${k}=${v}`);
  out.push(`  stamps sent:         ${stamps.join(', ') || s.dim('none')}`);
  out.push(`  extensions asked:    ${call.requestedExtensions.join(', ') || s.dim('none')}`);
  out.push(
    `  extensions echoed:   ${call.echoedExtensions === null ? s.dim('no header') : call.echoedExtensions.join(', ') || s.dim('none')}`,
  );
  if (call.events !== undefined) out.push(`  stream events:       ${call.events.join(' → ')}`);
  if (call.deltas.length === 0) out.push(`  deltas:              ${s.dim('none')}`);
  else {
    const rows = call.deltas.map((d) => [d.domain, d.path, d.op, JSON.stringify(d.value) ?? '']);
    out.push('  deltas:');
    out.push(
      ...renderTable(['domain', 'path', 'op', 'value'], rows)
        .trimEnd()
        .split('\n')
        .map((l) => `    ${l}`),
    );
  }
  if (call.rejected.length > 0) out.push(`  rejected entries:    ${call.rejected.length}`);
  if (call.cost !== undefined) out.push(`  cost:                ${JSON.stringify(call.cost)}`);
  return out;
}

function renderReport(report: AgentCheckReport, color: boolean): string {
  const s = createStyle(color);
  const d = report.declarations;
  const out: string[] = [
    s.bold(`Agent ${report.url}, skill ${report.skill}`),
    `  card:                ${report.cardUrl}`,
    `  extensions declared: ${d.extensions.join(', ') || s.dim('none')}`,
    `  radius:              ${d.radius === undefined ? s.dim('not declared') : s.radius(d.radius)}`,
    `  hitl mode:           ${d.hitlMode === undefined ? s.dim('not declared') : d.vetoTtlMs === undefined ? d.hitlMode : `${d.hitlMode} (${d.vetoTtlMs} ms)`}`,
    `  domains:             ${d.domains === undefined ? s.dim('not declared') : d.domains.join(', ') || s.dim('none')}`,
    '',
  ];
  for (const call of report.calls) out.push(...renderCall(call, s), '');
  for (const x of report.diagnostics) {
    const tag = x.severity === 'error' ? s.red('error  ') : s.yellow('warning');
    out.push(`${tag} ${x.path}: ${x.message}`);
  }
  const { errors, warnings } = report.summary;
  const summary = `${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`;
  out.push(errors > 0 ? s.red(summary) : warnings > 0 ? s.yellow(summary) : s.green(summary));
  return `${out.join('\n')}\n`;
}

function headers(list: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of list ?? []) {
    const at = entry.indexOf(':');
    if (at <= 0) {
      throw new FleetgateError(
        'FLEETGATE_USAGE',
        `--header ${JSON.stringify(entry)}: expected "Name: value"`,
      );
    }
    out[entry.slice(0, at).trim()] = entry.slice(at + 1).trim();
  }
  return out;
}

/**
 * `fleetgate check-agent URL --skill S [--input TEXT] [--json] [--strict] [--timeout MS]
 * [--no-stream] [--header "Name: value"]…`: calls the agent as a gateway would and reports what a
 * gateway would reject or flag. Exit codes as `lint-card`: 0 clean, 1 errors (or warnings with
 * `--strict`), 2 when the agent could not be checked at all.
 */
export const registerCheckAgent: RegisterCommand = (program, io, setExit) => {
  program
    .command('check-agent')
    .description(
      'call an agent as the gateway would and report its declarations, echo and deltas; exit 1 on errors, or on warnings with --strict',
    )
    .usage('<url> --skill <id> [options]')
    .argument('<url>', 'the agent base URL (or its card URL)')
    .requiredOption('--skill <id>', 'the skill to call (required; one the card lists)')
    .option('--input <text>', 'the text of the user message', 'fleetgate check-agent')
    .option(
      '--json',
      'print the report as JSON: url, cardUrl, skill, ok, declarations, calls, diagnostics, summary; each call has mode, binding, protocolVersion, endpoint, requestedExtensions, echoedExtensions, stamps, state, taskId and statusText (when the task has them), events (streaming), deltas, rejected, cost',
    )
    .option('--strict', 'exit 1 when there are warnings')
    .option(
      '--timeout <ms>',
      'per request: milliseconds, or a duration like 10s',
      millisecondsFlag,
      10_000,
    )
    .option('--no-stream', 'skip the streaming call even when the card declares streaming')
    .option(
      '--header <name: value>',
      'a header for every request (repeatable)',
      (v: string, all: string[] = []) => [...all, v],
    )
    .action(async (url: string, opts: CheckAgentCliOptions) => {
      const report = await checkAgent(url, {
        skill: opts.skill,
        timeoutMs: opts.timeout,
        headers: headers(opts.header),
        ...defined({ input: opts.input }),
        ...(opts.stream === false ? { streaming: false } : {}),
      });
      io.out(opts.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report, io.color));
      const { errors, warnings } = report.summary;
      setExit(errors > 0 || (warnings > 0 && opts.strict === true) ? EXIT.problems : EXIT.ok);
    });
};
