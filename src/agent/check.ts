/**
 * `checkAgent(url, { skill })`: a conformance check for agent CI. It calls the agent as a
 * Fleetgate gateway would — the declared extensions in `A2A-Extensions`, the stamps in the request
 * metadata, blocking and (when the card streams) streaming — and reports what came back and every
 * reason a gateway would reject or flag it, with the gateway's own readers.
 */
import type {
  BlastRadius,
  CostPayload,
  Diagnostic,
  HitlMode,
  NormalizedArtifact,
  NormalizedStreamEvent,
  NormalizedTask,
  RejectedDeltaEntry,
  TaskStateName,
  WorldStateDeltaEntry,
} from '../protocol/index.js';
import {
  BLAST_V1_URI,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  HITL_MODE_V1_URI,
  PART_MIME_METADATA_KEY,
  STAMPS,
  WORLDSTATE_DELTA_MIME,
  extractCost,
  extractWorldStateDeltas,
  isInterruptedState,
  isTerminalState,
  readDeclarations,
  readStreamEvent,
  readTask,
} from '../protocol/index.js';
import type { AgentEndpoint, WireExchange, WireOptions } from './check-wire.js';
import { fetchCard, getTask, pickEndpoint, sendMessage } from './check-wire.js';
import { inspectWireShapes } from './check-shapes.js';

/** Options of {@link checkAgent}. */
export interface CheckAgentOptions {
  /** The skill to call. */
  skill: string;
  /** The text of the user message (default `"fleetgate check-agent"`). */
  input?: string;
  /** Milliseconds per request, and for following a task to its end (default 10 000). */
  timeoutMs?: number;
  /** Headers sent with every request, e.g. `Authorization`. */
  headers?: Readonly<Record<string, string>>;
  /** Also call with streaming (default: when the card declares `capabilities.streaming`). */
  streaming?: boolean;
  fetch?: typeof fetch;
}

/** One call the check made, and what came back. */
export interface AgentCheckCall {
  mode: 'blocking' | 'streaming';
  binding: AgentEndpoint['binding'];
  protocolVersion: AgentEndpoint['version'];
  endpoint: string;
  /** The extensions asked for in `A2A-Extensions` (`X-A2A-Extensions` on v0.3). */
  requestedExtensions: string[];
  /** The extensions the agent echoed back; `null` when it sent no header. */
  echoedExtensions: string[] | null;
  /** The stamps sent in the request metadata. */
  stamps: Record<string, string>;
  /** How the task ended, `message` for a message reply, `error` when the call failed. */
  state: TaskStateName | 'message' | 'error';
  taskId?: string;
  /** The kinds of the stream events, in order (streaming only). */
  events?: string[];
  /** The entries a gateway would publish on `world.state.delta`. */
  deltas: WorldStateDeltaEntry[];
  /** The entries a gateway would list on `world.state.delta.rejected`. */
  rejected: RejectedDeltaEntry[];
  cost?: CostPayload;
}

/** The outcome of {@link checkAgent}. */
export interface AgentCheckReport {
  url: string;
  cardUrl: string;
  skill: string;
  /** False when any diagnostic is an error. */
  ok: boolean;
  /** What the card declares for the skill. */
  declarations: {
    extensions: string[];
    radius?: BlastRadius;
    hitlMode?: HitlMode;
    vetoTtlMs?: number;
    domains?: string[];
  };
  calls: AgentCheckCall[];
  /** Every problem, with where: `card.<path>`, `blocking.<path>`, `streaming.<path>`. */
  diagnostics: Diagnostic[];
  summary: { errors: number; warnings: number };
}

const DEFAULT_INPUT = 'fleetgate check-agent';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

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

function isDeltaLike(part: NormalizedArtifact['parts'][number]): boolean {
  return (
    part.type === 'data' &&
    typeof part.data === 'object' &&
    part.data !== null &&
    Array.isArray((part.data as { deltas?: unknown }).deltas)
  );
}

