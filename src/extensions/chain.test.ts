import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import { readDeclarations } from '../protocol/index.js';
import {
  SkillCallChain,
  createHookFailureLog,
  createSkillCallContext,
  type HookFailure,
  type HookFailureSink,
} from './chain.js';
import { createStateKey } from './state.js';
import type { CallOutcome, Extension, RegisteredExtension } from './types.js';

const declarations = readDeclarations({});
const task = {
  id: 't1',
  contextId: 'c1',
  status: undefined,
  artifacts: [],
  history: [],
  metadata: undefined,
};
const OK: CallOutcome = { ok: true, task };

function context(metadata?: Record<string, unknown>) {
  return createSkillCallContext({
    agent: 'a',
    skill: 's',
    correlationId: 'corr',
    metadata,
    signal: new AbortController().signal,
    declarations,
  });
}

function collectingSink(): HookFailureSink & { failures: HookFailure[] } {
  const failures: HookFailure[] = [];
  return {
    failures,
    report(failure) {
      failures.push(failure);
      return Promise.resolve();
    },
  };
}

interface Spec {
  name: string;
  hasBefore: boolean;
  hasAfter: boolean;
  beforeThrows: boolean;
  afterThrows: boolean;
  required: boolean;
  /** `before` finishes synchronously (default: it awaits first). */
  syncBefore?: boolean;
  /** `after` returns a promise, which rejects when it throws (default: synchronous). */
  asyncAfter?: boolean;
}

function build(specs: readonly Spec[], log: string[]): RegisteredExtension[] {
  return specs.map((s) => {
    const extension: Extension = { uri: `urn:${s.name}`, description: s.name };
    if (s.hasBefore) {
      extension.before =
        s.syncBefore === true
          ? () => {
              log.push(`before ${s.name}`);
              if (s.beforeThrows) throw new Error(`boom ${s.name}`);
            }
          : async () => {
              await Promise.resolve();
              log.push(`before ${s.name}`);
              if (s.beforeThrows) throw new Error(`boom ${s.name}`);
            };
    }
    if (s.hasAfter) {
      extension.after =
        s.asyncAfter === true
          ? async (_ctx, outcome) => {
              await Promise.resolve();
              log.push(`after ${s.name} ${outcome.ok ? 'ok' : 'fail'}`);
              if (s.afterThrows) throw new Error(`boom after ${s.name}`);
            }
          : (_ctx, outcome) => {
              log.push(`after ${s.name} ${outcome.ok ? 'ok' : 'fail'}`);
              if (s.afterThrows) throw new Error(`boom after ${s.name}`);
            };
    }
    return { extension, required: s.required };
  });
}

const plain = (name: string, extra: Partial<Spec> = {}): Spec => ({
  name,
  hasBefore: true,
  hasAfter: true,
  beforeThrows: false,
  afterThrows: false,
  required: false,
  ...extra,
});

