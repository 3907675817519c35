import { hash } from 'node:crypto';

/** Room for the text hashed: a topic, an agent name and a task id, with their length prefixes. */
const PREIMAGE_BYTES = 2048;
const COLON = 58;
const SEMICOLON = 59;

/**
 * The UTF-8 bytes of `text`, as the id's length prefixes count them: for ASCII text (every topic,
 * nearly every agent name and task id) its length, found without a call into the runtime.
 */
export function utf8Length(text: string): number {
  for (let i = 0; i < text.length; i += 1) {
    if (text.charCodeAt(i) > 0x7f) return Buffer.byteLength(text);
  }
  return text.length;
}

/**
 * The deterministic ids of one topic's events, one per agent's task: sha256 over the
 * length-prefixed parts `(topic, agent, taskId)`, hex, 32 characters — the same bytes, so the
 * same ids, as `deterministicEventId(topic, agent, taskId)`.
 *
 * Every terminal task with deltas needs one, so the text hashed is written as bytes into a buffer
 * kept for the purpose (the `(topic, agent)` prefix stays there while calls go to one agent) and
 * hashed from there: no string is built, joined or converted to UTF-8 for the hash. Text that is
 * not ASCII, or too long for the buffer, is hashed as a string instead — the same bytes.
 */
export class TaskEventIds {
  readonly #topic: string;
  #bytes: Uint8Array | undefined;
  /** `#bytes.subarray(0, n)` at index `n`, made once for each length hashed. */
  readonly #views: (Uint8Array | undefined)[] = [];
  #agent: string | undefined;
  /** `<bytes>:<topic>;<bytes>:<agent>;` of `#agent`. */
  #prefix = '';
  /** Bytes of `#prefix` written at the start of `#bytes`; -1 when it is not ASCII. */
  #prefixBytes = -1;

  constructor(topic: string) {
    this.#topic = topic;
  }

  /** The id of the `topic` event of `agent`'s task `taskId`. */
  of(agent: string, taskId: string): string {
    if (agent !== this.#agent) this.#setAgent(agent);
    const start = this.#prefixBytes;
    if (start >= 0) {
      const end = this.#writePart(start, taskId);
      if (end >= 0) {
        const view = (this.#views[end] ??= this.#bytes!.subarray(0, end));
        return hash('sha256', view, 'hex').slice(0, 32);
      }
    }
    return hash('sha256', `${this.#prefix}${utf8Length(taskId)}:${taskId};`, 'hex').slice(0, 32);
  }

  #setAgent(agent: string): void {
    const topic = this.#topic;
    this.#agent = agent;
    this.#prefix = `${utf8Length(topic)}:${topic};${utf8Length(agent)}:${agent};`;
    this.#bytes ??= new Uint8Array(PREIMAGE_BYTES);
    const end = this.#writePart(0, topic);
    this.#prefixBytes = end < 0 ? -1 : this.#writePart(end, agent);
  }

  /**
   * Writes `<length>:<text>;` for ASCII `text` at `at`; returns where it ends, or -1 when `text`
   * is not ASCII or does not fit.
   */
  #writePart(at: number, text: string): number {
    const bytes = this.#bytes!;
    const length = text.length;
    let digits = 1;
    for (let rest = length; rest >= 10; rest = Math.floor(rest / 10)) digits += 1;
    const end = at + digits + length + 2;
    if (end > PREIMAGE_BYTES) return -1;
    for (let i = at + digits - 1, rest = length; i >= at; i -= 1, rest = Math.floor(rest / 10)) {
      bytes[i] = 48 + (rest % 10);
    }
    let i = at + digits;
    bytes[i++] = COLON;
    for (let c = 0; c < length; c += 1) {
      const code = text.charCodeAt(c);
      if (code > 0x7f) return -1;
      bytes[i++] = code;
    }
    bytes[i] = SEMICOLON;
    return end;
  }
}
