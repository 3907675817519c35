import { FleetgateError } from '../protocol/index.js';
import type { AgentEntry, SecretResolver } from './agent-config.js';
import { parseAgentConfig } from './agent-config.js';

/** A change of the directory. */
export type DirectoryChange =
  | { type: 'added'; agent: AgentEntry }
  | { type: 'updated'; agent: AgentEntry; previous: AgentEntry }
  | { type: 'removed'; agent: AgentEntry };

/** Options of {@link AgentDirectory}. */
export interface AgentDirectoryOptions {
  /** Resolves the environment variables named by `auth` (default: none are set). */
  secrets?: SecretResolver;
}

/**
 * The agents of the fleet: loaded from config, validated, and changed at run time (add, update,
 * remove). Listeners — the card broker — hear every change.
 *
 * @example
 * ```ts
 * const directory = new AgentDirectory({ secrets: (name) => process.env[name] });
 * directory.load(config.agents); // throws FLEETGATE_CONFIG_INVALID listing every bad entry
 * ```
 */
export class AgentDirectory {
  readonly #agents = new Map<string, AgentEntry>();
  readonly #listeners = new Set<(change: DirectoryChange) => void>();
  readonly #secrets: SecretResolver;
  #version = 0;

  /** Increases on every change. */
  get version(): number {
    return this.#version;
  }

  constructor(options: AgentDirectoryOptions = {}) {
    this.#secrets = options.secrets ?? (() => undefined);
  }

  /**
   * Adds every agent of a config list. All entries are validated first; when any is invalid,
   * nothing is added and the error lists every problem with its path (`agents[2].url: …`).
   */
  load(configs: readonly unknown[], base = 'agents'): AgentEntry[] {
    const problems: string[] = [];
    const parsed: AgentEntry[] = [];
    const seen = new Set(this.#agents.keys());
    configs.forEach((config, i) => {
      try {
        const entry = parseAgentConfig(config, `${base}[${i}]`, this.#secrets);
        if (seen.has(entry.name))
          problems.push(`${base}[${i}].name: ${entry.name} is configured twice`);
        seen.add(entry.name);
        parsed.push(entry);
      } catch (error) {
        if (!(error instanceof FleetgateError)) throw error;
        problems.push(...((error.details?.problems as string[] | undefined) ?? [error.message]));
      }
    });
    if (problems.length > 0) {
      throw new FleetgateError('FLEETGATE_CONFIG_INVALID', problems.join('\n'), {
        details: { problems },
      });
    }
    for (const entry of parsed) this.#set(entry);
    return parsed;
  }

  /**
   * Adds one agent.
   *
   * @throws FleetgateError `FLEETGATE_CONFIG_INVALID` when invalid or the name is taken.
   */
  add(config: unknown): AgentEntry {
    const entry = parseAgentConfig(config, 'agent', this.#secrets);
    if (this.#agents.has(entry.name)) {
      throw new FleetgateError(
        'FLEETGATE_CONFIG_INVALID',
        `agent.name: ${entry.name} already exists`,
      );
    }
    this.#set(entry);
    return entry;
  }

  /**
   * Replaces the config of an existing agent.
   *
   * @throws FleetgateError `FLEETGATE_AGENT_UNKNOWN` or `FLEETGATE_CONFIG_INVALID`.
   */
  update(config: unknown): AgentEntry {
    const entry = parseAgentConfig(config, 'agent', this.#secrets);
    if (!this.#agents.has(entry.name)) throw unknownAgent(entry.name);
    this.#set(entry);
    return entry;
  }

  /** Removes an agent; returns false when it was not there. */
  remove(name: string): boolean {
    const agent = this.#agents.get(name);
    if (agent === undefined) return false;
    this.#agents.delete(name);
    this.#emit({ type: 'removed', agent });
    return true;
  }

  get(name: string): AgentEntry | undefined {
    return this.#agents.get(name);
  }

  list(): AgentEntry[] {
    return [...this.#agents.values()];
  }

  get size(): number {
    return this.#agents.size;
  }

  /** Calls `listener` on every change; returns a function that stops it. */
  onChange(listener: (change: DirectoryChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #set(entry: AgentEntry): void {
    const previous = this.#agents.get(entry.name);
    this.#agents.set(entry.name, entry);
    this.#emit(
      previous === undefined
        ? { type: 'added', agent: entry }
        : { type: 'updated', agent: entry, previous },
    );
  }

  #emit(change: DirectoryChange): void {
    this.#version += 1;
    for (const listener of this.#listeners) listener(change);
  }
}

export function unknownAgent(name: string): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_AGENT_UNKNOWN',
    `No agent named ${name} is in the directory.`,
    {
      details: { agent: name },
    },
  );
}
