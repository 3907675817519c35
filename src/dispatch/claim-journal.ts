/**
 * The local journal of terminal claims that could not be committed: a gateway that stops while
 * its database is away writes the tasks it saw end — with the events their `after` hooks produced
 * — to files in a directory, and the next start replays them into the store. The claim stays the
 * exactly-once guard: a replayed claim that another path or replica already made is a no-op.
 *
 * One file per stop, written to a temporary name, flushed and renamed, so a crash mid-write leaves
 * no half file. A start takes each file by renaming it first, so two gateways sharing the
 * directory never replay the same file; a file that cannot be parsed is set aside as `.bad`
 * (reported), never deleted, and nothing next to it is lost.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Task as TaskCodec } from '@a2a-js/sdk';
import type { ClaimJournal, JournaledClaim } from './terminal-types.js';

/** One file taken for replay: its claims, and `done` with those still not committed. */
export interface TakenJournal {
  readonly file: string;
  readonly claims: readonly JournaledClaim[];
  done(remaining: readonly JournaledClaim[]): Promise<void>;
}

/**
 * The format written: a task in the A2A JSON form (file bytes as base64), so it reads back as the
 * agent sent it. Version 1 wrote the in-memory form, which lost file bytes; it is still read.
 */
const FORMAT = 'fleetgate.claims.v2';
const FORMAT_V1 = 'fleetgate.claims.v1';

/** A directory journal (see the module comment). */
export class DirectoryClaimJournal implements ClaimJournal {
  readonly #dir: string;
  readonly #onBadFile: (file: string, error: unknown) => void;

  constructor(dir: string, options: { onBadFile?: (file: string, error: unknown) => void } = {}) {
    this.#dir = dir;
    this.#onBadFile = options.onBadFile ?? (() => undefined);
  }

  get dir(): string {
    return this.#dir;
  }

  async keep(claims: readonly JournaledClaim[]): Promise<void> {
    if (claims.length === 0) return;
    await mkdir(this.#dir, { recursive: true });
    const name = `${Date.now()}-${process.pid}-${randomBytes(4).toString('hex')}`;
    const temporary = join(this.#dir, `${name}.tmp`);
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(
        JSON.stringify({
          format: FORMAT,
          claims: claims.map((claim) => ({ ...claim, task: TaskCodec.toJSON(claim.task) })),
        }),
      );
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, join(this.#dir, `${name}.json`));
  }

  /** Takes every journal file there is, oldest first. */
  async take(): Promise<TakenJournal[]> {
    let names: string[];
    try {
      names = await readdir(this.#dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const taken: TakenJournal[] = [];
    for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
      const file = join(this.#dir, name);
      const mine = `${file}.replaying-${process.pid}-${randomBytes(4).toString('hex')}`;
      try {
        await rename(file, mine);
      } catch (error) {
        // Another gateway took it first.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw error;
      }
      let claims: JournaledClaim[];
      try {
        claims = parseJournal(await readFile(mine, 'utf8'));
      } catch (error) {
        await rename(mine, `${file}.bad`);
        this.#onBadFile(`${file}.bad`, error);
        continue;
      }
      taken.push({
        file,
        claims,
        done: async (remaining) => {
          await this.keep(remaining);
          await rm(mine, { force: true });
        },
      });
    }
    return taken;
  }
}

function parseJournal(text: string): JournaledClaim[] {
  const parsed = JSON.parse(text) as { format?: unknown; claims?: unknown };
  if ((parsed.format !== FORMAT && parsed.format !== FORMAT_V1) || !Array.isArray(parsed.claims)) {
    throw new Error(`not a ${FORMAT} file`);
  }
  for (const [i, claim] of (parsed.claims as Partial<JournaledClaim>[]).entries()) {
    if (
      typeof claim.agent !== 'string' ||
      typeof claim.task?.id !== 'string' ||
      typeof claim.call?.skill !== 'string' ||
      !Array.isArray(claim.events)
    ) {
      throw new Error(`claims[${i}] lacks agent, task.id, call.skill or events`);
    }
  }
  const claims = parsed.claims as JournaledClaim[];
  if (parsed.format === FORMAT_V1) return claims;
  return claims.map((claim, i) => {
    try {
      return { ...claim, task: TaskCodec.fromJSON(claim.task) };
    } catch (error) {
      throw new Error(`claims[${i}].task is not an A2A task: ${String(error)}`);
    }
  });
}
