import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * How the banner and the hints spell the command: `./fleetgate` (the launcher at the root of a checkout, which
 * runs the built CLI at once) when this package is a checkout, else `npx fleetgate`.
 */
export function cliCommand(cwd = process.cwd()): string {
  const root = fileURLToPath(new URL('.', import.meta.resolve('fleetgate/package.json')));
  if (!existsSync(join(root, '.git')) || !existsSync(join(root, 'fleetgate'))) {
    return 'npx fleetgate';
  }
  const path = relative(cwd, join(root, 'fleetgate'));
  // From elsewhere than the checkout, its full path (a walk up through `..` reads worse).
  if (path.startsWith('..')) return join(root, 'fleetgate');
  return path.startsWith('/') ? path : `./${path}`;
}
