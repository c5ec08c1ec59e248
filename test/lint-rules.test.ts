// The linter's rule of our own (.ci/eslint.config.js): a .catch() handler that drops the error must
// say why in a comment. Checked with ESLint's RuleTester on code that must pass and code that must not.
import { describe, it } from 'vitest';
import { RuleTester } from 'eslint';
import { noSilentCatch } from '../.ci/eslint.config.js';

RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

const tester = new RuleTester({ languageOptions: { ecmaVersion: 2022, sourceType: 'module' } });
const silent = [{ messageId: 'silent' }];

tester.run('xeo/no-silent-catch', noSilentCatch, {
  valid: [
    // the error is used
    'p.catch((e) => log.warn("failed", e));',
    'p.catch(() => log.warn("failed"));',
    // a reason inside the handler, on its line, or on the line before
    'p.catch(() => {\n  // nothing to undo: the file was never made\n});',
    'p.catch(() => {}); // the caller gets the error from q',
    '// closing: a broken connection has nothing left to end\nawait c.end().catch(() => {});',
    // not a promise's catch
    'try { f(); } catch (e) { g(e); }',
    'o["catch"](() => {});',
  ],
  invalid: [
    { code: 'p.catch(() => {});', errors: silent },
    { code: 'const x = await p.catch(() => null);', errors: silent },
    { code: 'p.catch(() => undefined);', errors: silent },
    { code: 'p.catch(function () {});', errors: silent },
    { code: 'p.catch(() => void 0);', errors: silent },
    // a comment two lines up says nothing about this one
    { code: '// about something else\nf();\np.catch(() => {});', errors: silent },
  ],
});
