/**
 * Which URLs a proxy client may register for push notifications. The gateway POSTs to every
 * registered URL, so an unchecked one lets any client with the proxy's role make the gateway call
 * what only the gateway can reach (its own loopback, the private network, a cloud's metadata
 * address at 169.254.169.254).
 *
 * Without `proxy.pushUrls` a gateway listening beyond loopback refuses URLs whose host is (or
 * resolves to) a loopback, link-local, private, unspecified, multicast or reserved address, or an
 * address of this machine; a gateway listening only on loopback — whose every caller is local
 * already — also allows loopback. With `proxy.pushUrls` only the URLs an entry allows are taken:
 * a URL prefix (`https://hooks.example.com/a2a/`), a host name (`receiver.internal`, or
 * `.example.com` for its subdomains), an address or CIDR range (`10.1.0.0/16`), or `public` for
 * every public address.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { FleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';

/** Options of {@link createPushUrlPolicy}. */
export interface PushUrlPolicyOptions {
  /** `proxy.pushUrls`; undefined for the default policy. */
  allow?: readonly string[] | undefined;
  /** `listen.host`: a loopback-only gateway allows loopback receivers by default. */
  listenHost: string;
  /** Resolves a host name to its addresses (default: the system resolver). */
  resolve?: (host: string) => Promise<string[]>;
  /** This machine's addresses (default: its interfaces' and `listenHost`). */
  ownAddresses?: readonly string[];
}

/** Decides whether a push URL may be registered. */
export interface PushUrlPolicy {
  /**
   * Resolves with the addresses checked when `url` may be called: a delivery connects to those
   * and no other (a name resolved again could lead elsewhere). With `unresolved: 'accept'`
   * (registration) a host name that does not resolve is taken, resolving to none, since its
   * addresses are checked before each delivery.
   *
   * @throws FleetgateError `FLEETGATE_PUSH_URL_REFUSED` naming the URL, the address and why.
   */
  check(url: string, options?: { unresolved?: 'accept' | 'refuse' }): Promise<string[]>;
}

/** What kind of address an IP is, for the default policy. */
type AddressClass = 'loopback' | 'link-local' | 'private' | 'reserved' | 'public';

const RANGES: readonly [string, number, 'ipv4' | 'ipv6', Exclude<AddressClass, 'public'>][] = [
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'private'],
  ['0.0.0.0', 8, 'ipv4', 'reserved'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['198.18.0.0', 15, 'ipv4', 'reserved'],
  ['224.0.0.0', 4, 'ipv4', 'reserved'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['::', 128, 'ipv6', 'reserved'],
  ['ff00::', 8, 'ipv6', 'reserved'],
];

const CLASSES = new Map<Exclude<AddressClass, 'public'>, BlockList>();
for (const [network, prefix, family, kind] of RANGES) {
  let list = CLASSES.get(kind);
  if (list === undefined) {
    list = new BlockList();
    CLASSES.set(kind, list);
  }
  list.addSubnet(network, prefix, family);
}

/** An IPv6 address that carries an IPv4 one (mapped, NAT64) as that IPv4 address. */
function unwrap(address: string): string {
  const mapped = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped === null ? address : mapped[1]!;
}

/** The class of an address (IPv4-mapped IPv6 addresses as their IPv4 address). */
export function classifyAddress(address: string): AddressClass {
  const plain = unwrap(address);
  const family = isIP(plain) === 6 ? 'ipv6' : 'ipv4';
  for (const [kind, list] of CLASSES) if (list.check(plain, family)) return kind;
  return 'public';
}

/** True for a host a loopback-only gateway's callers are on. */
function loopbackName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

interface Entry {
  matches(url: URL, addresses: readonly string[]): boolean;
}

function parseEntry(entry: string): Entry {
  if (entry === 'public') {
    return {
      matches: (_url, addresses) =>
        addresses.length > 0 && addresses.every((a) => classifyAddress(a) === 'public'),
    };
  }
  if (/^https?:\/\//i.test(entry)) {
    const prefix = new URL(entry).href;
    return { matches: (url) => url.href.startsWith(prefix) };
  }
  const [network, bits] = entry.split('/');
  const family = isIP(network ?? '');
  if (family !== 0) {
    const list = new BlockList();
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(network!, type);
    else list.addSubnet(network!, Number(bits), type);
    return {
      matches: (_url, addresses) =>
        addresses.length > 0 &&
        addresses.every((a) => {
          const plain = unwrap(a);
          return list.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
        }),
    };
  }
  const name = entry.toLowerCase();
  return {
    matches: (url) => (name.startsWith('.') ? url.hostname.endsWith(name) : url.hostname === name),
  };
}

const systemResolve = async (host: string): Promise<string[]> =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

function machineAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) out.push(info.address.replace(/%.*$/, ''));
  }
  return out;
}

/** Builds the push-URL policy of a gateway. */
export function createPushUrlPolicy(options: PushUrlPolicyOptions): PushUrlPolicy {
  const resolve = options.resolve ?? systemResolve;
  const bare = options.listenHost.replace(/^\[|\]$/g, '');
  const loopbackOnly =
    loopbackName(bare) || (isIP(bare) !== 0 && classifyAddress(bare) === 'loopback');
  const own = new Set([...(options.ownAddresses ?? machineAddresses()), bare].map(unwrap));
  const entries = options.allow?.map(parseEntry);

  const refuse = (url: string, reason: string, address?: string): never => {
    throw new FleetgateError(
      'FLEETGATE_PUSH_URL_REFUSED',
      `Push URL ${url} is refused: ${reason}.${entries === undefined ? ' Allow it with proxy.pushUrls.' : ''}`,
      { details: { url, reason, ...defined({ address }) } },
    );
  };

  return {
    async check(text, checkOptions = {}) {
      let url: URL;
      try {
        url = new URL(text);
      } catch (error) {
        throw new FleetgateError('FLEETGATE_PUSH_URL_REFUSED', `Push URL ${text} is not a URL.`, {
          cause: error,
          details: { url: text, reason: 'not a URL' },
        });
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        refuse(text, `only http and https URLs are taken (got ${url.protocol})`);
      }
      const host = url.hostname.replace(/^\[|\]$/g, '');
      let addresses: string[];
      if (isIP(host) !== 0) addresses = [host];
      else {
        try {
          addresses = await resolve(host);
        } catch (error) {
          // At registration a name that does not resolve yet is taken: what it resolves to is
          // checked before every delivery, where it is refused.
          if (checkOptions.unresolved === 'accept' && entries === undefined) return [];
          throw new FleetgateError(
            'FLEETGATE_PUSH_URL_REFUSED',
            `Push URL ${text} is refused: its host ${host} does not resolve.`,
            { cause: error, details: { url: text, reason: 'the host does not resolve' } },
          );
        }
        if (addresses.length === 0) refuse(text, `its host ${host} does not resolve`);
      }

      if (entries !== undefined) {
        if (!entries.some((e) => e.matches(url, addresses))) {
          refuse(text, 'no entry of proxy.pushUrls allows it');
        }
        return addresses;
      }
      for (const address of addresses) {
        const kind = classifyAddress(address);
        if (kind === 'loopback' && loopbackOnly) continue;
        if (kind !== 'public') {
          refuse(
            text,
            `${host === address ? 'it names' : `${host} resolves to`} ${address}, a ${kind} address${
              kind === 'loopback'
                ? ' (allowed by default only on a gateway listening on loopback)'
                : ''
            }`,
            address,
          );
        }
        if (own.has(unwrap(address))) {
          refuse(text, `${address} is an address of this gateway's machine`, address);
        }
      }
      return addresses;
    },
  };
}
