// Where a UDF's code comes from: run_udf's `udf` is the code itself (it has a line break), an
// http(s) URL (fetched on the user's behalf through the outbound rules, without any credentials,
// bounded and cached briefly), or a path in the user's files (the run's own reader of them, over
// the engine thread's bridge to the file store, as load_uploaded_files reads them). A path
// outside the workspace, or a file that is not there, is run_udf's FileNotFound.
import { ApiError, ProcessException } from '../core/errors.js';
import type { UserFiles } from '../core/run-context.js';
import { httpRequest, RemoteError } from '../data/http-client.js';
import { OutboundRefused, type OutboundPolicy } from '../data/outbound.js';

/** Bytes of UDF code read from a URL or file at most. */
export const MAX_CODE_BYTES = 1024 * 1024;
/** How long a fetched URL's code is reused. */
const URL_TTL_MS = 5 * 60 * 1000;

export type SourceKind = 'code' | 'url' | 'path';

export function sourceKind(udf: string): SourceKind {
  if (/\r|\n/.test(udf)) return 'code';
  if (/^https?:\/\//i.test(udf)) return 'url';
  return 'path';
}

const invalid = (reason: string) => new ApiError('ProcessParameterInvalid', { process: 'run_udf', parameter: 'udf', reason });

const fetched = new Map<string, { at: number; code: Promise<string> }>();

/** The code behind a URL (outbound rules, no credentials, 1 MiB at most), reused for 5 minutes. */
export function fetchUdfUrl(url: string, policy: OutboundPolicy, signal?: AbortSignal): Promise<string> {
  const hit = fetched.get(url);
  if (hit && Date.now() - hit.at < URL_TTL_MS) return hit.code;
  const code = (async () => {
    try {
      const res = await httpRequest(url, { policy, maxBytes: MAX_CODE_BYTES, signal, headers: { accept: 'text/plain, */*' } });
      if (res.status !== 200) throw invalid(`${url} answered HTTP ${res.status}`);
      return res.body.toString('utf8');
    } catch (e) {
      if (e instanceof OutboundRefused) throw invalid(e.message);
      if (e instanceof RemoteError) throw invalid(e.message);
      throw e;
    }
  })();
  if (fetched.size >= 64) fetched.delete(fetched.keys().next().value!);
  fetched.set(url, { at: Date.now(), code });
  code.catch(() => fetched.delete(url));
  return code;
}

/** A workspace path as run_udf defines it: `/a/b.py`, `a/b.py` and `./a/b.py` are the same file. */
export function workspacePath(p: string): string {
  return p.replace(/^(\.?\/)+/, '');
}

/** A file of the run's user as text; run_udf's FileNotFound when it is not there or not theirs. */
async function readFile(files: UserFiles | undefined, path: string): Promise<string> {
  if (!files) throw new ProcessException('FileNotFound', `UDF files cannot be read in this process ('${path}')`);
  const missing = () => new ProcessException('FileNotFound', `there is no file '${path}' in your workspace`);
  try {
    // One request: the read itself refuses a missing file, a folder and a file over the bound.
    return Buffer.from(await files.read(path, MAX_CODE_BYTES)).toString('utf8');
  } catch (e) {
    if (e instanceof ApiError && ['FileNotFound', 'FilePathInvalid', 'FileOperationUnsupported'].includes(e.code)) throw missing();
    if (e instanceof ApiError && e.code === 'FileSizeExceeded') throw invalid(`the file '${path}' is larger than ${MAX_CODE_BYTES} bytes`);
    throw e;
  }
}

/** The code of a run_udf `udf` argument; a URL is read under `policy`, a path from `files`, the run's user's files. */
export async function udfCode(udf: unknown, files: UserFiles | undefined, policy: OutboundPolicy, signal?: AbortSignal): Promise<string> {
  if (typeof udf !== 'string' || udf.length === 0) throw invalid('the UDF is given as its code, a URL or a path in your files');
  const kind = sourceKind(udf);
  if (kind === 'code') return udf;
  if (kind === 'url') return fetchUdfUrl(udf, policy, signal);
  return readFile(files, workspacePath(udf));
}