/**
 * Calls an agent as a Fleetgate gateway would and reports the declarations, the stamps sent, the
 * extensions echoed, the deltas returned, and every reason a gateway would reject or flag them:
 * card diagnostics, a missing echo (also on streaming), rejected delta entries, delta parts a
 * gateway never reads (wrong MIME, a message reply, no effect-domain-v1 declaration), deltas on
 * intermediate stream events, undeclared domains, a `self` skill changing shared state, v0.3
 * shapes in a v1.0 answer, invalid cost parts.
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
  const diagnostics: Diagnostic[] = d.diagnostics.map((x) => ({ ...x, path: `card.${x.path}` }));
  const add = (path: string, severity: Diagnostic['severity'], message: string): void => {
    diagnostics.push({ path, severity, message });
  };
  if (!d.skills.includes(skill)) {
    add(
      'card.skills',
      'error',
      `skill ${JSON.stringify(skill)} is not in card.skills (${d.skills.join(', ') || 'none'})`,
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
  } else {
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
      checkEcho(call, add);
      if (sent.error !== undefined) {
        add(mode, 'error', `the call failed: ${sent.error}`);
        continue;
      }
      for (const shape of inspectWireShapes(sent.results, endpoint.version)) {
        add(`${mode}.${shape.path}`, 'warning', shape.message);
      }
      const task = mode === 'streaming' ? foldStream(sent, call, add) : replyTask(sent, call, add);
      if (task === undefined) continue;
      const final = await followToEnd(task, endpoint, wire, call, add);
      call.state = final.state;
      call.taskId = final.id;
      if (!isTerminalState(final.state)) {
        add(
          mode,
          'warning',
          `the task did not end (state ${final.state}); a gateway reads deltas only from a task that ended`,
        );
        continue;
      }
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

type Add = (path: string, severity: Diagnostic['severity'], message: string) => void;

function checkEcho(call: AgentCheckCall, add: Add): void {
  if (call.requestedExtensions.length === 0) return;
  const how = `activate the declared extensions in the transports' contextBuilder (activateExtensions(card))`;
  if (call.echoedExtensions === null) {
    add(
      call.mode,
      'warning',
      `no extensions were echoed on the ${call.mode} ${call.binding} response; ${how}`,
    );
    return;
  }
  const missing = call.requestedExtensions.filter((u) => !call.echoedExtensions!.includes(u));
  if (missing.length > 0) {
    add(
      call.mode,
      'warning',
      `the ${call.mode} ${call.binding} response does not echo ${missing.join(', ')}; ${how}`,
    );
  }
}

/** The task of a blocking reply; a message reply is checked for deltas nobody reads. */
function replyTask(sent: WireExchange, call: AgentCheckCall, add: Add): NormalizedTask | undefined {
  let event: NormalizedStreamEvent;
  try {
    event = readStreamEvent(sent.results[0]);
  } catch (error) {
    add(
      call.mode,
      'error',
      `the reply is neither a task nor a message: ${(error as Error).message}`,
    );
    return undefined;
  }
  if (event.type === 'task') return event.task;
  if (event.type === 'message') {
    call.state = 'message';
    messageDeltas(event.message, call.mode, add);
    return undefined;
  }
  add(call.mode, 'error', `the reply is a ${event.type}, not a task or a message`);
  return undefined;
}

function messageDeltas(message: Record<string, unknown>, where: string, add: Add): void {
  try {
    const asTask = readTask({
      id: 'message',
      status: { state: 'completed' },
      artifacts: [message],
    });
    const found = extractWorldStateDeltas(asTask);
    if (found.parts > 0 || asTask.artifacts.some((a) => a.parts.some(isDeltaLike))) {
      add(
        where,
        'error',
        'the agent answered with a message carrying deltas: a gateway reads deltas only from a task; publish a task',
      );
    }
  } catch {
    // Not readable as parts: nothing to say about deltas.
  }
}

/** Folds the stream into the task a gateway would settle, flagging deltas on intermediate events. */
function foldStream(
  sent: WireExchange,
  call: AgentCheckCall,
  add: Add,
): NormalizedTask | undefined {
  const events: NormalizedStreamEvent[] = [];
  call.events = [];
  sent.results.forEach((raw, i) => {
    try {
      const event = readStreamEvent(raw);
      events.push(event);
      call.events!.push(event.type);
    } catch (error) {
      add(
        `streaming.events[${i}]`,
        'error',
        `unreadable stream event: ${(error as Error).message}`,
      );
    }
  });
  let task: NormalizedTask | undefined;
  events.forEach((event, i) => {
    switch (event.type) {
      case 'task':
        task = { ...event.task, artifacts: [...event.task.artifacts] };
        return;
      case 'message':
        call.state = 'message';
        messageDeltas(event.message, `streaming.events[${i}]`, add);
        return;
      case 'statusUpdate':
        task ??= {
          id: event.taskId,
          contextId: event.contextId,
          state: 'unknown',
          artifacts: [],
          metadata: {},
        };
        task.state = event.state;
        return;
      case 'artifactUpdate': {
        task ??= {
          id: event.taskId,
          contextId: event.contextId,
          state: 'unknown',
          artifacts: [],
          metadata: {},
        };
        const next = events[i + 1];
        const closing = next?.type === 'statusUpdate' && isTerminalState(next.state);
        if (
          !closing &&
          extractWorldStateDeltas({ ...task, artifacts: [event.artifact] }).parts > 0
        ) {
          add(
            `streaming.events[${i}]`,
            'warning',
            `a worldstate-delta part on an intermediate event (artifact ${event.artifact.artifactId}): report deltas once, on the artifact sent as the task ends`,
          );
        }
        const at = task.artifacts.findIndex((a) => a.artifactId === event.artifact.artifactId);
        if (at === -1) task.artifacts.push(event.artifact);
        else if (event.append) {
          const before = task.artifacts[at]!;
          task.artifacts[at] = { ...before, parts: [...before.parts, ...event.artifact.parts] };
        } else task.artifacts[at] = event.artifact;
        return;
      }
    }
  });
  return task;
}

