import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isFleetgateError } from '../protocol/index.js';
import {
  DEFAULT_LIMITS,
  checkConfig,
  loadConfigFile,
  parseConfig,
  parseDuration,
  parseSize,
} from './config.js';

const dir = mkdtempSync(join(tmpdir(), 'fleetgate-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `text` to a file and returns the problems `loadConfigFile` reports for it. */
async function problemsOf(text: string, secrets?: Record<string, string>): Promise<string[]> {
  const file = join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  try {
    await loadConfigFile(file, secrets === undefined ? {} : { secrets: (n) => secrets[n] });
  } catch (error) {
    if (!isFleetgateError(error, 'FLEETGATE_CONFIG_INVALID')) throw error;
    expect(error.message).not.toContain('\n');
    return (error.details?.problems as string[]).map((p) => p.replace(`${file}:`, ''));
  }
  return [];
}

describe('configuration', () => {
  it('fills the embedded defaults', () => {
    const config = parseConfig({});
    expect(config).toMatchObject({
      listen: { host: '127.0.0.1', port: 7420 },
      store: 'sqlite:./data/fleetgate.db',
      bus: 'memory',
      cards: { refreshInterval: 600_000, timeout: 5000, concurrency: 16, staleAfterFailures: 3 },
      policy: { unknownRadius: 'public', approvalAtOrAbove: 'repo' },
    });
  });

  it('parses durations and reports every problem of an object with its path', () => {
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('soon')).toBeUndefined();
    const { problems } = checkConfig({
      cards: { refreshInterval: 'soon', concurrency: 0 },
      bus: 'kafka://x',
      domains: { deploy: { minRadius: 'x' } },
    });
    expect(problems.map((p) => [p.path.join('.'), p.message])).toEqual([
      ['bus', 'must be memory or nats://host:port (got "kafka://x")'],
      ['cards.refreshInterval', 'must be a duration like 5s, 10m or 1h (got "soon")'],
      ['cards.concurrency', 'must be at least 1 (got 0)'],
      ['domains.deploy.minRadius', 'must be one of self, project, repo, fleet, public (got "x")'],
    ]);
  });

  it('reports 8 different problems of a file in one run, with lines, columns and paths', async () => {
    const problems = await problemsOf(
      [
        'lisen: { port: 7420 }', // 1 unknown key, a typo
        'store: mysql://db/fleet', // 2 unsupported store
        'cards:',
        '  refreshInterval: often', // 3 not a duration
        'policy:',
        '  unknownRadius: everything', // 4 not an allowed value
        'bus: memory',
        'bus: memory', // 5 written twice
        'agents:',
        '  - name: quinn',
        '    url: http://127.0.0.1:8080',
        '  - name: quinn', // 6 name used twice
        '    url: ftp://127.0.0.1:8081', // 7 not http(s)
        '  - name: ava',
        '    urll: http://127.0.0.1:8082', // 8 unknown key in an agent entry (and url missing)
        '',
      ].join('\n'),
    );
    expect(problems).toEqual([
      '1:1 lisen: unknown key; did you mean "listen"?',
      '2:8 store: must be sqlite:PATH or postgres://user@host:port/database (got "mysql://db/fleet")',
      '4:20 cards.refreshInterval: must be a duration like 5s, 10m or 1h (got "often")',
      '6:18 policy.unknownRadius: must be one of self, project, repo, fleet, public, proceed (got "everything")',
      '8:1 bus: duplicate key (first written at line 7)',
      '12:11 agents[1].name: agent name "quinn" is already used by agents[0]',
      '13:10 agents[1].url: must be an http:// or https:// URL (got "ftp://127.0.0.1:8081")',
      '14:5 agents[2].url: is required',
      '15:5 agents[2].urll: unknown key; did you mean "url"?',
    ]);
  });

  it('refuses store and bus URL options at their line, naming the option, the rule and the accepted ones', async () => {
    const problems = await problemsOf(
      [
        'store: postgres://fg@db:5432/fleet?schema=Bad-Schema;drop',
        'bus: nats://nats:4222?streem=X&prefx=y&stream=dw.bad',
        '',
      ].join('\n'),
    );
    expect(problems).toEqual([
      '1:8 store: ?schema= must be a schema name the store takes: 1 to 63 of a-z, 0-9 and _, not starting with a digit (got "Bad-Schema;drop")',
      '2:6 bus: unknown query option "streem"; did you mean "stream"? (allowed: stream, prefix)',
      '2:6 bus: unknown query option "prefx"; did you mean "prefix"? (allowed: stream, prefix)',
      '2:6 bus: ?stream= must be a JetStream stream name: 1 to 255 letters, digits, _ and - (no ., *, >, whitespace or path separators) (got "dw.bad")',
    ]);
    expect(await problemsOf('bus: nats://nats:4222?prefix=dw.x\n')).toEqual([
      '1:6 bus: ?prefix= must be one subject token, events being sent as <prefix>.<topic>: letters, digits, _ and - (no ., *, > or whitespace) (got "dw.x")',
    ]);
    expect(
      parseConfig({
        store: 'postgres://fg@db/fleet?schema=gw_b&sslmode=require',
        bus: 'nats://nats:4222?stream=GW_B&prefix=gw_b',
      }),
    ).toMatchObject({
      store: 'postgres://fg@db/fleet?schema=gw_b&sslmode=require',
      bus: 'nats://nats:4222?stream=GW_B&prefix=gw_b',
    });
  });

  it('never shows the password of a store URL in a problem', async () => {
    const problems = await problemsOf(
      'store: mysql://fg:hunter2@db/fleet\nagents: [{ name: a, url: "ftp://u:hunter2@h" }]\n',
    );
    expect(problems).toEqual([
      '1:8 store: must be sqlite:PATH or postgres://user@host:port/database (got "mysql://fg:***@db/fleet")',
      '2:26 agents[0].url: must be an http:// or https:// URL (got "ftp://u:***@h")',
    ]);
    expect(JSON.stringify(problems)).not.toContain('hunter2');
  });

  it('reads whether calls to an agent may be streamed, and names a value that is not a boolean', async () => {
    const file = join(dir, 'prefer-streaming.yaml');
    writeFileSync(
      file,
      'agents:\n  - { name: a, url: "http://a.test", preferStreaming: false }\n' +
        '  - { name: b, url: "http://b.test" }\n',
    );
    const config = await loadConfigFile(file, {});
    expect(
      (config.agents as { preferStreaming?: boolean }[]).map((a) => a.preferStreaming),
    ).toEqual([false, undefined]);
    expect(
      await problemsOf('agents: [{ name: a, url: "http://a.test", preferStreaming: "no" }]\n'),
    ).toEqual(['1:60 agents[0].preferStreaming: must be true or false (got "no")']);
  });

  it('names unset secrets of valid agents only when asked to check the environment', async () => {
    const text =
      'agents:\n  - name: quinn\n    url: http://127.0.0.1:8080\n    auth: { bearerEnv: QUINN_TOKEN, headersEnv: { X-Key: KEY } }\n';
    expect(await problemsOf(text)).toEqual([]);
    expect(await problemsOf(text, { KEY: 'k' })).toEqual([
      '4:24 agents[0].auth.bearerEnv: QUINN_TOKEN is not set in the environment',
    ]);
    expect(await problemsOf(text, { KEY: 'k', QUINN_TOKEN: 't' })).toEqual([]);
  });

  it('lists the allowed keys when no known key is close, and reports YAML syntax with its line', async () => {
    expect(await problemsOf('cards: { zzz: 1 }\n')).toEqual([
      '1:10 cards.zzz: unknown key (allowed: refreshInterval, timeout, concurrency, staleAfterFailures)',
    ]);
    expect(await problemsOf('agents: [\nstore: x\n')).toEqual([
      expect.stringMatching(/^2:\d+ not valid YAML: /),
    ]);
    expect(await problemsOf('- just\n- a list\n')).toEqual([
      '1:1 must be a mapping of keys (got a list)',
    ]);
  });

  it("lists the API tokens the gateway would refuse with the file's other problems, each at its line", async () => {
    const text = [
      'policy: { vetoWindow: 0s }',
      'auth:',
      '  tokens:',
      '    - { name: alice, tokenEnv: SHORT, roles: [admin] }',
      '    - { name: bob, tokenEnv: UNSET, roles: [operator] }',
      '    - { name: alice, tokenEnv: GOOD, roles: [viewer] }',
      '',
    ].join('\n');
    expect(await problemsOf(text, { SHORT: 'abc', GOOD: 'x'.repeat(16) })).toEqual([
      expect.stringMatching(/^1:\d+ policy\.vetoWindow: /),
      '4:32 auth.tokens[0].tokenEnv: SHORT holds fewer than 16 characters',
      '5:30 auth.tokens[1].tokenEnv: UNSET is not set in the environment',
      '6:15 auth.tokens[2].name: is already the name of auth.tokens[0] (got "alice")',
    ]);
    // Without the environment (config check --no-env), the names are still checked.
    expect(await problemsOf(text)).toEqual([
      expect.stringMatching(/^1:\d+ policy\.vetoWindow: /),
      '6:15 auth.tokens[2].name: is already the name of auth.tokens[0] (got "alice")',
    ]);
  });

  it("reports aliases that expand past the limit (an alias bomb) at the first alias, as the file's problem", async () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]',
      '',
    ].join('\n');
    expect(await problemsOf(bomb)).toEqual([
      '2:8 not usable YAML: its aliases (*name) expand to more than 100 nodes; write the values out instead',
    ]);
    // A few aliases, as configuration files use them, still read.
    const aliased =
      'agents:\n  - { name: a, url: &u http://127.0.0.1:1 }\n  - { name: b, url: *u }\n';
    expect(await problemsOf(aliased)).toEqual([]);
  });

  it('accepts the sample of docs/configuration.md', async () => {
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    const sample = /```yaml\n([\s\S]*?)```/u.exec(doc)?.[1];
    expect(sample).toContain('agents:');
    expect(await problemsOf(sample!)).toEqual([]);
  });

  it('names an unreadable file with its own code', async () => {
    await expect(loadConfigFile(join(dir, 'absent.yaml'))).rejects.toSatisfy((e: unknown) =>
      isFleetgateError(e, 'FLEETGATE_FILE_ACCESS_FAILED'),
    );
  });

  it('reads the limits section: sizes with units, durations, defaults, and every bad value with its path', () => {
    expect(parseConfig({}).limits).toEqual(DEFAULT_LIMITS);
    expect(parseSize('512KiB')).toBe(524_288);
    expect(parseSize('4 MiB')).toBe(4_194_304);
    expect(parseSize('1MB')).toBe(1_000_000);
    expect(parseSize(300)).toBe(300);
    expect(parseSize('lots')).toBeUndefined();
    expect(
      parseConfig({
        limits: { eventBytes: '256KiB', domainBytes: 1 << 20, agentResponseTimeout: '30s' },
      }).limits,
    ).toMatchObject({ eventBytes: 262_144, domainBytes: 1_048_576, agentResponseTimeout: 30_000 });
    expect(() =>
      parseConfig({ limits: { eventBytes: '1KiB', pushBodyBytes: 'huge', extra: 1 } }, 'f.yaml'),
    ).toThrow(
      expect.objectContaining({
        code: 'FLEETGATE_CONFIG_INVALID',
        message: expect.stringMatching(
          /limits\.eventBytes: must be at least 71680 bytes[\s\S]*limits\.pushBodyBytes: must be a size/,
        ),
      }),
    );
  });
  it('checks the proxy keys: durations, roles, and agent names that exist', async () => {
    const config = parseConfig({
      agents: [{ name: 'ops', url: 'http://127.0.0.1:9101' }],
      proxy: { holdFor: '5s', agents: { ops: { role: 'approver' } } },
    });
    expect(config.proxy).toMatchObject({
      holdFor: 5000,
      role: 'operator',
      agents: { ops: { role: 'approver' } },
      push: { attempts: 5, backoff: 1000, timeout: 10_000 },
    });
    expect(parseConfig({}).proxy.holdFor).toBe(30_000);
    const problems = await problemsOf(
      [
        'agents: [{ name: ops, url: "http://127.0.0.1:9101" }]',
        'proxy: { role: boss, agents: { nobody: { role: viewer } } }',
      ].join('\n'),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining('proxy.role'),
        expect.stringContaining('proxy.agents.nobody: no agent named "nobody" in agents'),
      ]),
    );
  });
});
