import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import {
  createEchoedExtensionsReader,
  mergeExtensionHeader,
  readEchoedExtensions,
} from './headers.js';

describe('mergeExtensionHeader', () => {
  it('merges caller header, caller URIs and active URIs into one A2A-Extensions entry', () => {
    expect(
      mergeExtensionHeader(
        { 'a2a-extensions': 'urn:caller, urn:a', Authorization: 'Bearer t' },
        ['urn:mine'],
        ['urn:a', 'urn:b'],
      ),
    ).toEqual({ Authorization: 'Bearer t', 'A2A-Extensions': 'urn:caller,urn:a,urn:mine,urn:b' });
  });

  it('folds the v0.3 spelling in and drops it', () => {
    expect(mergeExtensionHeader({ 'X-A2A-Extensions': 'urn:old' }, undefined, ['urn:a'])).toEqual({
      'A2A-Extensions': 'urn:old,urn:a',
    });
  });

  it('sends no extension header when there is nothing to activate', () => {
    expect(mergeExtensionHeader({ 'A2A-Extensions': ' ' }, [], [])).toEqual({});
  });

  it('never loses a URI and never repeats one', () => {
    // A header value is a comma-separated list, so a URI never contains a comma or blank.
    const uri = fc.webUrl().filter((u) => !/[,\s]/.test(u));
    fc.assert(
      fc.property(fc.array(uri), fc.array(uri), fc.array(uri), (header, caller, active) => {
        const out = mergeExtensionHeader({ 'A2A-Extensions': header.join(',') }, caller, active);
        const sent = (out['A2A-Extensions'] ?? '').split(',').filter((s) => s !== '');
        expect(new Set(sent)).toEqual(new Set([...header, ...caller, ...active]));
        expect(sent.length).toBe(new Set(sent).size);
      }),
    );
  });
});

describe('readEchoedExtensions', () => {
  it('reads either spelling and reports absence as undefined', () => {
    expect(readEchoedExtensions(new Headers({ 'A2A-Extensions': 'urn:a, urn:b' }))).toEqual([
      'urn:a',
      'urn:b',
    ]);
    expect(readEchoedExtensions(new Headers({ 'X-A2A-Extensions': 'urn:a' }))).toEqual(['urn:a']);
    expect(readEchoedExtensions(new Headers())).toBeUndefined();
  });
});

describe('createEchoedExtensionsReader', () => {
  it('reads like readEchoedExtensions and hands each call its own list', () => {
    const read = createEchoedExtensionsReader();
    const headers = new Headers({ 'A2A-Extensions': 'urn:a, urn:b' });
    const first = read(headers);
    expect(first).toEqual(['urn:a', 'urn:b']);
    first?.push('urn:mutated');
    expect(read(headers)).toEqual(['urn:a', 'urn:b']);
    expect(read(new Headers({ 'X-A2A-Extensions': 'urn:c' }))).toEqual(['urn:c']);
    expect(read(new Headers())).toBeUndefined();
  });
});
