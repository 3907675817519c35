import type { Artifact, Message, Part, StreamResponse, Task } from '@a2a-js/sdk';

import { assertNever } from '../protocol/index.js';
import { PART_MIME_METADATA_KEY } from '../protocol/index.js';

/**
 * Folds the events of one `SendStreamingMessage` stream into the task they describe, so the chain
 * sees the same terminal task whether the call was blocking or streaming.
 *
 * Artifacts follow A2A's update rules: a chunk with `append: true` extends the parts of the
 * artifact with the same id (keeping its name, metadata and extensions — an appended chunk may
 * lose its `extensions` list on the wire); any other chunk replaces the artifact with that id or
 * adds it at the end.
 */
export class TaskAccumulator {
  #task: Task | undefined;
  #message: Message | undefined;

  /** The task as known so far. */
  get task(): Task | undefined {
    return this.#task;
  }

  /** The agent's reply when it answered with a message instead of a task. */
  get message(): Message | undefined {
    return this.#message;
  }

  /** Takes a whole task (a blocking reply) as the current task, without copying it. */
  adoptTask(task: Task): void {
    this.#task = task;
  }

  /** Takes a message reply. */
  adoptMessage(message: Message): void {
    this.#message = message;
  }

  /** Applies one stream event. */
  apply(event: StreamResponse): void {
    const payload = event.payload;
    if (payload === undefined) return;
    switch (payload.$case) {
      case 'task':
        this.#task = {
          ...payload.value,
          artifacts: payload.value.artifacts.map(cloneArtifact),
          history: [...payload.value.history],
        };
        return;
      case 'message':
        this.#message = payload.value;
        return;
      case 'statusUpdate': {
        const task = this.#ensure(payload.value.taskId, payload.value.contextId);
        task.status = payload.value.status;
        return;
      }
      case 'artifactUpdate': {
        const { artifact, append } = payload.value;
        if (artifact === undefined) return;
        const task = this.#ensure(payload.value.taskId, payload.value.contextId);
        const index = task.artifacts.findIndex((a) => a.artifactId === artifact.artifactId);
        const existing = index === -1 ? undefined : task.artifacts[index];
        if (append && existing !== undefined) {
          existing.parts.push(...artifact.parts);
          if (artifact.metadata !== undefined) {
            existing.metadata = { ...(existing.metadata ?? {}), ...artifact.metadata };
          }
        } else if (index === -1) {
          task.artifacts.push(cloneArtifact(artifact));
        } else {
          task.artifacts[index] = cloneArtifact(artifact);
        }
        return;
      }
      default:
        assertNever(payload, 'stream event');
    }
  }

  #ensure(taskId: string, contextId: string): Task {
    this.#task ??= {
      id: taskId,
      contextId,
      status: undefined,
      artifacts: [],
      history: [],
      metadata: undefined,
    };
    return this.#task;
  }
}

function cloneArtifact(artifact: Artifact): Artifact {
  return { ...artifact, parts: [...artifact.parts] };
}

/** A data part of a reply, with the MIME type it carries in `metadata.mimeType`, if any. */
export interface DataPart {
  mimeType: string | undefined;
  value: unknown;
}

function partMime(part: Part): string | undefined {
  const fromMetadata: unknown = part.metadata?.[PART_MIME_METADATA_KEY];
  if (typeof fromMetadata === 'string') return fromMetadata;
  return part.mediaType === '' ? undefined : part.mediaType;
}

/** Text and data parts of a task's artifacts (or of a message), in order. */
export function readReply(
  task: Task | undefined,
  message: Message | undefined,
): { text: string; data: DataPart[] } {
  const parts: Part[] = [];
  if (task !== undefined) for (const artifact of task.artifacts) parts.push(...artifact.parts);
  if (message !== undefined) parts.push(...message.parts);
  const texts: string[] = [];
  const data: DataPart[] = [];
  for (const part of parts) {
    const content = part.content;
    if (content?.$case === 'text') texts.push(content.value);
    else if (content?.$case === 'data')
      data.push({ mimeType: partMime(part), value: content.value });
  }
  if (texts.length === 0 && task?.status?.message !== undefined) {
    for (const part of task.status.message.parts) {
      if (part.content?.$case === 'text') texts.push(part.content.value);
    }
  }
  return { text: texts.join('\n'), data };
}
