import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * Starts `script --agent` in its own process (a benchmark's loopback agent, so it never shares the
 * measuring process's event loop) and resolves with the URL it prints as `{"url": …}`. The agent
 * lives until `stop()` closes its stdin.
 */
export async function startAgentProcess(
  script: string,
  /** More arguments for the script, after `--agent`. */
  args: readonly string[] = [],
): Promise<{ url: string; pid: number; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, '--agent', ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`agent process exited with ${code}`)));
    lines.once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
  });
  return { url, pid: child.pid!, stop: () => child.stdin.end() };
}

/**
 * The child side of {@link startAgentProcess}: prints the agent's URL as `{"url": …}` and keeps
 * the process alive until its stdin closes, then closes the agent and exits.
 */
export function serveAgentProcess(agent: { url: string; close(): Promise<void> }): void {
  process.stdout.write(`${JSON.stringify({ url: agent.url })}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => {
    void agent.close().then(() => process.exit(0));
  });
}
