import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../policy/index.js';
import { createStyle } from '../style.js';
import { renderApprovals } from './approvals.js';

const NOW = 1_800_000_000_000;

function approval(over: Partial<ApprovalRecord>): ApprovalRecord {
  return {
    id: 'ap-1',
    kind: 'approval',
    dispatchId: 'd-1',
    agent: 'deployer',
    skill: 'rollback',
    correlationId: 'c-1',
    fingerprint: 'f',
    policyVersion: 'p',
    mode: 'approval',
    radius: 'fleet',
    requestedBy: 'alice',
    requiredApprovals: 1,
    approvals: [],
    status: 'pending',
    decidedBy: null,
    decidedAt: null,
    reason: null,
    domains: ['deploy'],
    reasons: [],
    createdAt: NOW - 1000,
    expiresAt: NOW + 30_000,
    snoozedUntil: null,
    consumedAt: null,
    settledAt: null,
    taskId: null,
    contextId: null,
    question: null,
    answer: null,
    input: {},
    ...over,
  } as ApprovalRecord;
}

/** The table's data row, split on its column gaps. */
function cells(table: string): string[] {
  return table
    .trimEnd()
    .split('\n')
    .at(-1)!
    .trim()
    .split(/\s{2,}/);
}

describe('renderApprovals', () => {
  it('says a veto window’s time to go once, under LEFT, and names the mode alone', () => {
    const veto = cells(
      renderApprovals([approval({ kind: 'veto', mode: 'veto' })], createStyle(false), NOW),
    );
    expect(veto.slice(2, 6)).toEqual(['fleet', 'veto', '30s', '0/1']);
    const followUp = cells(
      renderApprovals([approval({ kind: 'follow-up', mode: 'veto' })], createStyle(false), NOW),
    );
    expect(followUp.slice(3, 5)).toEqual(['follow-up veto', '30s']);
  });
});
