/**
 * Checkpoints a busy SQLite store's write-ahead log from a worker thread. SQLite checkpoints on the
 * thread that commits, every 1,000 WAL pages by default: it copies the pages into the database
 * file and waits for two `fsync`s, and all that time the gateway's event loop stands still (a
 * store committing a call's claim and world update every millisecond spends more time there than
 * in its own statements). Here a second connection, in a worker thread, runs the checkpoints
 * (`PASSIVE`: it never waits for the writer, nor makes it wait); the committing connection keeps a
 * far larger automatic threshold only as a backstop, for when the worker falls behind.
 *
 * Durability is unchanged in kind (`synchronous = NORMAL` on both connections): the log is synced
 * before each checkpoint copies it, the database file after. The worker runs a checkpoint soon
 * after commits (at most one at a time, and one every `intervalMs`), so what an OS crash or a
 * power loss can take is what was committed since the last one — a fraction of a second under
 * load, as with SQLite's own checkpoints.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Commits before the worker starts: a store that writes little never pays for a thread. */
const START_AFTER_COMMITS = 64;
/** Shortest time between two checkpoints of the worker, in ms. */
const DEFAULT_INTERVAL_MS = 100;
/** WAL pages at which the committing connection checkpoints itself (the worker fell behind). */
export const BACKSTOP_WAL_PAGES = 10_000;
/** SQLite's own default, restored when the worker is gone. */
const DEFAULT_WAL_PAGES = 1_000;

// CommonJS, evaluated in the worker: the driver is loaded by the path the store resolved.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, log: result.log, checkpointed: result.checkpointed });
  } catch (error) {
    parentPort.postMessage({ ok: false, message: String((error && error.message) || error) });
  }
});
`;

/** What the checkpointer needs of the committing connection. */
export interface CheckpointedDatabase {
  pragma(source: string): unknown;
}

/** Checkpoints the WAL of one SQLite file off the event loop; see the file comment. */
export interface SqliteCheckpointer {
  /** Told after each commit of the store's connection. */
  committed(): void;
  /** Stops the worker (its connection closes); the committing connection checkpoints again. */
  close(): Promise<void>;
}

/**
 * Creates the checkpointer of `file`, whose committing connection is `database`.
 *
 * @param onError told when the worker fails (the committing connection then checkpoints itself
 * again, as SQLite does by default).
 */
export function createSqliteCheckpointer(
  database: CheckpointedDatabase,
  file: string,
  onError: (error: Error) => void,
  intervalMs = DEFAULT_INTERVAL_MS,
): SqliteCheckpointer {
  let commits = 0;
  let worker: Worker | undefined;
  let failed = false;
  let closed = false;
  /** A checkpoint asked and not answered yet, or one waiting for the interval. */
  let busy = false;
  /** Commits happened since the checkpoint in progress was asked. */
  let pending = false;
  let lastAsked = 0;
  let timer: NodeJS.Timeout | undefined;

  function fail(error: Error): void {
    if (failed || closed) return;
    failed = true;
    worker = undefined;
    if (timer !== undefined) clearTimeout(timer);
    try {
      database.pragma(`wal_autocheckpoint = ${DEFAULT_WAL_PAGES}`);
    } catch {
      // The connection is closing: nothing left to checkpoint from here.
    }
    onError(error);
  }

  function start(): void {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const started = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver, file },
      // The worker needs no loader hooks or flags of the process (test runners, profilers).
      execArgv: [],
    });
    started.unref();
    started.on('message', (answer: { ok: boolean; message?: string }) => {
      if (!answer.ok) {
        // A checkpoint that could not run now (the backstop checkpointing at the same moment):
        // the next commit asks again.
        busy = false;
        return;
      }
      busy = false;
      if (pending) ask();
    });
    started.on('error', (error) => fail(error));
    started.on('exit', (code) => {
      if (!closed) fail(new Error(`the SQLite checkpoint worker of ${file} exited (${code})`));
    });
    worker = started;
    database.pragma(`wal_autocheckpoint = ${BACKSTOP_WAL_PAGES}`);
  }

  /** Asks for a checkpoint now, or once the interval since the last one has passed. */
  function ask(): void {
    const current = worker;
    if (current === undefined) return;
    busy = true;
    pending = false;
    const wait = lastAsked + intervalMs - Date.now();
    if (wait > 0) {
      timer = setTimeout(() => {
        timer = undefined;
        lastAsked = Date.now();
        current.postMessage('checkpoint');
      }, wait);
      timer.unref();
      return;
    }
    lastAsked = Date.now();
    current.postMessage('checkpoint');
  }

  return {
    committed() {
      if (failed || closed) return;
      if (worker === undefined) {
        commits += 1;
        if (commits < START_AFTER_COMMITS) return;
        try {
          start();
        } catch (error) {
          fail(error instanceof Error ? error : new Error(String(error)));
          return;
        }
      }
      if (busy) pending = true;
      else ask();
    },
    async close() {
      if (closed) return;
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      const current = worker;
      worker = undefined;
      if (current === undefined) return;
      const exited = new Promise<void>((resolve) => current.once('exit', () => resolve()));
      // The worker is unref'd so that it never keeps a process alive on its own; while its exit is
      // awaited it must, or a process with nothing else left to do ends with the await unsettled
      // (Node's exit code 13) instead of finishing its close.
      current.ref();
      current.postMessage('close');
      // A worker stuck in a checkpoint is stopped after a while; its connection closes with it.
      const deadline = setTimeout(() => void current.terminate(), 5_000);
      await exited;
      clearTimeout(deadline);
    },
  };
}
