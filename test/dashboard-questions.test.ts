/**
 * An agent's question reads as a question on the dashboard, never as an approval: real Chromium
 * against `fleetgate start --config` run as a child process, with an agent whose task asks which
 * environment to deploy to (`input-required`). The inbox shows the question with an answer box
 * and an Answer button; once alice answers, the approval's page says "answered by alice" with her
 * answer, the call's story says "asked: …" then "answered by alice: …", and the word "approved"
 * appears nowhere for it. The agent's and alice's words carry markup-like text, shown as typed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, textPart, type RunningAgent } from '../examples/agents/index.js';
import { BLAST_V1_URI } from '../src/protocol/index.js';
import { getJson } from './support/api-json.js';
import {
  ensureDashboardBuilt,
  launchBrowser,
  signIn,
  type RunningBrowser,
} from './support/browser.js';
import { eventually, startServiceProcess, type ServiceProcess } from './support/gateway-service.js';

const SHOTS = join(import.meta.dirname, '..', 'test-results', 'dashboard');
const TOKENS = {
  root: 'questions-root-admin-token-01',
  alice: 'questions-alice-approver-tok1',
} as const;
const ROLES = { root: 'admin', alice: 'approver' } as const;

/** Markup-like words: the page must show them as text and build no element from them. */
const TARGET = 'v2 <em id="q-markup">now</em>';
const QUESTION = `Which environment for ${TARGET}?`;
const ANSWER = 'staging <img id="a-markup" src="x"> & "prod" later';

interface Approval {
  id: string;
  kind: string;
  dispatchId: string;
  status: string;
  question: string | null;
  answer?: string | null;
}

