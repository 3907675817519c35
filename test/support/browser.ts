/**
 * Real Chromium for the dashboard suites and the `dashboard-load` benchmark: the system binary
 * (Debian's `chromium`, which `.ci/run` installs) driven by `playwright-core`, headless. Each launch
 * gets a fresh profile directory: playwright-core creates one and removes it on close (it refuses
 * a `--user-data-dir` flag on `launch`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Where the system Chromium is looked for (`FLEETGATE_CHROMIUM` first). */
export function chromiumPath(): string | undefined {
  const candidates = [
    process.env.FLEETGATE_CHROMIUM,
    '/usr/bin/chromium',
    '/usr/bin/chromium-browser',
    '/usr/bin/google-chrome',
  ];
  return candidates.find((c): c is string => c !== undefined && c !== '' && existsSync(c));
}

/** A launched browser. */
export interface RunningBrowser {
  browser: Browser;
  /** A new isolated context (its own session storage) with a page open at `url`. */
  open(
    url: string,
    options?: { width?: number; height?: number },
  ): Promise<{ context: BrowserContext; page: Page }>;
  close(): Promise<void>;
}

/** Launches headless Chromium; throws with what to install when there is none. */
export async function launchBrowser(): Promise<RunningBrowser> {
  const executablePath = chromiumPath();
  if (executablePath === undefined) {
    throw new Error('No Chromium found: apt-get install -y chromium (or set FLEETGATE_CHROMIUM).');
  }
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async open(url, options = {}) {
      const context = await browser.newContext({
        viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
      });
      // Fail a step with what it waited for, well inside the test's own timeout.
      context.setDefaultTimeout(10_000);
      const page = await context.newPage();
      await page.goto(url);
      return { context, page };
    },
    async close() {
      await browser.close();
    },
  };
}

/** Signs the page in with `token` through the login form. */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('header.top');
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The newest modification time under `dir`, in ms. */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/**
 * Builds the dashboard into `dist/dashboard/` when the build is missing or older than its
 * sources (`npm ci` builds it through `prepare`; an edit since then would be tested stale).
 */
export function ensureDashboardBuilt(): void {
  const index = join(ROOT, 'dist', 'dashboard', 'index.html');
  const sources = Math.max(
    newest(join(ROOT, 'dashboard')),
    statSync(join(ROOT, 'src', 'protocol', 'radius-palette.ts')).mtimeMs,
  );
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  execFileSync(
    process.execPath,
    [
      join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'),
      'build',
      '--config',
      join(ROOT, 'dashboard', 'vite.config.ts'),
    ],
    {
      cwd: ROOT,
      stdio: 'inherit',
    },
  );
}
