/** Process entry of the `fleetgate` command (see `bin/fleetgate.js`). */
import { main } from './main.js';

process.exitCode = await main(process.argv);
