/**
 * `.ci/run`, run for real with `npm` and `apt-get` replaced by recorders on its PATH: it installs
 * with `npm ci`, runs the README's test command, runs the fault campaign within CI's default
 * budget (and leaves it out of a short one), and waits for the dpkg lock instead of failing when
 * another apt run holds it.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './support/gateway-service.js';
import { requireNats, requirePostgres } from './support/services.js';

// The script starts PostgreSQL and NATS when they are down; here they must be up already.
const servicesUp = (await requirePostgres()) && (await requireNats());

/** Tools the script uses besides the recorded ones (no chromium: the apt path is taken). */
const TOOLS = ['bash', 'env', 'dirname', 'date', 'seq', 'sleep', 'head', 'ls', 'cat'];

describe.skipIf(!servicesUp)('.ci/run', () => {
  let dir: string;
  let bin: string;
  let calls: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-ci-'));
    bin = join(dir, 'bin');
    calls = join(dir, 'calls.log');
    mkdirSync(bin);
    for (const tool of TOOLS) {
      const found = spawnSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' });
      symlinkSync(found.stdout.trim(), join(bin, tool));
    }
    const recorder = (name: string, body = ''): void => {
      const file = join(bin, name);
      writeFileSync(
        file,
        `#!/usr/bin/env bash\nprintf '%s\\n' "${name} $*" >> "${calls}"\n${body}exit 0\n`,
      );
      chmodSync(file, 0o755);
    };
    recorder('npm');
    // Like apt-get while another apt run holds the lock: it fails at once unless told to wait.
    recorder(
      'apt-get',
      `case " $* " in *" -o DPkg::Lock::Timeout=300 "*) ;; *) echo "E: Could not get lock /var/lib/dpkg/lock-frontend" >&2; exit 100;; esac\n`,
    );
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function run(env: Record<string, string> = {}): {
    code: number | null;
    out: string;
    calls: string[];
  } {
    writeFileSync(calls, '');
    const result = spawnSync(join(ROOT, '.ci/run'), [], {
      env: { PATH: bin, HOME: dir, ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });
    return {
      code: result.status,
      out: `${result.stdout}${result.stderr}`,
      calls: readFileSync(calls, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    };
  }

  it('installs, tests and runs the fault campaign within the default budget', () => {
    const { code, out, calls: made } = run();
    expect(code, out).toBe(0);
    expect(made.filter((c) => c.startsWith('npm'))).toEqual([
      'npm ci --no-audit --no-fund',
      'npm test',
      'npm run test:faults',
    ]);
  });

  it('waits for the dpkg lock on every apt-get run', () => {
    const { code, out, calls: made } = run();
    expect(code, out).toBe(0);
    const apt = made.filter((c) => c.startsWith('apt-get'));
    expect(apt).toHaveLength(2);
    for (const call of apt) expect(call).toContain('-o DPkg::Lock::Timeout=300');
  });

  it('leaves the fault campaign out of a budget too short for it', () => {
    const { code, out, calls: made } = run({ FLEETGATE_CI_BUDGET_SECONDS: '600' });
    expect(code, out).toBe(0);
    expect(made).not.toContain('npm run test:faults');
    expect(out).toContain('skipping npm run test:faults');
  });

  it("gives the campaign room in CI's 90 minutes after the suite", () => {
    const script = readFileSync(join(ROOT, '.ci/run'), 'utf8');
    const budget = Number(/FLEETGATE_CI_BUDGET_SECONDS:-(\d+)/.exec(script)?.[1]);
    const estimate = Number(/FAULTS_ESTIMATE_SECONDS=(\d+)/.exec(script)?.[1]);
    expect(budget).toBeLessThanOrEqual(90 * 60);
    // The suite takes up to about 30 minutes under load; the campaign still fits after it.
    expect(budget - estimate).toBeGreaterThanOrEqual(30 * 60);
  });
});