describe('SkillCallChain', () => {
  it('runs before A, B, C then after C, B, A', async () => {
    const log: string[] = [];
    const chain = new SkillCallChain(
      build([plain('A'), plain('B'), plain('C')], log),
      context(),
      collectingSink(),
    );
    await chain.runBefore();
    await chain.runAfter(OK);
    expect(log).toEqual([
      'before A',
      'before B',
      'before C',
      'after C ok',
      'after B ok',
      'after A ok',
    ]);
  });

  it('keeps going when an optional before throws, and skips only that extension’s after', async () => {
    const log: string[] = [];
    const sink = collectingSink();
    const chain = new SkillCallChain(
      build([plain('A'), plain('B', { beforeThrows: true }), plain('C')], log),
      context(),
      sink,
    );
    await chain.runBefore();
    await chain.runAfter(OK);
    expect(log).toEqual(['before A', 'before B', 'before C', 'after C ok', 'after A ok']);
    expect(sink.failures.map((f) => [f.uri, f.hook, f.required])).toEqual([
      ['urn:B', 'before', false],
    ]);
  });

  it('stops at a required before that throws; after runs for the ones before it', async () => {
    const log: string[] = [];
    const chain = new SkillCallChain(
      build([plain('A'), plain('B', { beforeThrows: true, required: true }), plain('C')], log),
      context(),
      collectingSink(),
    );
    const error = await chain.runBefore().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isFleetgateError(error, 'FLEETGATE_HOOK_FAILED')).toBe(true);
    await chain.runAfter({ ok: false, error: error as FleetgateError });
    expect(log).toEqual(['before A', 'before B', 'after A fail']);
  });

  it('runs every after even when one throws, and reports a required after failure', async () => {
    const log: string[] = [];
    const sink = collectingSink();
    const chain = new SkillCallChain(
      build(
        [
          plain('A'),
          plain('B', { afterThrows: true, required: true }),
          plain('C', { afterThrows: true }),
        ],
        log,
      ),
      context(),
      sink,
    );
    await chain.runBefore();
    const failure = await chain.runAfter(OK);
    expect(log.slice(3)).toEqual(['after C ok', 'after B ok', 'after A ok']);
    expect(failure?.code).toBe('FLEETGATE_HOOK_FAILED');
    expect(sink.failures.map((f) => f.uri)).toEqual(['urn:C']);
  });

  it('runs the after hooks once, however often the terminal state is reported', async () => {
    const log: string[] = [];
    const chain = new SkillCallChain(build([plain('A')], log), context(), collectingSink());
    await chain.runBefore();
    await Promise.all([chain.runAfter(OK), chain.runAfter(OK)]);
    await chain.runAfter(OK);
    expect(log.filter((l) => l.startsWith('after'))).toEqual(['after A ok']);
  });

  it('lays stamps over the caller’s metadata and never lets a caller key replace a stamp', async () => {
    const stamping: RegisteredExtension = {
      required: false,
      extension: {
        uri: 'urn:s',
        description: 's',
        before: (ctx) => ctx.stamp('x-blast-radius', 'repo'),
      },
    };
    const ctx = context({ 'x-blast-radius': 'self', mine: 1 });
    await new SkillCallChain([stamping], ctx, collectingSink()).runBefore();
    expect(ctx.outboundMetadata()).toEqual({ 'x-blast-radius': 'repo', mine: 1 });
  });

  it('fails with FLEETGATE_STAMP_CONFLICT when two extensions claim one key, even if optional', async () => {
    const stamper = (uri: string): RegisteredExtension => ({
      required: false,
      extension: { uri, description: uri, before: (ctx) => ctx.stamp('x-k', uri) },
    });
    const ctx = context();
    const error = await new SkillCallChain(
      [stamper('urn:a'), stamper('urn:b')],
      ctx,
      collectingSink(),
    )
      .runBefore()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isFleetgateError(error, 'FLEETGATE_STAMP_CONFLICT')).toBe(true);
    expect(ctx.stamps).toEqual({ 'x-k': 'urn:a' });
  });

  it('lets a before hand typed state to its after', async () => {
    const KEY = createStateKey<{ n: number }>('test');
    let seen: number | undefined;
    const entry: RegisteredExtension = {
      required: false,
      extension: {
        uri: 'urn:state',
        description: 'state',
        before: (ctx) => ctx.state.set(KEY, { n: 42 }),
        after: (ctx) => {
          seen = ctx.state.get(KEY)?.n;
        },
      },
    };
    const chain = new SkillCallChain([entry], context(), collectingSink());
    await chain.runBefore();
    await chain.runAfter(OK);
    expect(seen).toBe(42);
  });

  it('keeps the order laws for any mix of hooks and failures', async () => {
    const spec = fc.record({
      hasBefore: fc.boolean(),
      hasAfter: fc.boolean(),
      beforeThrows: fc.boolean(),
      afterThrows: fc.boolean(),
      required: fc.boolean(),
      syncBefore: fc.boolean(),
      asyncAfter: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(spec, { maxLength: 7 }), async (raw) => {
        const specs = raw.map((s, i) => ({ ...s, name: String(i) }));
        const log: string[] = [];
        const sink = collectingSink();
        const chain = new SkillCallChain(build(specs, log), context(), sink);
        let failed = false;
        try {
          await chain.runBefore();
        } catch {
          failed = true;
        }
        const failure = await chain.runAfter(
          failed ? { ok: false, error: new FleetgateError('FLEETGATE_HOOK_FAILED') } : OK,
        );
        // Expected: befores in order up to the first required thrower; afters reversed over the
        // ones whose before completed (or that have no before).
        const expected: string[] = [];
        const completed: Spec[] = [];
        for (const s of specs) {
          if (s.hasBefore) expected.push(`before ${s.name}`);
          if (s.hasBefore && s.beforeThrows) {
            if (s.required) break;
            continue;
          }
          completed.push(s);
        }
        const afterFailures: Spec[] = [];
        for (const s of [...completed].reverse()) {
          if (s.hasAfter) expected.push(`after ${s.name} ${failed ? 'fail' : 'ok'}`);
          if (s.hasAfter && s.afterThrows) afterFailures.push(s);
        }
        expect(log).toEqual(expected);
        // The first required after failure fails the call; optional failures are all reported.
        const firstRequired = afterFailures.find((s) => s.required);
        expect(failure?.details).toEqual(
          firstRequired === undefined
            ? undefined
            : { uri: `urn:${firstRequired.name}`, hook: 'after' },
        );
        expect(sink.failures.filter((f) => f.hook === 'after').map((f) => f.uri)).toEqual(
          afterFailures.filter((s) => !s.required).map((s) => `urn:${s.name}`),
        );
      }),
      { numRuns: 300 },
    );
  });
});

