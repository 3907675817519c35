/**
 * `checkAgent(url, { skill })`: a conformance check for agent CI. It calls the agent as a
 * Fleetgate gateway would — the declared extensions in `A2A-Extensions`, the stamps in the request
 * metadata, blocking and (when the card streams) streaming — and reports what came back and every
 * reason a gateway would reject or flag it, with the gateway's own readers.
 */
import type { Diagnostic } from '../protocol/index.js';
import {
  BLAST_V1_URI,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  HITL_MODE_V1_URI,
  STAMPS,
  readDeclarations,
} from '../protocol/index.js';
import {
  checkEcho,
  foldStream,
  followToEnd,
  inspectTask,
  judgeEnd,
  replyTask,
} from './check-inspect.js';
import { inspectWireShapes } from './check-shapes.js';
import type { AgentCheckCall, AgentCheckReport, CheckAgentOptions } from './check-types.js';
import type { WireOptions } from './check-wire.js';
import { fetchCard, pickEndpoint, sendMessage } from './check-wire.js';

const DEFAULT_INPUT = 'fleetgate check-agent';

/** The stamps a gateway puts on a call of `skill`, for the extensions it activates. */
function stampsFor(
  skill: string,
  active: readonly string[],
  d: ReturnType<typeof readDeclarations>,
): Record<string, string> {
  const stamps: Record<string, string> = {};
  if (active.includes(EFFECT_DOMAIN_V1_URI)) stamps[STAMPS.effectDomainSkill] = skill;
  const blast = d.blast[skill];
  if (active.includes(BLAST_V1_URI) && blast !== undefined)
    stamps[STAMPS.blastRadius] = blast.radius;
  const hitl = d.hitlMode[skill];
  if (active.includes(HITL_MODE_V1_URI) && hitl !== undefined) {
    stamps[STAMPS.hitlMode] = hitl.mode;
    if (hitl.mode === 'veto' && hitl.vetoTtlMs !== undefined) {
      stamps[STAMPS.hitlVetoTtlMs] = String(hitl.vetoTtlMs);
    }
  }
  if (active.includes(COST_V1_URI)) stamps[STAMPS.costSkill] = skill;
  return stamps;
}

/**
 * Calls an agent as a Fleetgate gateway would and reports the declarations, the stamps sent, the
 * extensions echoed, the deltas returned, and every reason a gateway would reject or flag them:
 * card diagnostics (a skill id listed twice included), a missing echo (also on streaming), a task
 * that failed (with its status text) or did not end within the timeout, rejected delta entries,
 * delta parts a gateway never reads (wrong MIME, a message reply, no effect-domain-v1
 * declaration), deltas on intermediate stream events, undeclared domains, a `self` skill changing
 * shared state, v0.3 shapes in a v1.0 answer, invalid cost parts, deltas past 15 MiB as JSON (a
 * gateway with the default `limits.agentResponseBytes` refuses an answer past 16 MiB).
 *
 * @throws FleetgateError `FLEETGATE_CARD_FETCH_FAILED` / `FLEETGATE_CARD_INVALID` when there is no
 * card to check; a failing call is a diagnostic, not a throw.
 *
 * @example
 * ```ts
 * const report = await checkAgent('http://127.0.0.1:9201', { skill: 'triage' });
 * expect(report.diagnostics).toEqual([]);
 * ```
 */
