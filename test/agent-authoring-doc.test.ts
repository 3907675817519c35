/**
 * The complete agent of docs/agent-authoring.md, run as written: the code block is taken from the
 * document, imported as a module (`fleetgate/agent` resolves to the kit's source), called through a
 * gateway and checked with `checkAgent`.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAgent } from '../src/agent/index.js';
import { ALLOW_ALL } from '../src/dispatch/index.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import type { Gateway } from '../src/service/index.js';
import { createGateway } from '../src/service/index.js';

const DOC = fileURLToPath(new URL('../docs/agent-authoring.md', import.meta.url));
const GENERATED = fileURLToPath(new URL('./.generated/', import.meta.url));

/** The first `ts` code block under a heading of the document. */
function codeBlockUnder(markdown: string, heading: string): string {
  const section = markdown.slice(markdown.indexOf(`\n## ${heading}\n`));
  const match = /```ts\n([\s\S]*?)\n```/.exec(section);
  if (match === null) throw new Error(`no ts code block under "## ${heading}"`);
  return match[1]!;
}

async function freePort(): Promise<number> {
  const probe: Server = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('docs/agent-authoring.md', () => {
  const code = codeBlockUnder(readFileSync(DOC, 'utf8'), 'A complete agent');
  const file = join(GENERATED, `agent-authoring-${process.pid}.ts`);
  let server: Server;
  let url: string;
  let dir: string;
  let gw: Gateway;
  const deltas: EventEnvelope[] = [];

  beforeAll(async () => {
    mkdirSync(GENERATED, { recursive: true });
    writeFileSync(file, code);
    const port = await freePort();
    process.env.PORT = String(port);
    url = `http://127.0.0.1:${port}`;
    ({ server } = (await import(pathToFileURL(file).href)) as { server: Server });
    if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-doc-'));
    gw = await createGateway(
      { store: `sqlite:${join(dir, 'gw.db')}`, agents: [{ name: 'triage', url }] },
      { gate: ALLOW_ALL, seeds: { board: { data: { untriaged: 7 } } } },
    );
    await gw.events.subscribe('world.state.delta', (e) => void deltas.push(e), { name: 'doc' });
  });

  afterAll(async () => {
    delete process.env.PORT;
    await gw?.close();
    await new Promise((resolve) => server?.close(resolve));
    rmSync(GENERATED, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows a complete agent in under 40 lines', () => {
    expect(code).toContain("from 'fleetgate/agent'");
    expect(code.split('\n').length).toBeLessThan(40);
  });

  it('runs as written: the gateway gates it as declared and lifts its delta once', async () => {
    expect(gw.agents.effectiveRadius('triage', 'triage').radius).toBe('project');
    const record = await gw
      .dispatch({ agent: 'triage', skill: 'triage', text: 'issue #12' })
      .answered();
    expect(record.status).toBe('completed');
    await gw.settle();
    expect(deltas.map((e) => e.payload)).toEqual([
      expect.objectContaining({
        source: 'triage',
        skill: 'triage',
        taskId: record.taskId,
        deltas: [{ domain: 'board', path: 'data.untriaged', op: 'inc', value: -1 }],
      }),
    ]);
    expect((await gw.world.getDomain('board'))?.state).toEqual({ data: { untriaged: 6 } });
  });

  it('passes check-agent with nothing to report', async () => {
    const report = await checkAgent(url, { skill: 'triage' });
    expect(report.diagnostics).toEqual([]);
    expect(report.calls.map((c) => [c.state, c.echoedExtensions, c.deltas.length])).toEqual([
      ['completed', report.declarations.extensions, 1],
    ]);
  });
});
