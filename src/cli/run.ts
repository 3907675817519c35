/** Process entry of the `fleetgate` command (see `bin/fleetgate.js`). */
import { EXIT, printError } from './errors.js';
import { processIo } from './io.js';
import { main } from './main.js';

const io = processIo();
const json = process.argv.includes('--json');

// Last resort: an error nobody awaited still ends as one printed error, never a stack trace.
const fatal = (error: unknown): void => {
  printError(io, error, { json });
  process.exit(EXIT.errors);
};
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);

process.exitCode = await main(process.argv, io);