describe('optional hook failures and a bus that does not answer', () => {
  it('does not hold the call while the failure is published (a bus outage)', async () => {
    const log: string[] = [];
    let publishes = 0;
    // A bus that takes the publish and never answers, as NATS does while it is down.
    const sink = createHookFailureLog({
      bus: {
        publish: () => {
          publishes += 1;
          return new Promise(() => undefined);
        },
      },
    });
    const chain = new SkillCallChain(
      build(
        [plain('A', { beforeThrows: true }), plain('B', { afterThrows: true, hasBefore: false })],
        log,
      ),
      context(),
      sink,
    );
    const within = <T>(work: Promise<T>): Promise<T | 'held'> =>
      Promise.race([work, new Promise<'held'>((r) => setTimeout(() => r('held'), 1000))]);
    expect(await within(chain.runBefore())).toBeUndefined();
    expect(await within(chain.runAfter(OK))).toBeUndefined();
    expect(sink.counts()).toEqual({ 'urn:A before': 1, 'urn:B after': 1 });
    expect(publishes).toBe(2);
  });
});

describe('createHookFailureLog', () => {
  it('counts failures and publishes each on system.error', async () => {
    const published: { topic: string; payload: unknown }[] = [];
    const log = createHookFailureLog({
      bus: {
        publish(topic, payload) {
          published.push({ topic, payload });
          return Promise.resolve({});
        },
      },
    });
    await log.report({
      uri: 'urn:x',
      hook: 'after',
      required: false,
      error: new Error('nope'),
      agent: 'a',
      skill: 's',
      correlationId: 'c',
    });
    expect(log.counts()).toEqual({ 'urn:x after': 1 });
    expect(log.total()).toBe(1);
    expect(published).toEqual([
      {
        topic: 'system.error',
        payload: expect.objectContaining({
          source: 'extension:urn:x',
          hook: 'after',
          agent: 'a',
          code: 'FLEETGATE_HOOK_ERROR',
        }),
      },
    ]);
  });

  it('counts a failed system.error publish instead of throwing', async () => {
    const seen: unknown[] = [];
    const log = createHookFailureLog({
      bus: { publish: () => Promise.reject(new Error('bus down')) },
      onPublishError: (e) => seen.push(e),
    });
    await log.report({
      uri: 'urn:x',
      hook: 'before',
      required: false,
      error: 'x',
      agent: 'a',
      skill: 's',
      correlationId: 'c',
    });
    expect(log.counts()).toEqual({ 'urn:x before': 1, 'system.error publish': 1 });
    expect(seen).toHaveLength(1);
  });
});
