/**
 * True when process `pid` runs on this host: signal 0 only checks, and EPERM (the process is
 * another user's) means it exists. A stale pid file or lease names a process that is gone.
 */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