describe('an agent’s question and its answer in the dashboard', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;
  let browser: RunningBrowser;
  const contexts: BrowserContext[] = [];
  const asked = new Set<string>();

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ensureDashboardBuilt();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-dashboard-questions-'));
    agent = await startAgent({
      name: 'deployer',
      skills: [{ id: 'deploy' }],
      extensions: [{ uri: BLAST_V1_URI, params: { skills: { deploy: { radius: 'self' } } } }],
      // The first message of a task asks a question; the answer on the same task completes it.
      behaviour: (call) => {
        if (!asked.has(call.taskId)) {
          asked.add(call.taskId);
          return { state: 'input-required', statusText: `Which environment for ${call.text}?` };
        }
        return { artifacts: [[textPart(`deployed to ${call.text}`)]] };
      },
    });
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'agents:',
        `  - { name: deployer, url: ${agent.url} }`,
        'policy:',
        '  sweepInterval: 1s',
        'auth:',
        '  tokens:',
        ...Object.entries(ROLES).map(
          ([name, role]) =>
            `    - { name: ${name}, tokenEnv: QUESTIONS_${name.toUpperCase()}, roles: [${role}] }`,
        ),
      ].join('\n'),
    );
    gw = await startServiceProcess({
      cwd: dir,
      args: ['--config', config],
      env: Object.fromEntries(
        Object.entries(TOKENS).map(([name, t]) => [`QUESTIONS_${name.toUpperCase()}`, t]),
      ),
    });
    browser = await launchBrowser();
  }, 90_000);

  afterAll(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await gw?.stop('SIGTERM');
    await agent?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function open(token: string, hash: string): Promise<Page> {
    const { context, page } = await browser.open(`${gw.url}/${hash}`);
    contexts.push(context);
    await signIn(page, token);
    await page.locator('[data-stream=live]').waitFor();
    return page;
  }

  /** A call to `deploy` that asks its question; the question as the inbox holds it. */
  async function ask(text: string): Promise<Approval> {
    const call = await getJson<{ id: string }>(gw.url, '/api/dispatch', TOKENS.root, {
      agent: 'deployer',
      skill: 'deploy',
      text,
    });
    return eventually(
      async () =>
        (
          await getJson<{ approvals: Approval[] }>(gw.url, '/api/approvals', TOKENS.root)
        ).approvals.find((a) => a.dispatchId === call.id && a.kind === 'checkpoint'),
      15_000,
      'the question in the inbox',
    );
  }

  /** The rendered text of `where`, and that none of the words' markup became an element. */
  async function textOf(where: Locator): Promise<string> {
    expect(await where.locator('#q-markup, #a-markup, em, img').count()).toBe(0);
    return (await where.textContent()) ?? '';
  }

  it('shows the question, an answer box, then who answered what; never "approved"', async () => {
    const question = await ask(TARGET);
    expect(question.question).toBe(QUESTION);

    const page = await open(TOKENS.alice, '#/approvals');
    const card = page.locator(`li.request[data-approval="${question.id}"]`);
    await card.waitFor();
    expect(await card.locator('.badge.mode').textContent()).toBe('question');
    expect(await textOf(card.locator('[data-question]'))).toContain(QUESTION);
    expect(await card.locator('button.approve').count()).toBe(0);
    expect(await textOf(card)).not.toMatch(/approved/i);
    await card.screenshot({ path: join(SHOTS, 'question-inbox.png') });

    await card.getByLabel('Your answer').fill(ANSWER);
    await card.getByRole('button', { name: 'Answer', exact: true }).click();
    await card.waitFor({ state: 'detached' });

    // The approval's page: the question, who answered, the answer as typed.
    await page.goto(`${gw.url}/#/approvals/${question.id}`);
    const detail = page.locator(`section.approval-detail[data-approval="${question.id}"]`);
    await detail.locator('[data-answer]').waitFor();
    expect(await detail.locator('h2').textContent()).toBe('Question: deployer / deploy');
    expect(await textOf(detail.locator('[data-question]'))).toContain(QUESTION);
    const answer = await textOf(detail.locator('[data-answer]'));
    expect(answer).toContain('answered by alice');
    expect(answer).toContain(ANSWER);
    expect(await detail.locator('[data-vote=alice]').textContent()).toMatch(/^answered by alice/);
    expect(await textOf(detail.locator('[data-target=decided]'))).toContain('answered by alice');
    expect(await textOf(detail)).not.toMatch(/approved/i);
    await detail.screenshot({ path: join(SHOTS, 'question-answered.png') });

    // The call's story: asked, answered by alice with her answer, and the call done.
    await page.goto(`${gw.url}/#/calls/${question.dispatchId}`);
    const story = page.locator(`section.call[data-call="${question.dispatchId}"]`);
    await page
      .locator(`section.call[data-call="${question.dispatchId}"][data-status=completed]`)
      .waitFor();
    expect(await textOf(story.locator('[data-step=question] strong'))).toBe(`asked: ${QUESTION}`);
    await expect
      .poll(() => story.locator('[data-step=answered] strong').allTextContents())
      .toEqual([`answered by alice: ${ANSWER}`]);
    expect(await textOf(story)).not.toMatch(/approved/i);
    await story.screenshot({ path: join(SHOTS, 'question-call.png') });

    // The history: a question, answered by alice.
    await page.goto(`${gw.url}/#/approvals`);
    await page.getByRole('tab', { name: 'History' }).click();
    const row = page.locator(`table.history tr[data-approval="${question.id}"]`);
    await row.waitFor();
    expect(await row.locator('[data-kind]').textContent()).toBe('question');
    expect(await textOf(row)).toContain('answered by alice');
    expect(await textOf(row)).not.toMatch(/approved/i);

    // The search behind the history carries the answer, and finds a question by its words or its
    // answer's.
    for (const words of ['environment', 'later']) {
      const found = await getJson<{ items: Approval[] }>(
        gw.url,
        `/api/search/approvals?kind=checkpoint&text=${words}`,
        TOKENS.root,
      );
      expect(found.items.map((a) => [a.id, a.question, a.answer])).toEqual([
        [question.id, QUESTION, ANSWER],
      ]);
    }
  }, 90_000);

  it('says a rejected question was rejected, on its page and in the call’s story', async () => {
    const question = await ask('v3');
    await getJson(gw.url, `/api/approvals/${question.id}/reject`, TOKENS.alice, {
      reason: 'not this week',
    });
    const page = await open(TOKENS.alice, `#/approvals/${question.id}`);
    const detail = page.locator(`section.approval-detail[data-approval="${question.id}"]`);
    await detail.locator('[data-target=decided]').waitFor();
    expect(await detail.locator('[data-target=decided] .badge').textContent()).toBe(
      'rejected by alice',
    );
    expect(await detail.locator('[data-answer]').count()).toBe(0);
    expect(await textOf(detail)).not.toMatch(/approved|answered by/i);

    await page.goto(`${gw.url}/#/calls/${question.dispatchId}`);
    const story = page.locator(`section.call[data-call="${question.dispatchId}"]`);
    await story.locator('[data-step=decided-rejected]').waitFor();
    expect(await story.locator('[data-step=question] strong').textContent()).toBe(
      'asked: Which environment for v3?',
    );
    expect(await story.locator('[data-step=decided-rejected] strong').textContent()).toBe(
      'rejected by alice',
    );
    expect(await textOf(story)).not.toMatch(/approved|answered by/i);
  }, 60_000);
});
