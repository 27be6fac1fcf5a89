// Typed linting: no-floating-promises needs type information, so the project service is on.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['node_modules/', '**/dist/', 'data/', 'coverage/', 'test/fixtures/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', '.mocharc.cjs', 'bin/*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Temporal workflows run in a deterministic sandbox: Node built-ins (fs, crypto, timers …) are banned there.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Node built-ins are not deterministic; workflows may import core/ and activity types only.',
          })),
        },
      ],
    },
  },
  {
    // core/ is pure: no environment reads and no I/O modules.
    files: ['core/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Only bin/ reads process.env.' },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: [
            'fs',
            'node:fs',
            'fs/promises',
            'node:fs/promises',
            'net',
            'node:net',
            'http',
            'node:http',
            'child_process',
            'node:child_process',
          ].map((name) => ({ name, message: 'core/ does no I/O.' })),
        },
      ],
    },
  },
);