/** Polls a task that is neither ended nor waiting on the caller, as a gateway's tracker would. */
async function followToEnd(
  task: NormalizedTask,
  endpoint: AgentEndpoint,
  wire: WireOptions,
  call: AgentCheckCall,
  add: Add,
): Promise<NormalizedTask> {
  const deadline = Date.now() + wire.timeoutMs;
  let current = task;
  while (!isTerminalState(current.state) && !isInterruptedState(current.state)) {
    if (Date.now() > deadline) return current;
    await sleep(100);
    const got = await getTask(endpoint, current.id, wire);
    if (got.error !== undefined) {
      add(call.mode, 'error', `GetTask ${current.id} failed: ${got.error}`);
      return current;
    }
    try {
      current = readTask(got.results[0]);
    } catch (error) {
      add(
        call.mode,
        'error',
        `GetTask ${current.id} answered no task: ${(error as Error).message}`,
      );
      return current;
    }
  }
  return current;
}

/** What a gateway's effect-domain and cost hooks, and its reconciliation, would make of the task. */
function inspectTask(
  task: NormalizedTask,
  call: AgentCheckCall,
  facts: {
    skill: string;
    domains: string[] | undefined;
    radius: BlastRadius | undefined;
    active: readonly string[];
  },
  add: Add,
): void {
  const where = call.mode;
  const found = extractWorldStateDeltas(task);
  call.deltas = found.entries;
  call.rejected = found.rejected;
  for (const r of found.rejected) {
    add(`${where}.${r.location ?? 'deltas'}`, 'error', `entry ${r.index} is rejected: ${r.reason}`);
  }
  for (const w of found.warnings) add(where, 'warning', w);
  task.artifacts.forEach((artifact, a) => {
    artifact.parts.forEach((part, p) => {
      if (part.type !== 'data') return;
      const mime = part.metadata[PART_MIME_METADATA_KEY] ?? part.mediaType;
      const path = `${where}.artifacts[${a}].parts[${p}]`;
      if (
        typeof mime === 'string' &&
        /worldstate-delta/i.test(mime) &&
        mime !== WORLDSTATE_DELTA_MIME
      ) {
        add(
          path,
          'error',
          `MIME ${JSON.stringify(mime)} is not ${WORLDSTATE_DELTA_MIME}: a gateway never reads these deltas`,
        );
      } else if (mime === undefined && isDeltaLike(part)) {
        add(
          path,
          'warning',
          `a data part with "deltas" but no metadata.mimeType: a gateway never reads it as deltas (MIME ${WORLDSTATE_DELTA_MIME})`,
        );
      }
    });
  });
  if (found.parts > 0 && !facts.active.includes(EFFECT_DOMAIN_V1_URI)) {
    add(
      where,
      'error',
      'the task carries worldstate-delta parts, but the card does not declare effect-domain-v1: a gateway never reads them',
    );
  }
  if (found.entries.length > 0 && facts.active.includes(EFFECT_DOMAIN_V1_URI)) {
    const touched = [...new Set(found.entries.map((e) => e.domain))];
    const undeclared =
      facts.domains === undefined ? touched : touched.filter((x) => !facts.domains!.includes(x));
    if (undeclared.length > 0) {
      add(
        where,
        'warning',
        facts.domains === undefined
          ? `${facts.skill} changed ${undeclared.join(', ')} but declares no effect-domain-v1 domains: a gateway raises undeclared_effect`
          : `${facts.skill} changed ${undeclared.join(', ')}, outside its declared domains (${facts.domains.join(', ') || 'none'}): a gateway raises undeclared_effect`,
      );
    }
    if (facts.radius === 'self') {
      add(
        where,
        'warning',
        `${facts.skill} declares radius self but changed shared world state: a gateway raises blast_violation`,
      );
    }
  }
  const cost = extractCost(task);
  if (cost.payload !== undefined) call.cost = cost.payload;
  for (const problem of cost.problems) add(`${where}.${problem.split(':')[0]}`, 'error', problem);
  if (cost.payload !== undefined && !facts.active.includes(COST_V1_URI)) {
    add(
      where,
      'warning',
      'the task carries a cost-v1 part, but the card does not declare cost-v1: a gateway never reads it',
    );
  }
}
