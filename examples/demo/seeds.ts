/**
 * The world state the demo starts from. The bots start from the same numbers and report the
 * counts they own as they see them (`set`), so however many calls run, the views never show an
 * impossible value such as a negative number of failing checks.
 */
export const DEMO_SEEDS = {
  ci: { data: { failingChecks: 4, reruns: 0, lastRun: null } },
  board: { data: { untriaged: 12, triaged: 0, inProgress: 2, sprint: null } },
  deploy: { data: { version: '1.4.2', deploys: 0, rollbacks: 0 } },
} as const;
