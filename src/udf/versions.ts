// run_udf's `version`: a version names the installed one when its parts are the first parts of
// it (`3`, `3.11` and `3.11.2` all name Python 3.11.2; `3.1` does not).

export function versionMatches(asked: string, installed: string): boolean {
  const a = asked.split('.');
  const b = installed.split('.');
  return a.length > 0 && a.length <= b.length && a.every((part, i) => part === b[i]);
}
