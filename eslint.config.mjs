// ESLint with type information (typescript-eslint's recommendedTypeChecked) for src/, tools/ and test/.
// Formatting is Prettier's job (eslint-config-prettier turns off the rules that would fight it).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      '**/dist/**',
      'packages/*/etc/**',
      'node_modules/**',
      'coverage/**',
      '**/*.js',
      '**/*.mjs',
      'tools/durable-host/obj/**',
      'tools/durable-host/bin/**',
      // StrykerJS's sandboxes and its reports (npm run mutate, docs/mutation.md).
      '.stryker-tmp*/**',
      'reports/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Unused names are a compile error already (noUnusedLocals/Parameters); `_` marks deliberate ones.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      // A promise nobody awaits loses its error: every one is awaited, returned or voided on purpose.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      eqeqeq: ['error', 'always'],
      // Async implementations of async interfaces (fakes, adapters) need no await to be right.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Tests use jest's loose matchers (expect.any, asymmetric matchers) and cast SDK shapes freely.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/unbound-method': 'off',
      // Tests print and compare what they get, whatever it is; and load modules with require() in isolation.
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/no-require-imports': 'off',
      'no-control-regex': 'off',
    },
  },
  prettier,
);
