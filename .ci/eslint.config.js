// The linter (npm run lint; npm test runs it after the build). Type-aware typescript-eslint over
// src/, test/ and bench/: the recommended sets, plus the two habits issue 33 asked to hold by tool,
// promises nobody awaits or hands on (no-floating-promises) and catches that drop the error
// without a word (no-empty for `catch {}` blocks, xeo/no-silent-catch below for `.catch()`
// handlers). Rules the code base breaks on purpose are turned off here, each with the reason.
// The program the rules read types from is .ci/tsconfig.lint.json (tsconfig.json plus test/) and
// the map page's own tsconfig.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * A promise's `.catch()` whose handler drops the error (an empty body, or one that only gives back a
 * constant) must say why in a comment: inside the handler, on its line or on the line before it.
 * Empty `catch {}` blocks are no-empty's (a comment inside counts there as the reason).
 */
export const noSilentCatch = {
  meta: {
    type: 'problem',
    docs: { description: 'a .catch() that drops the error says in a comment why nothing is to be done' },
    schema: [],
    messages: { silent: 'This .catch() drops the error: handle it, log it, or say in a comment why nothing is to be done.' },
  },
  create(context) {
    const source = context.sourceCode;
    const drops = (fn) => {
      if (fn.type !== 'ArrowFunctionExpression' && fn.type !== 'FunctionExpression') return false;
      if (fn.params.length > 0) return false;
      const body = fn.body;
      if (body.type === 'BlockStatement') return body.body.length === 0;
      return body.type === 'Literal' || (body.type === 'Identifier' && body.name === 'undefined') || (body.type === 'UnaryExpression' && body.operator === 'void');
    };
    const explained = (fn) => {
      const first = fn.loc.start.line - 1;
      const last = fn.loc.end.line;
      return source.getAllComments().some((c) => c.loc.end.line >= first && c.loc.start.line <= last);
    };
    return {
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type !== 'MemberExpression' || callee.computed || callee.property.name !== 'catch') return;
        const fn = node.arguments[0];
        if (fn && drops(fn) && !explained(fn)) context.report({ node: fn, messageId: 'silent' });
      },
    };
  },
};

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'kernels/**', 'test/fixtures/**', 'src/tiles/map-page/bundle.mjs'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        project: ['.ci/tsconfig.lint.json', 'src/tiles/map-page/tsconfig.json'],
        tsconfigRootDir: root,
      },
    },
    plugins: { xeo: { rules: { 'no-silent-catch': noSilentCatch } } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // --- the habits held by tool ---
      '@typescript-eslint/no-floating-promises': 'error',
      // An empty block (a catch above all) must say in a comment why nothing is done there.
      'no-empty': ['error', { allowEmptyCatch: false }],
      'xeo/no-silent-catch': 'error',
      // --- what the code base does on purpose ---
      // Records, JSON from clients and process arguments are untyped at the edges and checked by
      // hand (ajv, isObject): `any` is how the checked values travel there, and tests read answers as any.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      // Non-null assertions mark what an earlier check established (a map entry just set, a regex group).
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Methods taken off their object here are Math's functions, WebAssembly exports and uWS's
      // listen, none of which reads `this`; the rule cannot tell them from class methods.
      '@typescript-eslint/unbound-method': 'off',
      // Async functions without an await implement promise-returning interfaces (a catalogue held in
      // memory, a ledger on SQLite): being async turns their throws into rejections, as callers expect.
      '@typescript-eslint/require-await': 'off',
      // A cancelled wait rejects with its AbortSignal's reason, which is typed any; that is the error.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // Worker threads' message handlers are async and answer every failure themselves (try/catch
      // around the run); the rule's other checks (conditions, spreads, attributes) stay on.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      // File names, netCDF names and UDF output are checked for control characters on purpose.
      'no-control-regex': 'off',
      // Values read from clients and documents become text on purpose (String(v), `${v}`, a Buffer
      // appended to a string is its UTF-8 text): an object among them reads '[object Object]' in a
      // message, which still tells the client the value is wrong.
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/restrict-plus-operands': 'off',
      // `unknown | Promise<unknown>` and `any | null` spell out for the reader what may come back.
      '@typescript-eslint/no-redundant-type-constituents': 'off',
      // Unused arguments keep the shape of callbacks and interfaces; `_` names a value only counted.
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none', caughtErrors: 'none', ignoreRestSiblings: true, varsIgnorePattern: '^_$' }],
    },
  },
);
