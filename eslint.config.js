// @ts-check
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/*
 * House rules (docs/architecture.md): every folder of src/ is entered only through its index.ts
 * (a sub-folder's index.ts is a door too: `bus/jetstream/index.js`), imports run one way, and only
 * service/ and cli/ read the environment.
 */

/** The folders of src/. */
const FOLDERS = readdirSync(join(import.meta.dirname, 'src'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);

/**
 * Which other folders of src/ each folder may import, and why (house-rules.json: every room is
 * listed; test/house-rules.test.ts checks that it is what the imports draw, and writes the table of
 * docs/architecture.md from it).
 */
const HOUSE = JSON.parse(readFileSync(join(import.meta.dirname, 'house-rules.json'), 'utf8'));
/** @type {Record<string, string[]>} */
const MAY_IMPORT = Object.fromEntries(
  Object.entries(HOUSE.rooms).map(([room, rule]) => [room, rule.imports]),
);

/** The only packages a folder may import, where it is restricted (Node built-ins are allowed). */
const MAY_IMPORT_PACKAGES = {
  // An agent needs the A2A SDK's server side, never the gateway's client, store or bus.
  agent: ['@a2a-js/sdk', '@a2a-js/sdk/server'],
  // The exchange is Node's own HTTP: no package under it.
  net: [],
};

/** Negative lookahead: anything but a folder's (or sub-folder's) `index.js`. */
const DOOR = '(?!(?:[a-z-]+/)?index\\.js$)';
/**
 * Tests and benchmarks may also use a room's `internal.ts`: the door of what white-box suites
 * drive and the package does not export (the gateway's parts).
 */
const TEST_DOOR = '(?!(?:[a-z-]+/)?(?:index|internal)\\.js$)';

/** `../` repeated `n` times, as a regex. */
const up = (n) => '\\.\\./'.repeat(n);

/** no-restricted-imports patterns for a source file `depth` folders below src/ in `folder`. */
function sourcePatterns(folder, depth, { direction }) {
  const patterns = [
    {
      regex: `^${up(depth)}(?!${folder}/)[a-z-]+/${DOOR}`,
      message: 'Enter a folder of src/ only through its index.ts (house rules).',
    },
    {
      regex: `^${up(depth)}[a-z-]+\\.js$`,
      message: 'A folder of src/ never imports the package doors (src/index.ts, src/nats.ts).',
    },
  ];
  const allowed = MAY_IMPORT[folder];
  if (direction && allowed !== undefined) {
    const others = [folder, ...allowed].join('|');
    patterns.push({
      regex: `^${up(depth)}(?!(?:${others})/)[a-z-]+/`,
      message:
        allowed.length === 0
          ? `src/${folder} imports nothing from the rest of src/ (house rules).`
          : `src/${folder} may import only ${allowed.join(', ')} (house rules).`,
    });
  }
  const packages = MAY_IMPORT_PACKAGES[folder];
  if (direction && packages !== undefined) {
    const names = packages.map((p) => p.replace(/[/.+]/g, '\\$&')).join('|');
    const named = [...(allowed ?? []), ...packages];
    patterns.push({
      regex: packages.length === 0 ? '^(?!\\.|node:)' : `^(?!\\.|node:|(?:${names})$)`,
      message: `src/${folder} may import only ${named.length === 0 ? '' : `${named.join(', ')} and `}Node built-ins (house rules).`,
    });
  }
  return patterns;
}

const houseRules = FOLDERS.flatMap((folder) =>
  [1, 2, 3].flatMap((depth) => {
    const dir = `src/${folder}/${'*/'.repeat(depth - 1)}`;
    return [
      {
        files: [`${dir}*.ts`],
        rules: {
          'no-restricted-imports': [
            'error',
            { patterns: sourcePatterns(folder, depth, { direction: true }) },
          ],
        },
      },
      // Tests beside the code wire real neighbours (a bus, a store), through their doors.
      {
        files: [`${dir}*.test.ts`],
        rules: {
          'no-restricted-imports': [
            'error',
            { patterns: sourcePatterns(folder, depth, { direction: false }) },
          ],
        },
      },
    ];
  }),
);

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'dashboard/dist/**', 'bin/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['**/*.test.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  ...houseRules,
  // Functions a reader can hold in mind, in every room.
  {
    files: ['src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 120, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'examples/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(?:\\.\\./)+src/[a-z-]+/${TEST_DOOR}`,
              message: 'Tests and benchmarks enter src/ folders through their index.ts too.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/service/**', 'src/cli/**'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Only src/service and src/cli read the environment; take an option instead.',
        },
      ],
    },
  },
  { files: ['eslint.config.js'], ...tseslint.configs.disableTypeChecked },
);