export async function checkAgent(
  url: string,
  options: CheckAgentOptions,
): Promise<AgentCheckReport> {
  const wire: WireOptions = {
    fetch: options.fetch ?? fetch,
    headers: options.headers ?? {},
    timeoutMs: options.timeoutMs ?? 10_000,
  };
  const { skill } = options;
  const { card, url: cardUrl } = await fetchCard(url, wire);
  const d = readDeclarations(card);
  const diagnostics: Diagnostic[] = d.diagnostics.map((x) => ({
    ...x,
    path: `card.${x.path}`,
  }));
  const add = (path: string, severity: Diagnostic['severity'], message: string): void => {
    diagnostics.push({ path, severity, message });
  };
  // A skill the card does not list is not called: a check must not change the agent's state
  // with a call that was a typo.
  const listed = d.skills.includes(skill);
  if (!listed) {
    add(
      'card.skills',
      'error',
      `skill ${JSON.stringify(skill)} is not in card.skills (${d.skills.join(', ') || 'none'}); no call was made`,
    );
  }
  const active = [...new Set(d.declared.filter((e) => e.known).map((e) => e.canonicalUri))];
  const stamps = stampsFor(skill, active, d);
  const declarations: AgentCheckReport['declarations'] = { extensions: d.extensions };
  const blast = d.blast[skill];
  const hitl = d.hitlMode[skill];
  const domains = d.effectDomain[skill]?.domains;
  if (blast !== undefined) declarations.radius = blast.radius;
  if (hitl !== undefined) declarations.hitlMode = hitl.mode;
  if (hitl?.vetoTtlMs !== undefined) declarations.vetoTtlMs = hitl.vetoTtlMs;
  if (domains !== undefined) declarations.domains = domains;

  const calls: AgentCheckCall[] = [];
  const endpoint = pickEndpoint(card, new URL(cardUrl).origin);
  if ('problem' in endpoint) {
    add('card.supportedInterfaces', 'error', `cannot call the agent: ${endpoint.problem}`);
  } else if (listed) {
    const capabilities = (card as { capabilities?: { streaming?: unknown } }).capabilities;
    const streams = options.streaming ?? capabilities?.streaming === true;
    const modes: AgentCheckCall['mode'][] = streams ? ['blocking', 'streaming'] : ['blocking'];
    for (const mode of modes) {
      const call: AgentCheckCall = {
        mode,
        binding: endpoint.binding,
        protocolVersion: endpoint.version,
        endpoint: endpoint.url,
        requestedExtensions: active,
        echoedExtensions: null,
        stamps,
        state: 'error',
        deltas: [],
        rejected: [],
      };
      calls.push(call);
      const sent = await sendMessage(
        endpoint,
        {
          text: options.input ?? DEFAULT_INPUT,
          stamps,
          extensions: active,
          streaming: mode === 'streaming',
        },
        wire,
      );
      call.echoedExtensions = sent.echoed;
      // Without an answer there are no headers to judge: echo advice would send the author after
      // a problem the agent may not have.
      if (sent.status !== 0) checkEcho(call, add);
      if (sent.error !== undefined) {
        add(mode, 'error', `the call failed: ${sent.error}`);
        continue;
      }
      for (const shape of inspectWireShapes(sent.results, endpoint.version)) {
        add(`${mode}.${shape.path}`, 'warning', shape.message);
      }
      const task = mode === 'streaming' ? foldStream(sent, call, add) : replyTask(sent, call, add);
      if (task === undefined) {
        if (sent.timedOut) {
          add(mode, 'warning', `the stream did not end within the timeout of ${wire.timeoutMs} ms`);
        }
        continue;
      }
      // A stream the timeout ended has had its time: following it would wait as long again.
      const { task: final, lost } = sent.timedOut
        ? { task, lost: false }
        : await followToEnd(task, endpoint, wire, call, add);
      call.state = final.state;
      call.taskId = final.id;
      if (final.statusText !== undefined && final.statusText !== '') {
        call.statusText = final.statusText;
      }
      if (lost || !judgeEnd(final, call, wire.timeoutMs, add)) continue;
      inspectTask(final, call, { skill, domains, radius: blast?.radius, active }, add);
    }
  }
  const errors = diagnostics.filter((x) => x.severity === 'error').length;
  return {
    url,
    cardUrl,
    skill,
    ok: errors === 0,
    declarations,
    calls,
    diagnostics,
    summary: { errors, warnings: diagnostics.length - errors },
  };
}
