/**
 * A client's stream of a proxy task, from the live feed of this process or from the store, and
 * the relay of a running task's events at the agent into that feed.
 */
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { normalizeTaskState } from '../../protocol/index.js';
import { EventQueue } from './feed.js';
import type { ProxyCore } from './proxy-core.js';
import { TICK_MS } from './proxy-core.js';
import { answered } from './proxy-task-meta.js';
import type { ProxyTask } from './task-store.js';
import { ended } from './task-store.js';
import { clientEvent, progressEvents } from './task-view.js';

/** Where a stream ends besides the task's end (see {@link stream}). */
export interface StreamEnds {
  askedAt?: number;
  agentDone?: Promise<boolean> | (() => Promise<boolean>);
}

/**
 * A client's stream of a task: the task first (the response's headers go with it, at once),
 * then each event once — the live call's events on this process as they arrive, else the
 * task's progress as the store records it — to the task's end. `agentDone` settles when the
 * agent's own stream of the call ended: true ends this one too (after the state the store has
 * then), as the agent's did; false (the call was held for approval) follows the store on.
 * A continued task's stream (`askedAt`) also ends at the agent's next question.
 */
export async function* stream(
  core: ProxyCore,
  first: Task,
  id: string,
  alreadySeen: { state: string; artifacts: number },
  options: StreamEnds = {},
): AsyncGenerator<StreamResponse, void, undefined> {
  const { feed } = core;
  const queue = new EventQueue<StreamResponse>();
  const stop = feed.listen(id, (event) => {
    if (event.payload === undefined) queue.poke();
    else queue.push(event);
  });
  let agentEnded = false;
  let sawLive = false;
  const agentDone =
    typeof options.agentDone === 'function' ? options.agentDone() : options.agentDone;
  void agentDone?.then(
    (end) => {
      agentEnded = end;
      queue.poke();
    },
    () => {
      agentEnded = true;
      queue.poke();
    },
  );
  try {
    yield { payload: { $case: 'task', value: first } };
    let state = normalizeTaskState(alreadySeen.state);
    let artifacts = alreadySeen.artifacts;
    if (ended(state)) return;
    for (;;) {
      const event = await queue.next(TICK_MS);
      if (event !== undefined) {
        sawLive = true;
        const p = event.payload;
        if (p?.$case === 'task') {
          // The client has had the task: a task event of the agent's says only what changed.
          const next = normalizeTaskState(p.value.status?.state);
          if (next === state && p.value.artifacts.length <= artifacts) continue;
          for (const e of progressEvents(p.value, artifacts)) yield e;
          state = next;
          artifacts = Math.max(artifacts, p.value.artifacts.length);
          if (ended(state)) return;
          continue;
        }
        yield event;
        if (p?.$case === 'artifactUpdate') artifacts += 1;
        if (p?.$case === 'statusUpdate' && p.value.status !== undefined) {
          state = normalizeTaskState(p.value.status.state);
          if (ended(state)) return;
        }
        continue;
      }
      if (core.closed) return;
      if (agentEnded) {
        // The agent's stream ended. Its live events told the client everything; a call sent
        // blocking (no live events) is read once more for the state it ended in.
        if (sawLive) return;
        const task = await core.sync(id);
        if (
          task !== undefined &&
          (task.state !== state || task.task.artifacts.length > artifacts)
        ) {
          for (const e of progressEvents(task.task, artifacts)) yield e;
        }
        return;
      }
      if (feed.live(id)) continue;
      const task = await core.sync(id);
      if (task === undefined) return;
      if (task.state !== state || task.task.artifacts.length > artifacts) {
        for (const e of progressEvents(task.task, artifacts)) yield e;
        state = task.state;
        artifacts = task.task.artifacts.length;
        if (ended(task.state)) return;
      }
      if (options.askedAt !== undefined && task.updatedAt > options.askedAt && answered(task)) {
        return;
      }
      if (queue.ended) return;
    }
  } finally {
    stop();
  }
}

/**
 * Follows a running task's events at the agent (its own `SubscribeToTask`) into this process's
 * feed: every subscriber of the task here reads them, and the subscription ends when the
 * agent's does. Resolves true when the agent's stream ended, false when the agent refused it
 * (the store is followed instead).
 */
export function relayAgentStream(
  core: ProxyCore,
  agent: string,
  task: ProxyTask,
  agentTaskId: string,
): Promise<boolean> {
  const { feed } = core;
  const ids = { id: task.id, contextId: task.contextId };
  feed.open(task.id);
  const work = (async () => {
    try {
      const built = await core.ports.agentClient(agent);
      for await (const event of built.client.resubscribeTask(
        { tenant: '', id: agentTaskId },
        { serviceParameters: { ...built.headers } },
      )) {
        feed.publish(task.id, clientEvent(event, ids));
      }
      return true;
    } catch (error) {
      core.options.onError(error, 'proxy.subscribe');
      return false;
    } finally {
      feed.close(task.id);
      await core.sync(task.id).catch((error: unknown) => core.options.onError(error, 'proxy.sync'));
    }
  })();
  core.keep(work, 'proxy.subscribe');
  return work;
}
