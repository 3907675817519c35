import { describe, expect, it } from 'vitest';
import { isFleetgateError } from '../../protocol/index.js';
import { isPushUrlEntry } from '../config-server.js';
import { classifyAddress, createPushUrlPolicy } from './push-url.js';

const DNS: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34'],
  'rebind.example.com': ['93.184.216.35', '127.0.0.1'],
  'metadata.example.com': ['169.254.169.254'],
  'receiver.internal': ['10.20.3.4'],
  localhost: ['127.0.0.1', '::1'],
};
const resolve = (host: string): Promise<string[]> =>
  DNS[host] === undefined
    ? Promise.reject(new Error(`ENOTFOUND ${host}`))
    : Promise.resolve(DNS[host]);

async function refusal(
  policy: ReturnType<typeof createPushUrlPolicy>,
  url: string,
): Promise<string | undefined> {
  try {
    await policy.check(url);
    return undefined;
  } catch (error) {
    if (!isFleetgateError(error)) throw error;
    expect(error.code).toBe('FLEETGATE_PUSH_URL_REFUSED');
    return error.message;
  }
}

describe('push URL policy', () => {
  it('classifies addresses, IPv4 inside IPv6 as its IPv4 address', () => {
    expect(classifyAddress('127.0.0.5')).toBe('loopback');
    expect(classifyAddress('::1')).toBe('loopback');
    expect(classifyAddress('::ffff:127.0.0.1')).toBe('loopback');
    expect(classifyAddress('169.254.169.254')).toBe('link-local');
    expect(classifyAddress('fe80::1')).toBe('link-local');
    expect(classifyAddress('10.1.2.3')).toBe('private');
    expect(classifyAddress('172.31.0.1')).toBe('private');
    expect(classifyAddress('192.168.1.1')).toBe('private');
    expect(classifyAddress('fd00::1')).toBe('private');
    expect(classifyAddress('0.0.0.0')).toBe('reserved');
    expect(classifyAddress('93.184.216.34')).toBe('public');
    expect(classifyAddress('2606:2800:220:1::1')).toBe('public');
  });

  it('on a gateway beyond loopback refuses loopback, link-local, private and own addresses, by name too', async () => {
    const policy = createPushUrlPolicy({
      listenHost: '0.0.0.0',
      resolve,
      ownAddresses: ['203.0.113.10'],
    });
    expect(await refusal(policy, 'https://hooks.example.com/a2a')).toBeUndefined();
    for (const url of [
      'http://127.0.0.1:9/x',
      'http://localhost:9/x',
      'http://[::1]/x',
      'http://[::ffff:7f00:1]/x',
      'http://169.254.169.254/latest/meta-data/',
      'http://metadata.example.com/',
      'http://10.0.0.1/x',
      'http://receiver.internal/x',
      'http://rebind.example.com/x',
      'http://203.0.113.10:7420/callbacks',
      'http://0.0.0.0:7420/',
    ]) {
      expect(await refusal(policy, url), url).toContain(url);
    }
    expect(await refusal(policy, 'http://nowhere.example/x')).toContain('does not resolve');
    // Registered, it is taken: it is checked again, resolved, before every delivery.
    await expect(
      policy.check('http://nowhere.example/x', { unresolved: 'accept' }),
    ).resolves.toEqual([]);
    expect(await refusal(policy, 'ftp://hooks.example.com/x')).toContain('only http and https');
    expect(await refusal(policy, 'not a url')).toContain('not a URL');
  });

  it('on a loopback-only gateway takes loopback receivers, still not private ones', async () => {
    const policy = createPushUrlPolicy({ listenHost: '127.0.0.1', resolve, ownAddresses: [] });
    expect(await refusal(policy, 'http://127.0.0.1:9/hook')).toBeUndefined();
    expect(await refusal(policy, 'http://localhost:9/hook')).toBeUndefined();
    expect(await refusal(policy, 'http://169.254.169.254/')).toContain('link-local');
    expect(await refusal(policy, 'http://192.168.0.10/')).toContain('private');
  });

  it('with proxy.pushUrls takes only what an entry allows', async () => {
    const policy = createPushUrlPolicy({
      allow: ['https://hooks.example.com/a2a/', 'receiver.internal', '10.30.0.0/16', '.corp.test'],
      listenHost: '0.0.0.0',
      resolve: (host) =>
        host.endsWith('.corp.test') ? Promise.resolve(['10.9.9.9']) : resolve(host),
      ownAddresses: [],
    });
    expect(await refusal(policy, 'https://hooks.example.com/a2a/task-1')).toBeUndefined();
    expect(await refusal(policy, 'https://hooks.example.com/other')).toContain('proxy.pushUrls');
    expect(await refusal(policy, 'http://receiver.internal/x')).toBeUndefined();
    expect(await refusal(policy, 'http://10.30.4.5/x')).toBeUndefined();
    expect(await refusal(policy, 'http://a.corp.test/x')).toBeUndefined();
    expect(await refusal(policy, 'http://10.31.0.1/x')).toContain('proxy.pushUrls');
    const open = createPushUrlPolicy({ allow: ['public'], listenHost: '0.0.0.0', resolve });
    expect(await refusal(open, 'https://hooks.example.com/x')).toBeUndefined();
    expect(await refusal(open, 'http://rebind.example.com/x')).toContain('proxy.pushUrls');
  });

  it('knows the entries the configuration may hold', () => {
    for (const ok of [
      'public',
      'https://a.example/x',
      'host.internal',
      '.example.com',
      '10.0.0.0/8',
      '::1',
    ])
      expect(isPushUrlEntry(ok), ok).toBe(true);
    for (const bad of ['10.0.0.0/33', 'ftp://x', 'a b', '10.0.0.0/8/1'])
      expect(isPushUrlEntry(bad), bad).toBe(false);
  });
});
